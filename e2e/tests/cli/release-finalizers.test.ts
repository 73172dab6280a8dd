// `stateward release-finalizers` against the real API server: with the
// manager stopped, a deleted namespace holding a DatabaseUser and a
// MySQLBackup (both with Stateward finalizers, and the MySQLInstance and its
// admin Secret kept in use for the DatabaseUser) stays Terminating; the dry
// run lists them with what they would have cleaned up and changes nothing;
// the real run releases them and the namespace goes away, leaving the MySQL
// account and the stored backup behind, as it said.
import { DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";
import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";
import { Manager, builtin, captureLogs, isNotFound, type KubeObject } from "@stateward/core";
import { DatabaseUserKind, databaseUserOperator } from "@stateward/operator-database-user";
import { MySQLBackupKind, createMySQLBackupOperator, type MySQLBackup } from "@stateward/operator-mysql-backup";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { s3Client } from "../../harness/index.ts";
import { deleteNamespace, freshNamespace, kubeConfigFrom, testClient } from "../../support/kube.ts";
import { createBackupPrerequisites } from "../../support/backup-setup.ts";
import { waitFor } from "../../support/wait.ts";
import { stateward as run, type Run } from "./run.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const suffix = randomBytes(3).toString("hex");
const db = `relfin_${suffix}`;
const account = `relfin_${suffix}`;
const prefix = `release-finalizers-${suffix}`;
const root = { host: env.mysql.host, port: env.mysql.port, user: env.mysql.user, password: env.mysql.password };
let ns: string;
let s3: S3Client;
let manager: Manager | undefined;

/** `stateward release-finalizers …` as a user runs it, with the environment's kubeconfig as the current one. */
function stateward(...args: string[]): Promise<Run> {
  return run(env.kubeconfig, "release-finalizers", ...args);
}

async function namespacePhase(): Promise<string | undefined> {
  try {
    return (await client.get<KubeObject & { status?: { phase?: string } }>(builtin.namespace, undefined, ns)).status?.phase ?? "Active";
  } catch (err) {
    if (isNotFound(err)) return "Gone";
    throw err;
  }
}

async function accountExists(): Promise<boolean> {
  const conn = await mysql.createConnection(root);
  const [rows] = await conn.query("SELECT 1 FROM mysql.user WHERE User = ? AND Host = '%'", [account]);
  await conn.end();
  return (rows as unknown[]).length > 0;
}

async function storedKeys(): Promise<string[]> {
  const out = await s3.send(new ListObjectsV2Command({ Bucket: env.s3.bucket, Prefix: `${prefix}/` }));
  return (out.Contents ?? []).map((o) => o.Key ?? "");
}

beforeAll(async () => {
  s3 = s3Client(env.s3);
  ns = await freshNamespace(client, "relfin");
  const conn = await mysql.createConnection(root);
  await conn.query(`CREATE DATABASE \`${db}\``);
  await conn.query(`CREATE TABLE \`${db}\`.t (id INT PRIMARY KEY, v VARCHAR(20))`);
  await conn.query(`INSERT INTO \`${db}\`.t VALUES (1, 'one'), (2, 'two')`);
  await conn.end();
}, 60_000);

afterAll(async () => {
  await manager?.stop();
  const conn = await mysql.createConnection(root);
  await conn.query(`DROP DATABASE IF EXISTS \`${db}\``);
  await conn.query(`DROP USER IF EXISTS '${account}'@'%'`);
  await conn.end();
  const keys = await storedKeys().catch(() => []);
  if (keys.length) await s3.send(new DeleteObjectsCommand({ Bucket: env.s3.bucket, Delete: { Objects: keys.map((Key) => ({ Key })) } }));
  s3?.destroy();
  await deleteNamespace(client, ns);
}, 60_000);

describe("stateward release-finalizers", () => {
  it("releases a namespace stuck Terminating once the manager is gone, after a dry run that changes nothing", async () => {
    manager = new Manager({ kubeConfig: kubeConfigFrom(env.kubeconfig), namespaces: [ns], logger: captureLogs().logger, gracefulShutdownMs: 5_000 })
      .load(databaseUserOperator, createMySQLBackupOperator());
    await manager.start();
    await createBackupPrerequisites(client, ns, env);
    await client.create(builtin.secret, { metadata: { name: "app-password", namespace: ns }, stringData: { password: `pw-${suffix}` } } as KubeObject);
    await client.create(DatabaseUserKind.resource, {
      apiVersion: DatabaseUserKind.apiVersion, kind: DatabaseUserKind.kind, metadata: { name: "app", namespace: ns },
      spec: { instanceRef: { name: "db" }, user: account, passwordSecretRef: { name: "app-password" } },
    } as KubeObject);
    await client.create(MySQLBackupKind.resource, {
      apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name: "nightly", namespace: ns },
      spec: {
        instanceRef: { name: "db" }, databases: [db], deletionPolicy: "Delete",
        storage: { s3: { bucket: env.s3.bucket, prefix, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } },
      },
    });
    await waitFor("the MySQL account created", async () => ((await accountExists()) ? true : undefined), 60_000, 250);
    const completed = await waitFor("the backup completed", async () => {
      const b = await client.get<MySQLBackup>(MySQLBackupKind.resource, ns, "nightly");
      return b.status?.phase === "Completed" ? b : undefined;
    }, 90_000, 250);
    const location = completed.status?.location ?? "";
    expect(location).toMatch(/^s3:\/\//);

    // The manager goes away (the chart uninstalled first); then the namespace is deleted.
    await manager.stop();
    manager = undefined;
    await client.delete(builtin.namespace, undefined, ns);
    await new Promise((r) => setTimeout(r, 8_000));
    expect(await namespacePhase()).toBe("Terminating");
    const user = await client.get<KubeObject>(DatabaseUserKind.resource, ns, "app");
    const backup = await client.get<KubeObject>(MySQLBackupKind.resource, ns, "nightly");
    expect(user.metadata.deletionTimestamp).toBeDefined();
    expect(user.metadata.finalizers).toContain("stateward.io/drop-account");
    expect(backup.metadata.finalizers).toContain("stateward.io/delete-stored-backup");

    // Dry run (the default): lists both with what they would have cleaned up, changes nothing.
    const dry = await stateward("--namespace", ns);
    console.log(dry.stdout);
    expect(dry.stderr).not.toMatch(/stateward:/);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(`DatabaseUser ${ns}/app (being deleted)`);
    expect(dry.stdout).toContain(`drop the MySQL account '${account}'@'%' on MySQLInstance ${ns}/db`);
    expect(dry.stdout).toContain(`MySQLBackup ${ns}/nightly (being deleted)`);
    expect(dry.stdout).toContain(`delete the backup folder ${location}`);
    // The instance and its admin Secret were kept in use for the DatabaseUser: listed, nothing to clean up.
    expect(dry.stdout).toContain(`MySQLInstance ${ns}/db (being deleted)`);
    expect(dry.stdout).toContain(`Secret ${ns}/mysql-admin (being deleted)`);
    expect(dry.stdout).toMatch(/Dry run: nothing changed/);
    expect((await client.get<KubeObject>(DatabaseUserKind.resource, ns, "app")).metadata.resourceVersion).toBe(user.metadata.resourceVersion);
    expect((await client.get<KubeObject>(MySQLBackupKind.resource, ns, "nightly")).metadata.resourceVersion).toBe(backup.metadata.resourceVersion);
    expect(await namespacePhase()).toBe("Terminating");
    // --all-namespaces sees them too.
    expect((await stateward("--all-namespaces")).stdout).toContain(`DatabaseUser ${ns}/app`);

    // A usage error says so, with exit status 2.
    const usage = await stateward();
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--namespace NS or --all-namespaces/);

    // The real run releases them; the namespace finishes deleting.
    const real = await stateward("--namespace", ns, "--yes");
    expect(real.stderr).not.toMatch(/stateward:/);
    expect(real.code).toBe(0);
    expect(real.stdout).toContain(`released DatabaseUser ${ns}/app; left behind: the MySQL account '${account}'@'%'`);
    expect(real.stdout).toContain(`released MySQLBackup ${ns}/nightly; left behind: the backup folder ${location}`);
    expect(real.stdout).toContain(`released Secret ${ns}/mysql-admin\n`);
    await waitFor("the namespace gone", async () => ((await namespacePhase()) === "Gone" ? true : undefined), 90_000, 500);
    // What the finalizers would have removed is still there, as the command said.
    expect(await accountExists()).toBe(true);
    expect((await storedKeys()).length).toBeGreaterThan(0);
    // Nothing left to release.
    expect((await stateward("--namespace", ns)).stdout).toMatch(/No Stateward object with a Stateward finalizer/);
  }, 240_000);
});
