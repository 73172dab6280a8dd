// Deleting a MySQLBackup (deletionPolicy Delete) removes only what it wrote,
// and never hangs: a run that failed because another backup was already at
// its location leaves that backup alone; a namespace deleted together with
// its S3 Secret goes away, with a Warning saying what was left in the
// bucket; where a backup was written cannot be edited afterwards. Deleting a
// backup while it runs stops it, whatever its deletionPolicy.
import { DeleteObjectsCommand, ListMultipartUploadsCommand, ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";
import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";
import { Manager, builtin, captureLogs, findCondition, isNotFound, type KubeObject } from "@stateward/core";
import { MySQLInstanceKind } from "@stateward/mysql";
import { databaseUserOperator } from "@stateward/operator-database-user";
import { MySQLBackupKind, createMySQLBackupOperator, type MySQLBackup } from "@stateward/operator-mysql-backup";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { s3Client, TcpProxy } from "../../harness/index.ts";
import { deleteNamespace, freshNamespace, kubeConfigFrom, testClient, waitGone } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import { id } from "./torture.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const BK = MySQLBackupKind.resource;
const suffix = randomBytes(3).toString("hex");
const db = `bkdel_${suffix}`;
/** 16 MiB of incompressible rows: through the throttled proxy below, a backup of it runs for many seconds. */
const big = `bkdel_big_${suffix}`;
const prefix = `deletion-${suffix}`;
const root = { host: env.mysql.host, port: env.mysql.port, user: env.mysql.user, password: env.mysql.password };
let ns: string;
let doomedNs: string;
let manager: Manager;
let s3: S3Client;

type Event = KubeObject & { reason?: string; type?: string; note?: string; regarding?: { kind?: string; name?: string } };

function backup(namespace: string, name: string, spec: Partial<MySQLBackup["spec"]> = {}): MySQLBackup {
  return {
    apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name, namespace },
    spec: {
      instanceRef: { name: "db" }, databases: [db],
      storage: { s3: { bucket: env.s3.bucket, prefix, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } },
      ...spec,
    },
  };
}

async function finished(namespace: string, name: string): Promise<MySQLBackup> {
  return waitFor(`MySQLBackup ${namespace}/${name} finished`, async () => {
    const b = await client.get<MySQLBackup>(BK, namespace, name);
    return b.status?.phase === "Completed" || b.status?.phase === "Failed" ? b : undefined;
  }, 90_000, 250);
}

async function keysUnder(folder: string): Promise<string[]> {
  const out = await s3.send(new ListObjectsV2Command({ Bucket: env.s3.bucket, Prefix: folder }));
  return (out.Contents ?? []).map((o) => o.Key ?? "");
}

async function prepareNamespace(namespace: string): Promise<void> {
  await client.create(builtin.secret, { metadata: { name: "mysql-admin", namespace }, stringData: { username: root.user, password: root.password } } as KubeObject);
  await client.create(builtin.secret, {
    metadata: { name: "s3-creds", namespace },
    stringData: { AWS_ACCESS_KEY_ID: env.s3.accessKeyId, AWS_SECRET_ACCESS_KEY: env.s3.secretAccessKey },
  } as KubeObject);
  await client.create(MySQLInstanceKind.resource, {
    apiVersion: MySQLInstanceKind.apiVersion, kind: MySQLInstanceKind.kind, metadata: { name: "db", namespace },
    spec: { host: root.host, port: root.port, adminSecretRef: { name: "mysql-admin" } },
  } as KubeObject);
}

beforeAll(async () => {
  s3 = s3Client(env.s3);
  ns = await freshNamespace(client, "bkdel");
  doomedNs = await freshNamespace(client, "bkdel-doomed");
  manager = new Manager({ kubeConfig: kubeConfigFrom(env.kubeconfig), namespaces: [ns, doomedNs], logger: captureLogs().logger, gracefulShutdownMs: 10_000 })
    .load(databaseUserOperator, createMySQLBackupOperator());
  await manager.start();
  const conn = await mysql.createConnection(root);
  await conn.query(`CREATE DATABASE ${id(db)}`);
  await conn.query(`CREATE TABLE ${id(db)}.t (id INT PRIMARY KEY, v VARCHAR(20))`);
  await conn.query(`INSERT INTO ${id(db)}.t VALUES (1, 'one'), (2, 'two')`);
  await conn.query(`CREATE DATABASE ${id(big)}`);
  await conn.query(`CREATE TABLE ${id(big)}.blobs (id INT PRIMARY KEY, b MEDIUMBLOB) ENGINE=InnoDB`);
  for (let i = 0; i < 32; i += 8) {
    await conn.query(`INSERT INTO ${id(big)}.blobs VALUES ?`, [Array.from({ length: 8 }, (_, j) => [i + j + 1, randomBytes(512 * 1024)])]);
  }
  await conn.end();
  await prepareNamespace(ns);
  await prepareNamespace(doomedNs);
}, 120_000);

afterAll(async () => {
  await manager?.stop();
  const conn = await mysql.createConnection(root);
  await conn.query(`DROP DATABASE IF EXISTS ${id(db)}`);
  await conn.query(`DROP DATABASE IF EXISTS ${id(big)}`);
  await conn.end();
  const left = await keysUnder(`${prefix}/`);
  if (left.length > 0) await s3.send(new DeleteObjectsCommand({ Bucket: env.s3.bucket, Delete: { Objects: left.map((Key) => ({ Key })) } }));
  s3?.destroy();
  await deleteNamespace(client, ns);
  await deleteNamespace(client, doomedNs);
}, 60_000);

describe("deleting a MySQLBackup with deletionPolicy Delete", () => {
  it("records where the backup was written, and deleting it removes exactly that folder", async () => {
    await client.create(BK, backup(ns, "plain", { deletionPolicy: "Delete" }));
    const done = await finished(ns, "plain");
    expect(done.status?.phase).toBe("Completed");
    expect(done.status?.storage).toEqual({ bucket: env.s3.bucket, prefix: `${prefix}/${ns}/plain`, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true });
    expect(await keysUnder(`${prefix}/${ns}/plain/`)).toContain(`${prefix}/${ns}/plain/manifest.json`);
    await client.delete(BK, ns, "plain");
    await waitGone(client, BK, ns, "plain");
    expect(await keysUnder(`${prefix}/${ns}/plain/`)).toEqual([]);
  });

  it("never deletes the backup another MySQLBackup of the same name completed (a run that failed with BackupExists)", async () => {
    const folder = `${prefix}/${ns}/nightly/`;
    await client.create(BK, backup(ns, "nightly"));
    expect((await finished(ns, "nightly")).status?.phase).toBe("Completed");
    const kept = await keysUnder(folder);
    expect(kept).toContain(`${folder}manifest.json`);
    // Retain: deleting the resource keeps the backup in the bucket.
    await client.delete(BK, ns, "nightly");
    await waitGone(client, BK, ns, "nightly");

    await client.create(BK, backup(ns, "nightly", { deletionPolicy: "Delete" }));
    const failed = await finished(ns, "nightly");
    expect(failed.status?.phase).toBe("Failed");
    expect(findCondition(failed.status?.conditions, "Ready")?.reason).toBe("BackupExists");
    await client.delete(BK, ns, "nightly");
    await waitGone(client, BK, ns, "nightly");
    expect((await keysUnder(folder)).sort()).toEqual([...kept].sort());
  });

  it("refuses a change of spec.storage after creation (the apiserver, by the CRD's rule)", async () => {
    await client.create(BK, backup(ns, "fixed"));
    await expect(client.patch(BK, ns, "fixed", { spec: { storage: { s3: { prefix: "elsewhere" } } } })).rejects.toThrow(/spec\.storage cannot be changed/);
    await expect(client.patch(BK, ns, "fixed", { spec: { storage: { s3: { bucket: "other-bucket" } } } })).rejects.toThrow(/spec\.storage cannot be changed/);
    // Other fields still can be: deletionPolicy decides what deletion does.
    await client.patch(BK, ns, "fixed", { spec: { deletionPolicy: "Delete" } });
    expect((await client.get<MySQLBackup>(BK, ns, "fixed")).spec.deletionPolicy).toBe("Delete");
  });

  it("lets a namespace whose S3 Secret is already gone be deleted, with a Warning naming what was left in the bucket", async () => {
    const folder = `${prefix}/${doomedNs}/doomed/`;
    await client.create(BK, backup(doomedNs, "doomed", { deletionPolicy: "Delete" }));
    expect((await finished(doomedNs, "doomed")).status?.phase).toBe("Completed");
    // Namespace deletion removes Secrets too, in no guaranteed order; here the Secret surely goes first.
    await client.delete(builtin.secret, doomedNs, "s3-creds");
    await client.delete(builtin.namespace, undefined, doomedNs);
    await waitFor(`namespace ${doomedNs} to be gone`, async () => {
      try {
        await client.get(builtin.namespace, undefined, doomedNs);
        return undefined;
      } catch (err) {
        return isNotFound(err) ? true : undefined;
      }
    }, 120_000, 500);
    const events = await client.list<Event>(builtin.event, { namespace: "default" });
    const warning = events.items.find((e) => e.regarding?.kind === "Namespace" && e.regarding.name === doomedNs && e.reason === "StoredBackupLeftBehind");
    expect(warning?.type).toBe("Warning");
    expect(warning?.note).toContain(`MySQLBackup ${doomedNs}/doomed`);
    expect(warning?.note).toContain(`s3://${env.s3.bucket}/${folder}`);
    expect(warning?.note).toMatch(/s3-creds/);
    // Left behind, as the Warning says.
    expect(await keysUnder(folder)).toContain(`${folder}manifest.json`);
  }, 180_000);
});

describe("deleting a MySQLBackup while it runs", () => {
  let proxy: TcpProxy | undefined;
  afterAll(async () => proxy?.stop());

  it("stops the run with deletionPolicy Retain too: nothing is left in its folder, and no backup completes later", async () => {
    // S3 through a proxy at 1 MiB/s: the 16 MiB database takes well over 10 s to store.
    const target = new URL(env.s3.endpoint);
    proxy = new TcpProxy({ host: target.hostname, port: Number(target.port) });
    await proxy.start();
    proxy.throttle(1024 * 1024);
    const slow = backup(ns, "cancelled", { databases: [big], deletionPolicy: "Retain" });
    slow.spec.storage.s3.endpoint = `http://127.0.0.1:${proxy.port}`;
    await client.create(BK, slow);
    const folder = `${prefix}/${ns}/cancelled/`;
    const uploads = async () => ((await s3.send(new ListMultipartUploadsCommand({ Bucket: env.s3.bucket, Prefix: folder }))).Uploads ?? []).map((u) => u.Key ?? "");
    await waitFor("the backup storing its first data object", async () => {
      const b = await client.get<MySQLBackup>(BK, ns, "cancelled");
      if (b.status?.phase === "Completed" || b.status?.phase === "Failed") throw new Error(`the backup ended ${b.status.phase} before it was deleted`);
      return b.status?.phase === "Running" && (await uploads()).length > 0 ? true : undefined;
    }, 60_000, 200);

    // Retain: no finalizer, the object is gone at once; the run must not go on without it.
    await client.delete(BK, ns, "cancelled");
    await waitGone(client, BK, ns, "cancelled");
    await waitFor("the run stopped and its folder emptied", async () => ((await keysUnder(folder)).length === 0 && (await uploads()).length === 0 ? true : undefined), 20_000, 250);
    // Long enough for the whole database to have been stored had the run gone on (16 MiB at 1 MiB/s).
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 1_000));
      expect(await keysUnder(folder), "objects written after the MySQLBackup was deleted").toEqual([]);
    }
    expect(await uploads()).toEqual([]);
  }, 120_000);
});
