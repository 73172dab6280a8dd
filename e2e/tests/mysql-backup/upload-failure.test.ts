// S3 failing in the middle of a backup, with the manager as a real process
// (`stateward run`): the backup ends Failed with a reason, and the process —
// every operator and every other operation in it — goes on. The S3 traffic
// of the failing backup goes through the harness's TCP proxy (a separate
// endpoint, so nothing else is disturbed), made slow so that one data object
// is still finishing its upload while the next one fills, then cut: an
// upload failing at that moment once ended the whole manager (an unhandled
// rejection of the part-completion chain in engine/table-dump.ts).
import { ListMultipartUploadsCommand, type S3Client } from "@aws-sdk/client-s3";
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mysql from "mysql2/promise";
import { builtin, findCondition, messageOf, type KubeObject } from "@stateward/core";
import { MySQLInstanceKind } from "@stateward/mysql";
import { MySQLBackupKind, type MySQLBackup } from "@stateward/operator-mysql-backup";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { logTail, s3Client, TcpProxy } from "../../harness/index.ts";
import { deleteNamespace, freshNamespace, testClient } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import { id } from "./torture.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const BK = MySQLBackupKind.resource;
const suffix = randomBytes(3).toString("hex");
const big = `bkfault_big_${suffix}`;
const small = `bkfault_small_${suffix}`;
const prefix = `upload-failure-${suffix}`;
const root = { host: env.mysql.host, port: env.mysql.port, user: env.mysql.user, password: env.mysql.password };
const repoRoot = join(import.meta.dirname, "..", "..", "..");
/**
 * 48 MiB of random bytes, written as hex: about 96 MiB of SQL, two data
 * objects of the 64 MiB default size, which gzip cannot shrink below half.
 * (Few, large rows: the shared server inserts them in seconds.)
 */
const blobRows = 768;
const blobBytes = 64 * 1024;

let ns: string;
let s3: S3Client;
let proxy: TcpProxy;
let manager: ChildProcess;
let managerExit: Promise<string>;
let dir: string;
let logFile: string;

function backup(name: string, database: string, endpoint: string): MySQLBackup {
  return {
    apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name, namespace: ns },
    spec: {
      instanceRef: { name: "db" }, databases: [database],
      storage: { s3: { bucket: env.s3.bucket, prefix, endpoint, region: env.s3.region, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } },
    },
  };
}

/** `probe` until it answers, failing at once (with the manager's log) if the manager process exits meanwhile. */
async function whileManagerRuns<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const died = managerExit.then((how) => {
    throw new Error(`the manager process exited (${how}) while waiting for ${what}. Its log ends with:\n${logTail(logFile, 15)}`);
  });
  return Promise.race([waitFor(what, probe, timeoutMs, 200), died]);
}

beforeAll(async () => {
  s3 = s3Client(env.s3);
  const conn = await mysql.createConnection(root);
  await conn.query(`CREATE DATABASE ${id(big)}`);
  await conn.query(`CREATE TABLE ${id(big)}.blobs (id INT PRIMARY KEY, b MEDIUMBLOB) ENGINE=InnoDB`);
  for (let i = 0; i < blobRows; i += 8) {
    const rows = Array.from({ length: 8 }, (_, j) => [i + j + 1, randomBytes(blobBytes)]);
    await conn.query(`INSERT INTO ${id(big)}.blobs VALUES ?`, [rows]);
  }
  await conn.query(`CREATE DATABASE ${id(small)}`);
  await conn.query(`CREATE TABLE ${id(small)}.t (id INT PRIMARY KEY, v VARCHAR(20))`);
  await conn.query(`INSERT INTO ${id(small)}.t VALUES (1, 'one'), (2, 'two')`);
  await conn.end();

  const target = new URL(env.s3.endpoint);
  proxy = new TcpProxy({ host: target.hostname, port: Number(target.port) });
  await proxy.start();
  // Slow enough that finishing an object's upload takes seconds, and overlaps filling the next.
  proxy.throttle(2 * 1024 * 1024);

  ns = await freshNamespace(client, "bkfault");
  await client.create(builtin.secret, { metadata: { name: "mysql-admin", namespace: ns }, stringData: { username: root.user, password: root.password } } as KubeObject);
  await client.create(builtin.secret, {
    metadata: { name: "s3-creds", namespace: ns },
    stringData: { AWS_ACCESS_KEY_ID: env.s3.accessKeyId, AWS_SECRET_ACCESS_KEY: env.s3.secretAccessKey },
  } as KubeObject);

  // The manager as a Deployment runs it: its own process, `stateward run`.
  dir = mkdtempSync(join(tmpdir(), "sw-upload-failure-"));
  logFile = join(dir, "manager.log");
  const fd = openSync(logFile, "a");
  manager = spawn(process.execPath, [join(repoRoot, "cli", "src", "main.ts"), "run", "--kubeconfig", env.kubeconfig,
    "--namespaces", ns, "--operators", "database-user,mysql-backup", "--health-addr", "0", "--metrics-addr", "0"], { stdio: ["ignore", fd, fd] });
  closeSync(fd);
  managerExit = new Promise((resolve) => manager.once("exit", (code, signal) => resolve(signal ?? `code ${code}`)));
  managerExit.catch(() => undefined);
  // The CRDs exist once the manager has installed them.
  await whileManagerRuns("the MySQLInstance to be created", async () => {
    await client.create(MySQLInstanceKind.resource, {
      apiVersion: MySQLInstanceKind.apiVersion, kind: MySQLInstanceKind.kind, metadata: { name: "db", namespace: ns },
      spec: { host: root.host, port: root.port, adminSecretRef: { name: "mysql-admin" } },
    } as KubeObject);
    return true;
  }, 60_000);
}, 180_000);

afterAll(async () => {
  if (manager && manager.exitCode === null && manager.signalCode === null) {
    manager.kill("SIGTERM");
    const timer = setTimeout(() => manager.kill("SIGKILL"), 30_000);
    await managerExit;
    clearTimeout(timer);
  }
  await proxy?.stop();
  const conn = await mysql.createConnection(root);
  await conn.query(`DROP DATABASE IF EXISTS ${id(big)}`);
  await conn.query(`DROP DATABASE IF EXISTS ${id(small)}`);
  await conn.end();
  s3?.destroy();
  if (ns) await deleteNamespace(client, ns);
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 90_000);

describe("S3 failing mid-backup", () => {
  it("fails that backup with a reason; the manager process keeps running and another backup completes", async () => {
    await client.create(BK, backup("cut", big, `http://127.0.0.1:${proxy.port}`));
    const folder = `${prefix}/${ns}/cut/`;
    // The moment that once killed the manager: part 1 of the table still uploading (finishing) while part 2 fills.
    const seen = new Set<string>();
    const inFlight = await whileManagerRuns("two data objects of the table uploading at once", async () => {
      const out = await s3.send(new ListMultipartUploadsCommand({ Bucket: env.s3.bucket, Prefix: folder }));
      const keys = (out.Uploads ?? []).map((u) => u.Key ?? "");
      for (const k of keys) seen.add(k);
      if (keys.some((k) => k.endsWith(".0001.sql.gz")) && keys.some((k) => k.endsWith(".0002.sql.gz"))) return keys;
      const b = await client.get<MySQLBackup>(BK, ns, "cut");
      if (b.status?.phase === "Completed" || b.status?.phase === "Failed") {
        throw new Error(`the backup ended ${b.status.phase} before that: ${findCondition(b.status.conditions, "Ready")?.message ?? ""}`);
      }
      return undefined;
    }, 150_000).catch((err: unknown) => {
      throw new Error(`${messageOf(err)}; uploads seen: ${[...seen].join(", ") || "none"}; manager log:\n${logTail(logFile, 10)}`);
    });
    expect(inFlight.length).toBeGreaterThanOrEqual(2);
    proxy.block();

    const failed = await whileManagerRuns("the backup to fail", async () => {
      const b = await client.get<MySQLBackup>(BK, ns, "cut");
      return b.status?.phase === "Failed" ? b : undefined;
    }, 120_000);
    const ready = findCondition(failed.status?.conditions, "Ready");
    expect(ready?.reason).toBe("StorageUnreachable");
    expect(ready?.message).toMatch(/^Backup failed: .*127\.0\.0\.1/);
    const events = await client.list<KubeObject & { reason?: string; type?: string; regarding?: { name?: string } }>(builtin.event, { namespace: ns });
    expect(events.items.some((e) => e.regarding?.name === "cut" && e.type === "Warning" && e.reason === "StorageUnreachable")).toBe(true);

    // Whatever the failed uploads still had pending has settled by now; the process must still be there.
    await new Promise((r) => setTimeout(r, 5_000));
    expect(manager.exitCode, `manager log:\n${logTail(logFile, 15)}`).toBeNull();
    expect(manager.signalCode).toBeNull();

    // And it still works: a backup to the real endpoint completes.
    await client.create(BK, backup("after", small, env.s3.endpoint));
    const after = await whileManagerRuns("the next backup to complete", async () => {
      const b = await client.get<MySQLBackup>(BK, ns, "after");
      return b.status?.phase === "Completed" || b.status?.phase === "Failed" ? b : undefined;
    }, 60_000);
    expect(after.status?.phase).toBe("Completed");
  }, 420_000);
});
