// The mysql-backup operator through Kubernetes: a MySQLBackup becomes a
// Completed backup in the bucket, a MySQLRestore (from the backup or from a
// raw S3 path) brings the data back identical, failures end Failed with a
// reason a user can act on, an interrupted backup is marked so and its partial
// upload (only its own) removed, and deletionPolicy Delete removes the stored
// objects. No credential appears in logs, events or status.
import { AbortMultipartUploadCommand, CreateMultipartUploadCommand, ListMultipartUploadsCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";
import { Manager, builtin, captureLogs, findCondition, type CapturedLogs, type KubeObject, type LeaderElectionConfig } from "@stateward/core";
import { MySQLInstanceKind } from "@stateward/mysql";
import { databaseUserOperator } from "@stateward/operator-database-user";
import { MySQLBackupKind, MySQLRestoreKind, createMySQLBackupOperator, type MySQLBackup, type MySQLRestore } from "@stateward/operator-mysql-backup";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { s3Client } from "../../harness/index.ts";
import { eventsAbout } from "../../support/events.ts";
import { deleteNamespace, freshNamespace, kubeConfigFrom, testClient, waitGone } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import { createTortureDatabase, fingerprint, id } from "./torture.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const BK = MySQLBackupKind.resource;
const RS = MySQLRestoreKind.resource;
const suffix = randomBytes(3).toString("hex");
const db = `bkop_${suffix}`;
const root = { host: env.mysql.host, port: env.mysql.port, user: env.mysql.user, password: env.mysql.password };
let ns: string;
let manager: Manager;
let logs: CapturedLogs;
let s3: S3Client;

const storage = (extra: Record<string, unknown> = {}) => ({
  s3: { bucket: env.s3.bucket, prefix: `operator-${suffix}`, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" }, ...extra },
});

function backup(name: string, spec: Partial<MySQLBackup["spec"]> = {}): MySQLBackup {
  return { apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name, namespace: ns }, spec: { instanceRef: { name: "db" }, storage: storage(), databases: [db], ...spec } };
}

async function finished<T extends KubeObject & { status?: { phase?: string } }>(rt: typeof BK, name: string, timeoutMs = 90_000): Promise<T> {
  return waitFor(`${rt.kind} ${name} finished`, async () => {
    const o = await client.get<T>(rt, ns, name);
    return o.status?.phase === "Completed" || o.status?.phase === "Failed" ? o : undefined;
  }, timeoutMs, 250);
}

async function keysUnder(prefix: string): Promise<string[]> {
  const out = await s3.send(new ListObjectsV2Command({ Bucket: env.s3.bucket, Prefix: prefix }));
  return (out.Contents ?? []).map((o) => o.Key ?? "");
}

async function startManager(leaderElection?: LeaderElectionConfig): Promise<Manager> {
  logs = captureLogs();
  const m = new Manager({ kubeConfig: kubeConfigFrom(env.kubeconfig), namespaces: [ns], logger: logs.logger, gracefulShutdownMs: 10_000, leaderElection })
    .load(databaseUserOperator, createMySQLBackupOperator({ maxConcurrentOperations: 2 }));
  await m.start();
  return m;
}

beforeAll(async () => {
  s3 = s3Client(env.s3);
  ns = await freshNamespace(client, "backup");
  // The manager installs the CRDs, so it starts before the objects are created.
  manager = await startManager();
  const conn = await mysql.createConnection({ ...root, charset: "utf8mb4", multipleStatements: false });
  await createTortureDatabase(conn, db);
  await conn.end();
  await client.create(builtin.secret, { metadata: { name: "mysql-admin", namespace: ns }, stringData: { username: root.user, password: root.password } } as KubeObject);
  await client.create(builtin.secret, {
    metadata: { name: "s3-creds", namespace: ns },
    stringData: { AWS_ACCESS_KEY_ID: env.s3.accessKeyId, AWS_SECRET_ACCESS_KEY: env.s3.secretAccessKey },
  } as KubeObject);
  await client.create(builtin.secret, { metadata: { name: "s3-wrong", namespace: ns }, stringData: { AWS_ACCESS_KEY_ID: env.s3.accessKeyId, AWS_SECRET_ACCESS_KEY: "not-the-key" } } as KubeObject);
  await client.create(MySQLInstanceKind.resource, {
    apiVersion: MySQLInstanceKind.apiVersion, kind: MySQLInstanceKind.kind, metadata: { name: "db", namespace: ns },
    spec: { host: root.host, port: root.port, adminSecretRef: { name: "mysql-admin" } },
  } as KubeObject);
}, 180_000);

afterAll(async () => {
  await manager?.stop();
  const conn = await mysql.createConnection(root);
  await conn.query(`DROP DATABASE IF EXISTS ${id(db)}`);
  await conn.end();
  s3?.destroy();
  await deleteNamespace(client, ns);
});

describe("MySQLBackup and MySQLRestore", () => {
  it("backs up to the bucket, and a restore from the backup gives identical tables and definitions", async () => {
    const conn = await mysql.createConnection({ ...root, charset: "utf8mb4" });
    const before = await fingerprint(conn, db);
    await client.create(BK, backup("full"));
    const done = await finished<MySQLBackup>(BK, "full");
    expect(done.status?.phase).toBe("Completed");
    expect(done.status?.location).toBe(`s3://${env.s3.bucket}/operator-${suffix}/${ns}/full/`);
    expect(done.status?.objects).toBeGreaterThan(1);
    expect(done.status?.compressedBytes).toBeGreaterThan(0);
    expect(done.status?.startedBy).toBe(manager.identity);
    expect(findCondition(done.status?.conditions, "Ready")).toMatchObject({ status: "True", reason: "Completed" });
    expect(await keysUnder(`operator-${suffix}/${ns}/full/`)).toContain(`operator-${suffix}/${ns}/full/manifest.json`);

    await conn.query(`DROP DATABASE ${id(db)}`);
    await client.create(RS, { apiVersion: MySQLRestoreKind.apiVersion, kind: MySQLRestoreKind.kind, metadata: { name: "from-backup", namespace: ns }, spec: { instanceRef: { name: "db" }, source: { backupRef: { name: "full" } } } });
    const restored = await finished<MySQLRestore>(RS, "from-backup");
    expect(restored.status?.phase).toBe("Completed");
    expect(await fingerprint(conn, db)).toEqual(before);

    // The same folder, named as a raw S3 path.
    await conn.query(`DROP DATABASE ${id(db)}`);
    await client.create(RS, {
      apiVersion: MySQLRestoreKind.apiVersion, kind: MySQLRestoreKind.kind, metadata: { name: "from-path", namespace: ns },
      spec: { instanceRef: { name: "db" }, source: { s3: { ...storage().s3, path: `operator-${suffix}/${ns}/full` } } },
    });
    expect((await finished<MySQLRestore>(RS, "from-path")).status?.phase).toBe("Completed");
    expect(await fingerprint(conn, db)).toEqual(before);
    await conn.end();

    expect((await eventsAbout(client, ns, { name: "full" })).map((e) => e.reason)).toEqual(expect.arrayContaining(["Started", "Completed"]));
  });

  it("starts a restore created before its backup within seconds of the backup completing (woken by the backup, not by a poll)", async () => {
    // The restore comes first: it waits, Pending, for a backup that does not exist yet.
    await client.create(RS, { apiVersion: MySQLRestoreKind.apiVersion, kind: MySQLRestoreKind.kind, metadata: { name: "before-backup", namespace: ns }, spec: { instanceRef: { name: "db" }, source: { backupRef: { name: "later" } } } });
    await waitFor("the restore waiting for its backup", async () => {
      const r = await client.get<MySQLRestore>(RS, ns, "before-backup");
      return findCondition(r.status?.conditions, "Ready")?.reason === "BackupNotFound" ? r : undefined;
    });
    await client.create(BK, backup("later"));
    const done = await finished<MySQLBackup>(BK, "later");
    expect(done.status?.phase).toBe("Completed");
    // Polled every 15 s, the restore would start about 15 s after it first waited, whatever the backup does.
    const started = await waitFor("the restore started", async () => {
      const r = await client.get<MySQLRestore>(RS, ns, "before-backup");
      return r.status?.phase === "Pending" || r.status?.phase === undefined ? undefined : r;
    }, 5_000, 100);
    expect(started.status?.source).toBe(done.status?.location);
    expect((await finished<MySQLRestore>(RS, "before-backup")).status?.phase).toBe("Completed");
  });

  it("fails a backup with wrong S3 credentials with a reason to act on, leaving nothing behind", async () => {
    await client.create(BK, backup("wrong-key", { storage: storage({ credentialsSecretRef: { name: "s3-wrong" } }) }));
    const failed = await finished<MySQLBackup>(BK, "wrong-key");
    expect(failed.status?.phase).toBe("Failed");
    const ready = findCondition(failed.status?.conditions, "Ready");
    expect(ready?.reason).toBe("StorageAccessDenied");
    expect(ready?.message).toMatch(/Backup failed: .*(denied|signature|credentials)/i);
    expect(await keysUnder(`operator-${suffix}/${ns}/wrong-key/`)).toEqual([]);
    // A restore from it fails at once, saying why, instead of waiting Pending for a backup that never runs again.
    await client.create(RS, { apiVersion: MySQLRestoreKind.apiVersion, kind: MySQLRestoreKind.kind, metadata: { name: "from-failed", namespace: ns }, spec: { instanceRef: { name: "db" }, source: { backupRef: { name: "wrong-key" } } } });
    const refused = await finished<MySQLRestore>(RS, "from-failed");
    expect(refused.status?.phase).toBe("Failed");
    expect(findCondition(refused.status?.conditions, "Ready")).toMatchObject({
      reason: "BackupFailed",
      message: "MySQLBackup wrong-key failed (StorageAccessDenied) and does not run again: restore from another backup",
    });
    const uploads = await s3.send(new ListMultipartUploadsCommand({ Bucket: env.s3.bucket, Prefix: `operator-${suffix}/${ns}/wrong-key/` }));
    expect(uploads.Uploads ?? []).toEqual([]);
  });

  it("waits with a clear reason when the S3 Secret is missing, and runs once it exists", async () => {
    await client.create(BK, backup("late-secret", { storage: storage({ credentialsSecretRef: { name: "s3-later" } }) }));
    const pending = await waitFor("Pending with SecretNotFound", async () => {
      const b = await client.get<MySQLBackup>(BK, ns, "late-secret");
      return findCondition(b.status?.conditions, "Ready")?.reason === "SecretNotFound" ? b : undefined;
    });
    expect(pending.status?.phase).toBe("Pending");
    expect(findCondition(pending.status?.conditions, "Ready")?.message).toMatch(/s3-later/);
    await client.create(builtin.secret, { metadata: { name: "s3-later", namespace: ns }, stringData: { AWS_ACCESS_KEY_ID: env.s3.accessKeyId, AWS_SECRET_ACCESS_KEY: env.s3.secretAccessKey } } as KubeObject);
    expect((await finished<MySQLBackup>(BK, "late-secret", 120_000)).status?.phase).toBe("Completed");
  });

  /**
   * The state a SIGKILLed manager leaves: phase Running, started by a process that is gone. (The backup
   * points at a missing instance so that this manager does not start it first.) Resolves to the
   * MySQLBackup once the manager marked it Interrupted.
   */
  async function leftRunning(name: string, spec: Partial<MySQLBackup["spec"]> = {}): Promise<MySQLBackup> {
    await client.create(BK, backup(name, { instanceRef: { name: "not-yet" }, ...spec }));
    await waitFor("Pending", async () => ((await client.get<MySQLBackup>(BK, ns, name)).status?.phase === "Pending" ? true : undefined));
    await client.patch(BK, ns, name, { status: { phase: "Running", startedBy: "manager-that-died_0000", startTime: new Date().toISOString().replace(/\.\d{3}Z$/, "Z") } }, "merge", "status");
    return waitFor("Interrupted", async () => {
      const b = await client.get<MySQLBackup>(BK, ns, name);
      return findCondition(b.status?.conditions, "Ready")?.reason === "Interrupted" ? b : undefined;
    });
  }

  const startUpload = async (key: string) => (await s3.send(new CreateMultipartUploadCommand({ Bucket: env.s3.bucket, Key: key }))).UploadId ?? "";
  const uploadsUnder = async (prefix: string) => ((await s3.send(new ListMultipartUploadsCommand({ Bucket: env.s3.bucket, Prefix: prefix }))).Uploads ?? []).map((u) => u.Key);

  /** What a run `startedBy` a manager that stopped leaves (one object stored, phase Running), then the MySQLBackup deleted; its folder. */
  async function deletedWhileRunning(name: string, startedBy: string): Promise<string> {
    const folder = `operator-${suffix}/${ns}/${name}/`;
    await s3.send(new PutObjectCommand({ Bucket: env.s3.bucket, Key: `${folder}0001-${db}/schema.sql.gz`, Body: "partial" }));
    await client.patch(BK, ns, name, { status: { phase: "Running", startedBy, startTime: new Date().toISOString().replace(/\.\d{3}Z$/, "Z") } }, "merge", "status");
    await client.delete(BK, ns, name);
    return folder;
  }

  it("marks a backup left Running by a manager that died as Failed (Interrupted), never Running forever, and removes only its own partial upload", async () => {
    // What the killed run left in its folder, and the upload of another backup running now, whose name begins with this one's.
    const own = `operator-${suffix}/${ns}/killed/`;
    const other = `operator-${suffix}/${ns}/killed-hourly/`;
    await s3.send(new PutObjectCommand({ Bucket: env.s3.bucket, Key: `${own}0001-${db}/schema.sql.gz`, Body: "partial" }));
    await startUpload(`${own}0001-${db}/data/0001-t.0001.sql.gz`);
    const running = await startUpload(`${other}0001-${db}/data/0001-t.0001.sql.gz`);
    try {
      const failed = await leftRunning("killed");
      expect(await uploadsUnder(other)).toEqual([`${other}0001-${db}/data/0001-t.0001.sql.gz`]);
      expect(await keysUnder(own)).toEqual([]);
      expect(await uploadsUnder(own)).toEqual([]);
      expect(failed.status?.phase).toBe("Failed");
      expect(findCondition(failed.status?.conditions, "Ready")?.message).toMatch(/manager-that-died_0000.*stopped before it finished\. Its partial upload was removed \(1 objects deleted, 1 incomplete/);
    } finally {
      await s3.send(new AbortMultipartUploadCommand({ Bucket: env.s3.bucket, Key: `${other}0001-${db}/data/0001-t.0001.sql.gz`, UploadId: running })).catch(() => undefined);
    }
  });

  it("says where a partial upload it could not clean up is, without claiming it holds no manifest", async () => {
    // Its credentials are gone: the folder cannot even be looked at.
    const failed = await leftRunning("no-creds", { storage: storage({ credentialsSecretRef: { name: "s3-gone" } }) });
    const message = findCondition(failed.status?.conditions, "Ready")?.message;
    expect(message).toContain(`What it stored in s3://${env.s3.bucket}/operator-${suffix}/${ns}/no-creds/ could not be looked at or removed (`);
    expect(message).toContain("s3-gone");
    expect(message).not.toMatch(/no manifest/);
  });

  it("leaves a complete backup whole when a run of the same name is interrupted", async () => {
    // A retained backup; its MySQLBackup deleted, then created again (it would fail with BackupExists) and left Running.
    await client.create(BK, backup("whole"));
    expect((await finished<MySQLBackup>(BK, "whole")).status?.phase).toBe("Completed");
    const folder = `operator-${suffix}/${ns}/whole/`;
    const stored = await keysUnder(folder);
    expect(stored).toContain(`${folder}manifest.json`);
    await client.delete(BK, ns, "whole");
    await waitGone(client, BK, ns, "whole");

    const failed = await leftRunning("whole");
    expect(await keysUnder(folder)).toEqual(stored);
    expect(findCondition(failed.status?.conditions, "Ready")?.message).toMatch(/holds a complete backup .*nothing in it was deleted/);
  });

  // Retain too: its partial upload is not a backup to keep, and without a finalizer the MySQLBackup would be gone before
  // any manager could remove it.
  it.each([
    ["Delete", "gone-running"],
    ["Retain", "gone-running-kept"],
  ] as const)("removes what a backup (deletionPolicy %s) left Running by a manager that died had stored, when it is deleted before any manager marked it Interrupted", async (deletionPolicy, name) => {
    await client.create(BK, backup(name, { instanceRef: { name: "not-yet" }, deletionPolicy }));
    // Pending is written after the finalizer is added.
    await waitFor("Pending", async () => ((await client.get<MySQLBackup>(BK, ns, name)).status?.phase === "Pending" ? true : undefined));
    // No manager runs while the run that died is found Running and the MySQLBackup deleted.
    await manager.stop();
    const folder = await deletedWhileRunning(name, "manager-that-died_0001");
    manager = await startManager();
    await waitGone(client, BK, ns, name);
    expect(await keysUnder(folder)).toEqual([]);
    expect((await eventsAbout(client, ns, { name })).find((e) => e.reason === "Deleted")?.note).toMatch(/manager that is gone was running it\. Its partial upload was removed \(1 objects deleted/);
  });

  it("removes what a deleted backup had stored only once the manager that ran it has certainly stopped, not when the new leader starts", async () => {
    // The run's manager held the Lease and was paused (a stopped process, a frozen VM): it still believes it
    // leads, and once resumed it may write in-flight objects before its own timers tell it to stop. The
    // new leader waits a lease duration after taking over (as for marking a run Interrupted) before
    // deleting anything; deleting at once would leave what the old leader writes after it.
    const name = "paused-leader";
    const LEASE_MS = 6_000;
    await client.create(BK, backup(name, { instanceRef: { name: "not-yet" } }));
    await waitFor("Pending", async () => ((await client.get<MySQLBackup>(BK, ns, name)).status?.phase === "Pending" ? true : undefined));
    await manager.stop();
    const old = "manager-paused_0002";
    const stamp = new Date().toISOString().replace(/(\.\d{3})\d*Z$/, "$1000Z");
    await client.create(builtin.lease, {
      apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name: "stateward-manager", namespace: ns },
      spec: { holderIdentity: old, leaseDurationSeconds: LEASE_MS / 1000, acquireTime: stamp, renewTime: stamp },
    } as KubeObject);
    const folder = await deletedWhileRunning(name, old);

    manager = await startManager({ namespace: ns, leaseDurationMs: LEASE_MS, renewDeadlineMs: 4_000, retryPeriodMs: 250 });
    try {
      const leader = async () => (await client.get<KubeObject & { spec?: { holderIdentity?: string } }>(builtin.lease, ns, "stateward-manager")).spec?.holderIdentity;
      await waitFor("the new manager leading", async () => ((await leader()) === manager.identity ? true : undefined), 30_000, 100);
      const tookOverAt = Date.now();
      // The paused manager resumes: an object it had in flight lands (as soon as the deleted MySQLBackup is
      // gone, or a quarter of a lease duration after the takeover).
      await waitFor("the MySQLBackup gone, or a quarter of a lease duration", async () => {
        if (Date.now() >= tookOverAt + LEASE_MS / 4) return true;
        return (await client.get<MySQLBackup>(BK, ns, name).then(() => false, () => true)) ? true : undefined;
      }, 30_000, 50);
      await s3.send(new PutObjectCommand({ Bucket: env.s3.bucket, Key: `${folder}0001-${db}/data/0001-t.0001.sql.gz`, Body: "late" }));
      await waitGone(client, BK, ns, name);
      expect(await keysUnder(folder)).toEqual([]);
      expect(logs.text()).toMatch(/waiting until that manager has certainly stopped/);
    } finally {
      await manager.stop();
      await client.delete(builtin.lease, ns, "stateward-manager").catch(() => undefined);
      manager = await startManager();
    }
  });

  it("deletes the folder of a completed backup whose deletionPolicy was changed to Delete afterwards", async () => {
    await client.create(BK, backup("kept-then-not"));
    expect((await finished<MySQLBackup>(BK, "kept-then-not")).status?.phase).toBe("Completed");
    const folder = `operator-${suffix}/${ns}/kept-then-not/`;
    expect(await keysUnder(folder)).toContain(`${folder}manifest.json`);
    await waitFor("the finished Retain backup without the finalizer", async () => ((await client.get<MySQLBackup>(BK, ns, "kept-then-not")).metadata.finalizers ?? []).length === 0 ? true : undefined);
    await client.patch(BK, ns, "kept-then-not", { spec: { deletionPolicy: "Delete" } });
    await waitFor("the finalizer that deletes the folder", async () => ((await client.get<MySQLBackup>(BK, ns, "kept-then-not")).metadata.finalizers ?? []).length > 0 ? true : undefined);
    await client.delete(BK, ns, "kept-then-not");
    await waitGone(client, BK, ns, "kept-then-not");
    expect(await keysUnder(folder)).toEqual([]);
  });

  it("with deletionPolicy Delete removes the stored objects when the MySQLBackup is deleted", async () => {
    await client.create(BK, backup("to-delete", { deletionPolicy: "Delete" }));
    expect((await finished<MySQLBackup>(BK, "to-delete")).status?.phase).toBe("Completed");
    const prefix = `operator-${suffix}/${ns}/to-delete/`;
    expect((await keysUnder(prefix)).length).toBeGreaterThan(1);
    await client.delete(BK, ns, "to-delete");
    await waitGone(client, BK, ns, "to-delete");
    expect(await keysUnder(prefix)).toEqual([]);
    // Retain (the default) keeps them.
    await client.delete(BK, ns, "full");
    await waitGone(client, BK, ns, "full");
    expect(await keysUnder(`operator-${suffix}/${ns}/full/`)).toContain(`operator-${suffix}/${ns}/full/manifest.json`);
  });

  it("never shows a credential in logs, events or status", async () => {
    const everything = [
      logs.text(),
      JSON.stringify((await client.list(builtin.event, { namespace: ns })).items),
      JSON.stringify((await client.list(BK, { namespace: ns })).items.map((b) => (b as MySQLBackup).status)),
      JSON.stringify((await client.list(RS, { namespace: ns })).items.map((r) => (r as MySQLRestore).status)),
    ].join("\n");
    expect(everything.length).toBeGreaterThan(1000);
    expect(everything).not.toContain(env.s3.secretAccessKey);
    expect(everything).not.toContain("not-the-key");
  });
});
