// The mysql-backup operator against the stock tools, side by side in one run
// on the same data (PERF-NOTES.md's reference database: 2 tables × 4 M rows,
// ~1.2 GB of dump SQL; BENCH_BACKUP_ROWS sets the rows per table):
//
//  1. a manager running the database-user and mysql-backup operators in a
//     process of its own (its RSS is then its own), a MySQLInstance, and the
//     database, generated inside the server;
//  2. a MySQLBackup (gzip), timed from create to Completed, while the
//     manager's RSS is watched (/proc VmRSS every 250 ms, and the kernel's
//     high-water mark reset at the start); then the reference pipeline
//     `mariadb-dump --single-transaction | gzip -6 | upload` to the same bucket;
//  3. drop the database, a MySQLRestore from the backup (in a fresh manager,
//     so its peak RSS is its own); drop it again, the reference
//     `download | gunzip | mariadb`; after each, CHECKSUM TABLE must equal
//     the original's, or the benchmark fails;
//  4. unless BENCH_BACKUP_SMALL_ROWS is 0: a fresh manager backs up a database
//     a quarter the size (1 M rows a table by default), to show whether the
//     peak RSS grows with the database.
//
// Throughput is in MB/s (10^6 bytes, as PERF-NOTES.md). Ratios are ours /
// pipeline: above 1 is better for MB/s, below 1 is better for times. CPU
// seconds (from /proc) are counted for each side too — the manager process
// against the pipeline's processes, and the MariaDB server during each — as
// they say more than wall time when other work shares the machine.
// Everything is removed at the end: the databases, the objects in the bucket,
// the namespace.
import { mkdirSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { isAbsolute, join } from "node:path";
import type { Connection } from "mysql2/promise";
import { builtin, type KubeObject } from "@stateward/core";
import { MySQLInstanceKind, quoteIdentifier } from "@stateward/mysql";
import { MySQLBackupKind, MySQLRestoreKind, type MySQLBackup, type MySQLRestore } from "@stateward/operator-mysql-backup";
import { s3Client, type EnvironmentInfo } from "../harness/index.ts";
import { deleteNamespace, freshNamespace, testClient } from "../support/kube.ts";
import { benchTables, connect, createBenchDatabase, differences, databaseBytes, dropDatabase, tableChecksums, type ServerLogin } from "./backup-dataset.ts";
import { startManagerProcess, type ManagerHandle } from "./manager-handle.ts";
import type { BenchResult, BenchRow, Benchmark } from "./benchmark.ts";
import { pipelineBackup, pipelineRestore } from "./dump-pipeline.ts";
import { deletePrefix, timedOperation, type Finished } from "./operations.ts";
import { cpuSeconds } from "./process-usage.ts";

/** Rows per table from the environment; NaN when the value is not a whole number (run() refuses it). */
function rowsSetting(name: string, fallback: number): number {
  const raw = process.env[name]?.replaceAll("_", "").trim();
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : NaN;
}

/** PERF-NOTES.md's reference: 2 × 4 M rows, ~1.19 GB of dump SQL. */
const ROWS = rowsSetting("BENCH_BACKUP_ROWS", 4_000_000);
/** A quarter of the reference: large enough that a buffer growing with the data would show, small enough to add ~30 s. 0 skips it. */
const SMALL_ROWS = rowsSetting("BENCH_BACKUP_SMALL_ROWS", 1_000_000);
/** gzip's own default, and MySQLBackup's for gzip (defaultCompressionLevel). */
const GZIP_LEVEL = 6;
const START_TIMEOUT_MS = 60_000;
const INSTANCE = "db";
const S3_SECRET = "s3-creds";

const BK = MySQLBackupKind.resource;
const RS = MySQLRestoreKind.resource;
const count = (n: number) => n.toLocaleString("en-US");
const mb = (bytes: number) => bytes / 1e6;
const mib = (bytes: number) => bytes / 2 ** 20;
const load1 = () => Number((loadavg()[0] ?? 0).toFixed(2));

/**
 * The MariaDB server's pid, to count its CPU time: the harness's own server,
 * or the machine's from its pid file. Undefined when neither can be read.
 */
async function serverPid(env: EnvironmentInfo, admin: Connection): Promise<number | undefined> {
  if (env.mysql.pid !== undefined) return env.mysql.pid;
  try {
    const [rows] = await admin.query("SELECT @@pid_file AS file, @@datadir AS datadir");
    const { file, datadir } = (rows as { file: string; datadir: string }[])[0] ?? { file: "", datadir: "" };
    const pid = Number(readFileSync(isAbsolute(file) ? file : join(datadir, file), "utf8").trim());
    cpuSeconds(pid);
    return pid;
  } catch {
    return undefined;
  }
}

/** Runs `fn`, counting the CPU seconds the MariaDB server used meanwhile (NaN when its process cannot be read). */
async function onServer<T>(pid: number | undefined, fn: () => Promise<T>): Promise<[T, number]> {
  const cpu = () => (pid === undefined ? NaN : cpuSeconds(pid));
  const before = cpu();
  const result = await fn();
  return [result, cpu() - before];
}

async function run(env: EnvironmentInfo): Promise<BenchResult> {
  if (!Number.isSafeInteger(ROWS) || ROWS < 1) throw new Error(`BENCH_BACKUP_ROWS must be a positive whole number of rows per table, not ${process.env.BENCH_BACKUP_ROWS}`);
  if (Number.isNaN(SMALL_ROWS)) throw new Error(`BENCH_BACKUP_SMALL_ROWS must be a whole number of rows per table (0 skips), not ${process.env.BENCH_BACKUP_SMALL_ROWS}`);
  const smallRows = SMALL_ROWS > 0 && SMALL_ROWS < ROWS ? SMALL_ROWS : 0;
  const loadBefore = load1();
  const client = testClient(env.kubeconfig);
  const logDir = join(env.dir, "bench");
  mkdirSync(logDir, { recursive: true });
  const ns = await freshNamespace(client, "bench-backup");
  const suffix = ns.slice(-6);
  // Unique names: other suites may share the MariaDB server and the bucket.
  const db = `bench_backup_${suffix}`;
  const smallDb = `${db}_small`;
  const prefix = `bench-backup-${suffix}`;
  const pipelineKey = `${prefix}/pipeline/${db}.sql.gz`;
  const server: ServerLogin = { host: env.mysql.host, port: env.mysql.port, user: env.mysql.user, password: env.mysql.password };
  const s3 = s3Client(env.s3);
  const admin = await connect(server);
  const mariadbd = await serverPid(env, admin);
  const managers: ManagerHandle[] = [];
  const failures: string[] = [];
  const rows: BenchRow[] = [];
  const row = (metric: string, value: number, unit: string, reference?: number, note?: string) => rows.push({ metric, value, unit, reference, note });
  const backupSpec = (name: string, database: string): MySQLBackup => ({
    apiVersion: MySQLBackupKind.apiVersion,
    kind: MySQLBackupKind.kind,
    metadata: { name, namespace: ns },
    spec: {
      instanceRef: { name: INSTANCE },
      storage: {
        s3: { bucket: env.s3.bucket, prefix, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true, credentialsSecretRef: { name: S3_SECRET } },
      },
      databases: [database],
      compression: "gzip",
    },
  });

  try {
    // 1. The manager first: it installs the CRDs the objects below need.
    const manager = await startManagerProcess({ kubeconfig: env.kubeconfig, namespace: ns, operators: "mysql-backup" }, join(logDir, "mysql-backup-manager-1.log"), START_TIMEOUT_MS);
    managers.push(manager);
    await client.create(builtin.secret, {
      metadata: { name: "mysql-admin", namespace: ns },
      stringData: { username: server.user, password: server.password },
    } as KubeObject);
    await client.create(builtin.secret, {
      metadata: { name: S3_SECRET, namespace: ns },
      stringData: { AWS_ACCESS_KEY_ID: env.s3.accessKeyId, AWS_SECRET_ACCESS_KEY: env.s3.secretAccessKey },
    } as KubeObject);
    await client.create(MySQLInstanceKind.resource, {
      apiVersion: MySQLInstanceKind.apiVersion,
      kind: MySQLInstanceKind.kind,
      metadata: { name: INSTANCE, namespace: ns },
      spec: { host: server.host, port: server.port, adminSecretRef: { name: "mysql-admin" } },
    } as KubeObject);

    const generateMs = await createBenchDatabase(server, db, ROWS);
    const original = await tableChecksums(admin, db);
    const storedBytesOnServer = await databaseBytes(admin, db);

    // 2. Backups: ours, then the pipeline, on the same data.
    const [backup, backupServerCpu] = await onServer(mariadbd, () => timedOperation(client, manager, BK, backupSpec("full", db)));
    const [pipeBackup, pipeBackupServerCpu] = await onServer(mariadbd, () =>
      pipelineBackup({ server, database: db, s3, bucket: env.s3.bucket, key: pipelineKey, gzipLevel: GZIP_LEVEL }),
    );

    // 3. Restores with the database dropped first: ours, then the pipeline; each must give the original rows back.
    // A fresh manager, so that its peak RSS is the restore's and not what the backup left in the heap.
    await manager.stop();
    managers.splice(managers.indexOf(manager), 1);
    const restorer = await startManagerProcess({ kubeconfig: env.kubeconfig, namespace: ns, operators: "mysql-backup" }, join(logDir, "mysql-backup-manager-2.log"), START_TIMEOUT_MS);
    managers.push(restorer);
    await dropDatabase(admin, db);
    const [restore, restoreServerCpu] = await onServer(mariadbd, () =>
      timedOperation<MySQLRestore>(client, restorer, RS, {
        apiVersion: MySQLRestoreKind.apiVersion,
        kind: MySQLRestoreKind.kind,
        metadata: { name: "full", namespace: ns },
        spec: { instanceRef: { name: INSTANCE }, source: { backupRef: { name: "full" } } },
      }),
    );
    const afterRestore = differences(original, await tableChecksums(admin, db));
    if (afterRestore.length > 0) failures.push(`after the MySQLRestore, CHECKSUM TABLE differs from the original: ${afterRestore.join("; ")}`);
    await dropDatabase(admin, db);
    // A dump made without --databases creates no database: the pipeline's user creates it first.
    await admin.query(`CREATE DATABASE ${quoteIdentifier(db, "database")}`);
    const [pipeRestore, pipeRestoreServerCpu] = await onServer(mariadbd, () => pipelineRestore({ server, database: db, s3, bucket: env.s3.bucket, key: pipelineKey }));
    const afterPipe = differences(original, await tableChecksums(admin, db));
    if (afterPipe.length > 0) failures.push(`after the pipeline's restore, CHECKSUM TABLE differs from the original: ${afterPipe.join("; ")}`);
    await dropDatabase(admin, db);

    // 4. The same backup of a smaller database, in a fresh manager as the full one was: does the peak grow with the data?
    await restorer.stop();
    managers.splice(managers.indexOf(restorer), 1);
    let small: Finished<MySQLBackup> | undefined;
    if (smallRows > 0) {
      const third = await startManagerProcess({ kubeconfig: env.kubeconfig, namespace: ns, operators: "mysql-backup" }, join(logDir, "mysql-backup-manager-3.log"), START_TIMEOUT_MS);
      managers.push(third);
      await createBenchDatabase(server, smallDb, smallRows);
      small = await timedOperation(client, third, BK, backupSpec("small", smallDb));
      await dropDatabase(admin, smallDb);
    }

    // The figures.
    const b = backup.obj.status ?? {};
    const ourSql = b.uncompressedBytes ?? 0;
    const ourStored = b.compressedBytes ?? 0;
    const dumpSql = pipeBackup.sqlBytes;
    const pipeS = pipeBackup.ms / 1000;
    const pipeRestoreS = pipeRestore.ms / 1000;
    const restoredSql = restore.obj.status?.bytes ?? 0;
    const PIPE = `reference: mariadb-dump --single-transaction | gzip -${GZIP_LEVEL} | upload`;
    const PIPE_RESTORE = "reference: download | gunzip | mariadb";
    const SHARED_SERVER = "reference: during the pipeline; a shared server counts other clients' work too";
    row(`rows (${benchTables.length} tables × ${count(ROWS)})`, benchTables.length * ROWS, "");
    row("generate the database (in the server, sequence engine)", generateMs / 1000, "s");
    row("database size on the server (InnoDB data + indexes)", mb(storedBytesOnServer), "MB");
    row("SQL size: mariadb-dump", mb(dumpSql), "MB");
    row("SQL size: MySQLBackup objects, uncompressed", mb(ourSql), "MB", mb(dumpSql), "reference: mariadb-dump's");
    row(`stored size: MySQLBackup, gzip level ${GZIP_LEVEL}`, mb(ourStored), "MB", mb(pipeBackup.storedBytes), `reference: gzip -${GZIP_LEVEL} of mariadb-dump's SQL`);
    row("backup: time, MySQLBackup create -> Completed", backup.seconds, "s", pipeS, `${PIPE}; ratio < 1 is better`);
    row("backup: SQL MB/s (own SQL bytes / time)", mb(ourSql) / backup.seconds, "MB/s", mb(dumpSql) / pipeS, PIPE);
    row("backup: MB/s of the same data (mariadb-dump's SQL bytes / time)", mb(dumpSql) / backup.seconds, "MB/s", mb(dumpSql) / pipeS, PIPE);
    row("backup: stored MB/s", mb(ourStored) / backup.seconds, "MB/s", mb(pipeBackup.storedBytes) / pipeS, PIPE);
    row("backup: CPU seconds, manager process", backup.usage.cpuSeconds, "s", pipeBackup.cpuSeconds, "reference: mariadb-dump + gzip + the upload; ratio < 1 is better");
    if (mariadbd !== undefined) row("backup: CPU seconds, MariaDB server", backupServerCpu, "s", pipeBackupServerCpu, SHARED_SERVER);
    row("manager RSS before the backup (idle, caches synced)", mib(backup.usage.startBytes), "MiB");
    row(
      `manager peak RSS during the backup (${benchTables.length} × ${count(ROWS)} rows)`,
      mib(backup.usage.peakBytes),
      "MiB",
      small ? mib(small.usage.peakBytes) : undefined,
      small ? `reference: the same backup of ${benchTables.length} × ${count(smallRows)} rows in a fresh manager; ratio ~1 = independent of size` : undefined,
    );
    row("restore: time, MySQLRestore create -> Completed", restore.seconds, "s", pipeRestoreS, `${PIPE_RESTORE}; ratio < 1 is better`);
    row("restore: SQL MB/s (SQL bytes applied / time)", mb(restoredSql) / restore.seconds, "MB/s", mb(dumpSql) / pipeRestoreS, PIPE_RESTORE);
    row("restore: MB/s of the same data (mariadb-dump's SQL bytes / time)", mb(dumpSql) / restore.seconds, "MB/s", mb(dumpSql) / pipeRestoreS, PIPE_RESTORE);
    row("restore: CPU seconds, manager process", restore.usage.cpuSeconds, "s", pipeRestore.cpuSeconds, "reference: the download + gunzip + mariadb; ratio < 1 is better");
    if (mariadbd !== undefined) row("restore: CPU seconds, MariaDB server", restoreServerCpu, "s", pipeRestoreServerCpu, SHARED_SERVER);
    row("manager peak RSS during the restore (a fresh manager)", mib(restore.usage.peakBytes), "MiB");
    row("tables identical after MySQLRestore (CHECKSUM TABLE)", benchTables.length - afterRestore.length, "", benchTables.length);
    row("tables identical after the pipeline's restore (CHECKSUM TABLE)", benchTables.length - afterPipe.length, "", benchTables.length);
    if (small) {
      const s = small.obj.status ?? {};
      row(`smaller database: backup time (${benchTables.length} × ${count(smallRows)} rows)`, small.seconds, "s");
      row("smaller database: backup SQL MB/s", mb(s.uncompressedBytes ?? 0) / small.seconds, "MB/s");
      row("smaller database: manager peak RSS during the backup", mib(small.usage.peakBytes), "MiB");
    }
    // Other work on the machine slows both sides; these say how busy it was.
    row("machine load average (1 min) before the run", loadBefore, "");
    row("machine load average (1 min) after the run", load1(), "");

    return {
      rows,
      failures,
      details: {
        namespace: ns,
        database: db,
        rowsPerTable: ROWS,
        smallRowsPerTable: smallRows || undefined,
        managerStartupMs: Math.round(manager.startupMs),
        checksums: original,
        serverCpuSeconds: mariadbd === undefined ? undefined : { backup: backupServerCpu, pipelineBackup: pipeBackupServerCpu, restore: restoreServerCpu, pipelineRestore: pipeRestoreServerCpu },
        backup: { seconds: backup.seconds, status: backup.obj.status, usage: backup.usage },
        pipelineBackup: { ...pipeBackup, upload: "@aws-sdk/lib-storage Upload defaults (5 MiB parts, 4 in flight)" },
        restore: { seconds: restore.seconds, status: restore.obj.status, usage: restore.usage },
        pipelineRestore: pipeRestore,
        small: small ? { seconds: small.seconds, status: small.obj.status, usage: small.usage } : undefined,
        loadAverage: { before: loadBefore, after: load1() },
        aims: {
          backupAtLeastPipelineThroughput: backup.seconds <= pipeS,
          restoreAtLeastPipelineThroughput: restore.seconds <= pipeRestoreS,
          peakRssFullOverSmall: small ? backup.usage.peakBytes / small.usage.peakBytes : undefined,
        },
      },
    };
  } finally {
    for (const m of managers) await m.stop().catch(() => m.kill());
    for (const d of [db, smallDb]) {
      await dropDatabase(admin, d).catch((err: unknown) => console.error(`mysql-backup benchmark: could not drop ${d}: ${String(err)}`));
    }
    await admin.end();
    await deletePrefix(s3, env.s3.bucket, prefix).catch((err: unknown) => console.error(`mysql-backup benchmark: could not empty s3://${env.s3.bucket}/${prefix}/: ${String(err)}`));
    s3.destroy();
    await deleteNamespace(client, ns).catch(() => undefined);
  }
}

export const mysqlBackupBenchmark: Benchmark = {
  name: "mysql-backup",
  description:
    `mysql-backup operator: MySQLBackup/MySQLRestore vs mariadb-dump | gzip -${GZIP_LEVEL} | S3 and back, ` +
    `${benchTables.length} tables × ${Number.isNaN(ROWS) ? "?" : count(ROWS)} rows, manager RSS`,
  run,
};
