// `stateward backup` and `stateward restore` against the real environment:
// MariaDB, the S3 server and a manager with the mysql-backup operator. A
// backup taken by hand goes where the instance's schedule stores, is followed
// to Completed and is in the bucket; restoring it brings a deleted row back.
// A backup that fails exits 1 with the operator's reason (a missing database, a
// server it cannot reach), one followed past --timeout exits 3, and
// mistakes are refused before anything is created.
import { DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";
import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";
import { Manager, captureLogs, type KubeObject } from "@stateward/core";
import { MySQLInstanceKind } from "@stateward/mysql";
import { MySQLBackupKind, MySQLBackupScheduleKind, MySQLRestoreKind, createMySQLBackupOperator, type MySQLBackup, type MySQLRestore } from "@stateward/operator-mysql-backup";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { s3Client } from "../../harness/index.ts";
import { createBackupPrerequisites } from "../../support/backup-setup.ts";
import { deleteNamespace, freshNamespace, kubeConfigFrom, testClient } from "../../support/kube.ts";
import { stateward } from "./run.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const suffix = randomBytes(3).toString("hex");
const db = `clibk_${suffix}`;
const prefix = `cli-backup-${suffix}`;
const root = { host: env.mysql.host, port: env.mysql.port, user: env.mysql.user, password: env.mysql.password };
let ns: string;
let s3: S3Client;
let manager: Manager | undefined;

async function sql(statement: string): Promise<unknown[]> {
  const conn = await mysql.createConnection(root);
  try {
    return (await conn.query(statement))[0] as unknown[];
  } finally {
    await conn.end();
  }
}

async function storedKeys(): Promise<string[]> {
  const out = await s3.send(new ListObjectsV2Command({ Bucket: env.s3.bucket, Prefix: `${prefix}/` }));
  return (out.Contents ?? []).map((o) => o.Key ?? "");
}

beforeAll(async () => {
  s3 = s3Client(env.s3);
  ns = await freshNamespace(client, "cli-backup");
  await sql(`CREATE DATABASE \`${db}\``);
  await sql(`CREATE TABLE \`${db}\`.t (id INT PRIMARY KEY, v VARCHAR(20))`);
  await sql(`INSERT INTO \`${db}\`.t VALUES (1, 'one'), (2, 'two')`);
  manager = new Manager({ kubeConfig: kubeConfigFrom(env.kubeconfig), namespaces: [ns], logger: captureLogs().logger, gracefulShutdownMs: 5_000 })
    .load(createMySQLBackupOperator());
  await manager.start();
  await createBackupPrerequisites(client, ns, env);
  // The instance's schedule, suspended: `stateward backup` takes its storage from it.
  await client.create(MySQLBackupScheduleKind.resource, {
    apiVersion: MySQLBackupScheduleKind.apiVersion, kind: MySQLBackupScheduleKind.kind, metadata: { name: "nightly", namespace: ns },
    spec: {
      schedule: "0 3 * * *", suspend: true,
      backupTemplate: {
        instanceRef: { name: "db" }, databases: [db],
        storage: { s3: { bucket: env.s3.bucket, prefix, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } },
      },
    },
  });
}, 120_000);

afterAll(async () => {
  await manager?.stop();
  await sql(`DROP DATABASE IF EXISTS \`${db}\``);
  const keys = await storedKeys().catch(() => []);
  if (keys.length) await s3.send(new DeleteObjectsCommand({ Bucket: env.s3.bucket, Delete: { Objects: keys.map((Key) => ({ Key })) } }));
  s3?.destroy();
  await deleteNamespace(client, ns);
}, 60_000);

describe("stateward backup and restore", () => {
  let backupName = "";

  it("takes a backup now where the schedule stores, follows it to Completed and prints it", async () => {
    const r = await stateward(env.kubeconfig, "backup", "db", "-n", ns, "-o", "json");
    console.log(r.stderr);
    expect(r.code).toBe(0);
    const backup = JSON.parse(r.stdout) as MySQLBackup;
    backupName = backup.metadata.name ?? "";
    expect(backupName).toMatch(/^db-manual-\d{14}$/);
    expect(backup.spec).toMatchObject({ instanceRef: { name: "db" }, databases: [db] });
    expect(backup.metadata.annotations?.["stateward.io/storage-from"]).toBe("MySQLBackupSchedule nightly");
    expect(backup.status?.phase).toBe("Completed");
    expect(backup.status?.location).toBe(`s3://${env.s3.bucket}/${prefix}/${ns}/${backupName}/`);
    // Progress went to stderr, as it happened.
    expect(r.stderr).toContain(`storage: s3://${env.s3.bucket}/${prefix}/${ns}/${backupName}/ (from MySQLBackupSchedule nightly)`);
    expect(r.stderr).toContain(`MySQLBackup ${ns}/${backupName} created; following it`);
    expect(r.stderr).toMatch(new RegExp(`\\] MySQLBackup ${ns}/${backupName}: Completed \\[\\d+ objects, `));
    // It is in the bucket.
    expect(await storedKeys()).toContain(`${prefix}/${ns}/${backupName}/manifest.json`);
    // And the text form says where and how much.
    const again = await stateward(env.kubeconfig, "backup", "db", "-n", ns, "--name", `${backupName}-text`);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(new RegExp(`^MySQLBackup ${ns}/${backupName}-text Completed in \\d+s: \\d+ objects, .* stored, .* of SQL, at s3://${env.s3.bucket}/${prefix}/${ns}/${backupName}-text/\\n$`));
  }, 120_000);

  it("restores it into the instance, bringing a deleted row back", async () => {
    await sql(`DELETE FROM \`${db}\`.t WHERE id = 2`);
    const r = await stateward(env.kubeconfig, "restore", backupName, "--to", "db", "-n", ns, "-o", "yaml");
    console.log(r.stderr);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/phase: Completed/);
    expect(await sql(`SELECT v FROM \`${db}\`.t ORDER BY id`)).toEqual([{ v: "one" }, { v: "two" }]);
    const restores = await client.list<MySQLRestore>(MySQLRestoreKind.resource, { namespace: ns });
    expect(restores.items.map((x) => x.metadata.name)).toEqual([expect.stringMatching(new RegExp(`^${backupName}-restore-\\d{14}$`))]);
    // --to is never implied.
    const noTarget = await stateward(env.kubeconfig, "restore", backupName, "-n", ns);
    expect(noTarget.code).toBe(2);
    expect(noTarget.stderr).toMatch(/--to INSTANCE is required/);
  }, 120_000);

  it("exits 1 with the operator's reason when the backup fails", async () => {
    const r = await stateward(env.kubeconfig, "backup", "db", "-n", ns, "--databases", `${db}_missing`);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/stateward: MySQLBackup .* failed: DatabaseNotFound: Backup failed: database clibk_\w+_missing not found/);
  }, 120_000);

  it("exits 1 when the server is unreachable, 3 when --timeout passes first; --no-wait returns at once", async () => {
    // An instance nothing answers for: a backup of it fails at once (DatabaseUnreachable).
    await client.create(MySQLInstanceKind.resource, {
      apiVersion: MySQLInstanceKind.apiVersion, kind: MySQLInstanceKind.kind, metadata: { name: "down", namespace: ns },
      spec: { host: "127.0.0.1", port: 1, adminSecretRef: { name: "mysql-admin" } },
    } as KubeObject);
    const storage = ["--bucket", env.s3.bucket, "--prefix", prefix, "--endpoint", env.s3.endpoint, "--region", env.s3.region, "--path-style", "--credentials-secret", "s3-creds"];
    const r = await stateward(env.kubeconfig, "backup", "down", "-n", ns, "--name", "down-1", ...storage);
    console.log(r.stderr);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/stateward: MySQLBackup \S+\/down-1 failed: DatabaseUnreachable: /);
    // A time-out shorter than the first look: following stops, the backup goes on.
    const short = await stateward(env.kubeconfig, "backup", "down", "-n", ns, "--name", "down-3", ...storage, "--timeout", "1ms");
    expect(short.code).toBe(3);
    expect(short.stderr).toMatch(/stateward: stopped following MySQLBackup \S+\/down-3 after 0s \(--timeout\); it goes on in the cluster: kubectl get mysqlbackups -n \S+ down-3/);
    const created = await client.get<MySQLBackup>(MySQLBackupKind.resource, ns, "down-1");
    expect(created.spec.storage.s3).toMatchObject({ bucket: env.s3.bucket, prefix, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } });

    const noWait = await stateward(env.kubeconfig, "backup", "down", "-n", ns, "--name", "down-2", "--no-wait");
    expect(noWait.code).toBe(0);
    // Without storage flags or a schedule of its own, it takes the storage of the instance's newest backup.
    expect(noWait.stderr).toContain("(from MySQLBackup down-3)");
    expect(noWait.stdout).toBe(`MySQLBackup ${ns}/down-2 created\n`);
  }, 120_000);

  it("refuses mistakes before creating anything", async () => {
    const before = (await client.list(MySQLBackupKind.resource, { namespace: ns })).items.length;
    const missing = await stateward(env.kubeconfig, "backup", "nope", "-n", ns);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`stateward: MySQLInstance ${ns}/nope not found\n`);
    const half = await stateward(env.kubeconfig, "backup", "db", "-n", ns, "--bucket", "b");
    expect(half.code).toBe(2);
    expect(half.stderr).toMatch(/--bucket and --credentials-secret are both needed/);
    expect((await client.list(MySQLBackupKind.resource, { namespace: ns })).items.length).toBe(before);
  });
});
