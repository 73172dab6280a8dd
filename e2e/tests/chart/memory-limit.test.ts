// The manager within the chart's default memory limit (issue #19, "memory bounded by
// configuration, not by luck"): `stateward run --operators database-user,mysql-backup` as the
// image runs it (compiled, with its ENTRYPOINT's V8 flags; support/image-command.ts), as a
// process of its own, in a memory cgroup of the limit the chart's Deployment sets
// (resources.limits.memory, 512Mi by default) with the heap setting it gives
// (NODE_OPTIONS=--max-old-space-size, 5/8 of the limit), both read from `helm template` of
// the chart's defaults. It reconciles 1,000 DatabaseUsers until all are Ready, then backs up a
// database of more than 1 GiB of SQL while holding them; it must not be OOM-killed nor exit.
// The cgroup's peak charge (before and during the backup) is printed; docs/performance.md
// records the figures. The users and the backup run at once, so the file takes about as long
// as the slower of them. Skipped where no memory cgroup can be made (not root, no cgroup v1).
import { GetObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mysql from "mysql2/promise";
import { findCondition, messageOf } from "@stateward/core";
import { MySQLInstanceKind } from "@stateward/mysql";
import { DatabaseUserKind, type DatabaseUser } from "@stateward/operator-database-user";
import { MySQLBackupKind, type BackupManifest, type MySQLBackup } from "@stateward/operator-mysql-backup";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createBenchDatabase, dropDatabase, wideShape } from "../../bench/backup-dataset.ts";
import { residentMemory } from "../../bench/process-usage.ts";
import { logTail, s3Client } from "../../harness/index.ts";
import { removeChartScratch } from "../../support/chart.ts";
import { chartMemoryDefaults } from "../../support/chart-memory.ts";
import { createBackupPrerequisites } from "../../support/backup-setup.ts";
import { createDatabaseUsers, databaseUserReady, inParallel, releaseInUse } from "../../support/database-users.ts";
import { imageCommand } from "../../support/image-command.ts";
import { deleteNamespace, freshNamespace, testClient, waitGone } from "../../support/kube.ts";
import { createMemoryCgroup, memoryCgroupUnavailable, type MemoryCgroup, type MemoryCgroupUsage } from "../../support/memory-cgroup.ts";
import { waitFor } from "../../support/wait.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const unavailable = memoryCgroupUnavailable();
if (unavailable) console.warn(`memory-limit test skipped: ${unavailable}`);

const USERS = 1_000;
/** What the database-user benchmark keeps in flight. */
const CREATES_IN_FLIGHT = 20;
/** SQL the backup must hold at least: the 1 GiB. */
const BACKUP_SQL_BYTES = 2 ** 30;
/**
 * Rows per table of wideShape for a bit more than 1 GiB of SQL over the two tables: a row is
 * about 589 bytes as mariadb-dump writes it; 560 leaves a margin for the backup's own format.
 */
const ROWS_PER_TABLE = Math.ceil(BACKUP_SQL_BYTES / 2 / 560);
const MiB = 2 ** 20;

const suffix = randomBytes(3).toString("hex");
const database = `memlimit_${suffix}`;
const accountPrefix = `memlimit_${suffix}_`;
const root = { host: env.mysql.host, port: env.mysql.port, user: env.mysql.user, password: env.mysql.password };

let ns: string | undefined;
let s3: S3Client | undefined;
let cgroup: MemoryCgroup | undefined;
let manager: ChildProcess | undefined;
let managerExit: Promise<string> = new Promise(() => undefined);
let dir: string | undefined;
let logFile = "";
let limitBytes = 0;
let heapOption = "";
/** The dataset being generated (milliseconds it took), from beforeAll on. */
let generated: Promise<number> = Promise.resolve(0);

/** `probe` until it answers, failing at once (with the manager's log) if the manager exits meanwhile. */
async function whileManagerRuns<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number, everyMs = 500): Promise<T> {
  const died = managerExit.then((how) => {
    throw new Error(`the manager exited (${how}) while waiting for ${what}; cgroup: ${usageText(cgroup?.usage())}. Its log ends with:\n${logTail(logFile, 15)}`);
  });
  return Promise.race([waitFor(what, probe, timeoutMs, everyMs), died]);
}

function usageText(u: MemoryCgroupUsage | undefined): string {
  if (!u) return "none";
  const f = (b: number) => `${(b / MiB).toFixed(0)} MiB`;
  return `peak ${f(u.peakBytes)}, now rss ${f(u.rssBytes)} + cache ${f(u.cacheBytes)}, limit reached ${u.limitHits}×, OOM kills ${u.oomKills}`;
}

beforeAll(async () => {
  if (unavailable) return;
  const chart = await chartMemoryDefaults();
  limitBytes = chart.limitBytes;
  heapOption = chart.nodeOptions;
  s3 = s3Client(env.s3);
  ns = await freshNamespace(client, "memlimit");
  cgroup = createMemoryCgroup(limitBytes);
  dir = mkdtempSync(join(tmpdir(), "sw-memory-limit-"));
  logFile = join(dir, "manager.log");

  // Generated while the manager starts and the users are created (the server's work, not the
  // manager's): the test waits for it only before its backup.
  generated = createBenchDatabase(root, database, ROWS_PER_TABLE, wideShape);
  generated.catch(() => undefined);
  const fd = openSync(logFile, "a");
  // The image's command line (compiled, its V8 flags) with the chart's NODE_OPTIONS: the manager as a pod runs it.
  const image = imageCommand(["run", "--kubeconfig", env.kubeconfig,
    "--namespaces", ns, "--operators", "database-user,mysql-backup", "--health-addr", "0", "--metrics-addr", "0"]);
  const run = cgroup.wrap(image.command, image.args);
  manager = spawn(run.command, run.args, { cwd: image.cwd, stdio: ["ignore", fd, fd], env: { ...process.env, ...image.env, NODE_OPTIONS: heapOption } });
  closeSync(fd);
  const child = manager;
  managerExit = new Promise((resolve) => child.once("exit", (code, signal) => resolve(signal ?? `code ${code}`)));

  // The CRDs exist once the manager has installed them.
  const namespace = ns;
  await whileManagerRuns("the manager to install its CRDs", async () => {
    try {
      await client.list(MySQLInstanceKind.resource, { namespace });
      return true;
    } catch {
      return undefined;
    }
  }, 60_000);
  await createBackupPrerequisites(client, namespace, env, root);
}, 180_000);

afterAll(async () => {
  if (manager && manager.exitCode === null && manager.signalCode === null) {
    manager.kill("SIGTERM");
    const timer = setTimeout(() => manager?.kill("SIGKILL"), 30_000);
    await managerExit;
    clearTimeout(timer);
  }
  await cgroup?.remove();
  if (ns) {
    // With the manager gone, nothing releases the finalizers: by hand, as the accounts are dropped below.
    const namespace = ns;
    const left = await client.list<DatabaseUser>(DatabaseUserKind.resource, { namespace }).catch(() => ({ items: [] }));
    await inParallel(left.items, CREATES_IN_FLIGHT, async (u) => {
      await client.patch(DatabaseUserKind.resource, namespace, u.metadata.name ?? "", { metadata: { finalizers: null } }).catch(() => undefined);
    });
    const backups = await client.list<MySQLBackup>(MySQLBackupKind.resource, { namespace }).catch(() => ({ items: [] }));
    for (const b of backups.items) await client.patch(MySQLBackupKind.resource, namespace, b.metadata.name ?? "", { metadata: { finalizers: null } }).catch(() => undefined);
    await releaseInUse(client, namespace);
    await deleteNamespace(client, namespace);
  }
  const conn = await mysql.createConnection(root);
  await dropDatabase(conn, database);
  const [accounts] = await conn.query("SELECT User AS u, Host AS h FROM mysql.user WHERE User LIKE ?", [`${accountPrefix.replaceAll("_", "\\_")}%`]);
  for (const { u, h } of accounts as { u: string; h: string }[]) await conn.query("DROP USER IF EXISTS ?@?", [u, h]);
  await conn.end();
  s3?.destroy();
  removeChartScratch();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 180_000);

describe.skipIf(unavailable !== undefined)("the manager within the chart's default memory limit", () => {
  it("reconciles 1,000 DatabaseUsers and backs up 1 GiB of SQL without being OOM-killed", async () => {
    const namespace = ns ?? "";
    const pid = manager?.pid ?? 0;
    const group = cgroup as MemoryCgroup;
    const MiBs = (b: number) => `${(b / MiB).toFixed(0)} MiB`;
    console.log(`memory-limit: cgroup ${group.path}, limit ${MiBs(limitBytes)}, NODE_OPTIONS=${heapOption}`);

    // The users and the backup at once, as a manager in a cluster meets them (and in the
    // time of the slower one): 1,000 DatabaseUsers until all are Ready; the backup of the
    // dataset as soon as it is generated, while they are reconciled and cached.
    const t0 = performance.now();
    const users = (async () => {
      await createDatabaseUsers(client, { namespace, count: USERS, instance: "db", accountPrefix, inFlight: CREATES_IN_FLIGHT });
      let ready = 0;
      await whileManagerRuns(`all ${USERS} DatabaseUsers Ready`, async () => {
        const list = await client.list<DatabaseUser>(DatabaseUserKind.resource, { namespace });
        ready = list.items.filter(databaseUserReady).length;
        return ready === USERS ? true : undefined;
      }, 420_000, 3_000).catch((err: unknown) => {
        throw new Error(`${messageOf(err)} (${ready} Ready)`);
      });
      console.log(`memory-limit: ${USERS} DatabaseUsers Ready after ${((performance.now() - t0) / 1000).toFixed(1)} s; cgroup ${usageText(group.usage())}`);
    })();
    const backup = (async () => {
      const generatedMs = await generated;
      console.log(`memory-limit: ${2 * ROWS_PER_TABLE} rows generated in ${(generatedMs / 1000).toFixed(1)} s`);
      const t1 = performance.now();
      await client.create<MySQLBackup>(MySQLBackupKind.resource, {
        apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name: "big", namespace },
        spec: {
          instanceRef: { name: "db" }, databases: [database], deletionPolicy: "Delete",
          storage: { s3: { bucket: env.s3.bucket, prefix: `memory-limit-${suffix}`, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } },
        },
      });
      const finished = await whileManagerRuns("the backup to finish", async () => {
        const b = await client.get<MySQLBackup>(MySQLBackupKind.resource, namespace, "big");
        return b.status?.phase === "Completed" || b.status?.phase === "Failed" ? b : undefined;
      }, 600_000, 1_000);
      const st = finished.status ?? {};
      console.log(
        `memory-limit: backup ${st.phase} in ${((performance.now() - t1) / 1000).toFixed(1)} s, ${((st.uncompressedBytes ?? 0) / 1e6).toFixed(0)} MB of SQL -> ` +
          `${((st.compressedBytes ?? 0) / 1e6).toFixed(0)} MB; cgroup ${usageText(group.usage())}`,
      );
      return finished;
    })();
    const [, done] = await Promise.all([users, backup]);
    const usage = group.usage();
    const { hwm } = residentMemory(pid);
    console.log(`memory-limit: all done after ${((performance.now() - t0) / 1000).toFixed(1)} s; cgroup ${usageText(usage)}; manager VmHWM ${MiBs(hwm)} (shared file pages included)`);
    const status = done.status ?? {};
    expect(status.phase, findCondition(status.conditions, "Ready")?.message).toBe("Completed");

    // What was stored is the database: the manifest's totals are the status's, over 1 GiB of SQL, gzip's ratio.
    const location = new URL(status.location ?? "");
    const body = await (s3 as S3Client).send(new GetObjectCommand({ Bucket: env.s3.bucket, Key: `${location.pathname.slice(1)}manifest.json` }));
    const manifest = JSON.parse(await body.Body?.transformToString() ?? "{}") as BackupManifest;
    expect(manifest.totals.rows).toBe(2 * ROWS_PER_TABLE);
    expect(manifest.totals.uncompressedSize).toBe(status.uncompressedBytes);
    expect(manifest.totals.size).toBe(status.compressedBytes);
    expect(manifest.totals.uncompressedSize).toBeGreaterThanOrEqual(BACKUP_SQL_BYTES);
    expect(manifest.totals.size / manifest.totals.uncompressedSize).toBeGreaterThan(0.1);
    expect(manifest.totals.size / manifest.totals.uncompressedSize).toBeLessThan(0.3);

    // Never killed: still running, no OOM kill in its cgroup; and it stops cleanly.
    expect(manager?.exitCode, `manager log:\n${logTail(logFile, 15)}`).toBeNull();
    expect(manager?.signalCode).toBeNull();
    expect(usage.oomKills).toBe(0);
    await client.delete(MySQLBackupKind.resource, namespace, "big");
    await waitGone(client, MySQLBackupKind.resource, namespace, "big", 60_000);
    manager?.kill("SIGTERM");
    expect(await managerExit).toBe("code 0");
    expect(group.usage().oomKills).toBe(0);
  }, 900_000);
});
