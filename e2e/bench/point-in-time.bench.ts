// Point-in-time recovery: how far the binlog archive trails a steady write
// load, and how fast a MySQLRestore with pointInTime recovers against what an
// operator scripts by hand — a full restore, then the archived files through
// `mariadb-binlog | mariadb`.
//
//  1. a MariaDB of the benchmark's own with its binary log on (ROW; the
//     environment's shared server logs nothing), a manager process running
//     the mysql-backup operator, a MySQLBinlogArchive of that server (files
//     closed ARCHIVE_AGE_SECONDS after their first transaction), and a
//     database of 2 tables × BENCH_PITR_ROWS rows;
//  2. a full MySQLBackup; then WRITERS clients commit as fast as they can for
//     BENCH_PITR_SECONDS (single-row INSERTs and UPDATEs, each its own
//     transaction) while how far S3 trails the server is read every second
//     (now − status.lastArchivedTime, the newest transaction stored); then
//     the time from the last commit until the archive holds it;
//  3. recovery into a second, empty MariaDB: a MySQLRestore with pointInTime
//     at the last GTID, timed from create to Completed; the database dropped
//     there, the reference: a MySQLRestore of the same backup, then the
//     archived files the recovery needs downloaded and replayed with
//     `mariadb-binlog --start-position=<backup's GTID> --stop-position=<last
//     GTID> | mariadb`. Both must leave CHECKSUM TABLE equal to the source's,
//     or the benchmark fails.
//
// Ratios are ours / reference: below 1 is better for times and lag.
import { GetObjectCommand } from "@aws-sdk/client-s3";
import { mkdirSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import type { Connection } from "mysql2/promise";
import { findCondition, type KubeObject } from "@stateward/core";
import { MySQLInstanceKind } from "@stateward/mysql";
import {
  MySQLBackupKind,
  MySQLBinlogArchiveKind,
  MySQLRestoreKind,
  parseArchiveIndex,
  planReplay,
  type MySQLBackup,
  type MySQLBinlogArchive,
  type MySQLRestore,
} from "@stateward/operator-mysql-backup";
import { s3Client, startMariaDB, stopMariaDB, type EnvironmentInfo } from "../harness/index.ts";
import { createBackupPrerequisites } from "../support/backup-setup.ts";
import { deleteNamespace, freshNamespace, testClient } from "../support/kube.ts";
import { waitFor } from "../support/wait.ts";
import { benchTables, connect, createBenchDatabase, differences, dropDatabase, tableChecksums, type ServerLogin } from "./backup-dataset.ts";
import type { BenchResult, BenchRow, Benchmark } from "./benchmark.ts";
import { pipelineBinlogReplay } from "./dump-pipeline.ts";
import { startManagerProcess, type ManagerHandle } from "./manager-handle.ts";
import { deletePrefix, timedOperation } from "./operations.ts";

function setting(name: string, fallback: number): number {
  const raw = process.env[name]?.replaceAll("_", "").trim();
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${name} must be a positive whole number, not ${process.env[name]}`);
  return n;
}

/** Rows per table of the backed-up database: enough that the full restore is most of a recovery, as in life. */
const ROWS = () => setting("BENCH_PITR_ROWS", 250_000);
/** How long the writers write. */
const SECONDS = () => setting("BENCH_PITR_SECONDS", 60);
/** Clients committing at once: a busy application's few connections, on 2 cores. */
const WRITERS = 4;
/** rotation.maxFileAgeSeconds of the archive: the lag a file may reach before it is closed and uploaded. */
const ARCHIVE_AGE_SECONDS = 10;
const START_TIMEOUT_MS = 60_000;
const INSTANCE = "db";
const TARGET = "target";
const ARCHIVE = "arch";

const count = (n: number) => n.toLocaleString("en-US");
const load1 = () => Number((loadavg()[0] ?? 0).toFixed(2));
const mb = (bytes: number) => bytes / 1e6;
const mib = (bytes: number) => bytes / 2 ** 20;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

/** WRITERS clients committing single-row transactions until `until`; resolves with how many committed. */
async function writeSteadily(server: ServerLogin, db: string, rows: number, until: number): Promise<number> {
  let committed = 0;
  const writer = async (w: number) => {
    const conn = await connect(server);
    try {
      await conn.query(`USE \`${db}\``);
      for (let k = 0; Date.now() < until; k++) {
        // New orders (ids after the generated ones, one sequence per writer) and a shipment updated for every other.
        if (k % 2 === 0) await conn.query("INSERT INTO orders VALUES (?, 'bench-writer', ?, NOW(), ?, 'written during the point-in-time benchmark')", [rows + 1 + w + (k / 2) * WRITERS, k % 7, (k % 1000) / 10]);
        else await conn.query("UPDATE shipments SET quantity = quantity + 1 WHERE id = ?", [1 + ((k * 7919 + w) % rows)]);
        committed++;
      }
    } finally {
      await conn.end();
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  return committed;
}

async function gtidBinlogPos(conn: Connection): Promise<string> {
  const [rows] = await conn.query("SELECT @@gtid_binlog_pos AS pos");
  return String((rows as { pos: string }[])[0]?.pos ?? "");
}

async function run(env: EnvironmentInfo): Promise<BenchResult> {
  const rowsPerTable = ROWS();
  const seconds = SECONDS();
  const loadBefore = load1();
  const client = testClient(env.kubeconfig);
  const logDir = join(env.dir, "bench");
  mkdirSync(logDir, { recursive: true });
  const ns = await freshNamespace(client, "bench-pitr");
  const suffix = ns.slice(-6);
  const db = `bench_pitr_${suffix}`;
  const prefix = `bench-pitr-${suffix}`;
  const s3 = s3Client(env.s3);
  const storage = { s3: { bucket: env.s3.bucket, prefix, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } };
  const rows: BenchRow[] = [];
  const failures: string[] = [];
  const row = (metric: string, value: number, unit: string, reference?: number, note?: string) => rows.push({ metric, value, unit, reference, note });
  let manager: ManagerHandle | undefined;
  let source: Awaited<ReturnType<typeof startMariaDB>> | undefined;
  let target: Awaited<ReturnType<typeof startMariaDB>> | undefined;
  let admin: Connection | undefined;
  let targetAdmin: Connection | undefined;
  try {
    source = await startMariaDB({ dir: join(logDir, `pitr-source-${suffix}`), args: ["--log-bin=mysql-bin", "--server-id=1", "--binlog-format=ROW"] });
    target = await startMariaDB({ dir: join(logDir, `pitr-target-${suffix}`), args: ["--log-bin=mysql-bin", "--server-id=2", "--binlog-format=ROW"] });
    const sourceLogin: ServerLogin = { host: source.host, port: source.port, user: source.user, password: source.password };
    const targetLogin: ServerLogin = { host: target.host, port: target.port, user: target.user, password: target.password };
    admin = await connect(sourceLogin);
    targetAdmin = await connect(targetLogin);

    // 1. The manager first: it installs the CRDs the objects below need.
    manager = await startManagerProcess({ kubeconfig: env.kubeconfig, namespace: ns, operators: "mysql-backup" }, join(logDir, "point-in-time-manager.log"), START_TIMEOUT_MS);
    await createBackupPrerequisites(client, ns, env, sourceLogin);
    await client.create(MySQLInstanceKind.resource, {
      apiVersion: MySQLInstanceKind.apiVersion, kind: MySQLInstanceKind.kind, metadata: { name: TARGET, namespace: ns },
      spec: { host: target.host, port: target.port, adminSecretRef: { name: "mysql-admin" } },
    } as KubeObject);
    await createBenchDatabase(sourceLogin, db, rowsPerTable);
    await client.create<MySQLBinlogArchive>(MySQLBinlogArchiveKind.resource, {
      apiVersion: MySQLBinlogArchiveKind.apiVersion, kind: MySQLBinlogArchiveKind.kind, metadata: { name: ARCHIVE, namespace: ns },
      spec: { instanceRef: { name: INSTANCE }, storage, rotation: { maxFileAgeSeconds: ARCHIVE_AGE_SECONDS } },
    });
    const archiveNow = () => client.get<MySQLBinlogArchive>(MySQLBinlogArchiveKind.resource, ns, ARCHIVE);
    await waitFor("the archive streaming", async () => (findCondition((await archiveNow()).status?.conditions, "Ready")?.status === "True" ? true : undefined), 60_000, 200);

    // 2. The full backup, then the writes, the archive's lag read meanwhile.
    const backup = await timedOperation<MySQLBackup>(client, manager, MySQLBackupKind.resource, {
      apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name: "base", namespace: ns },
      spec: { instanceRef: { name: INSTANCE }, storage, databases: [db], compression: "gzip" },
    });
    const backupGtid = backup.obj.status?.position?.gtid ?? "";
    if (!backupGtid) throw new Error("the backup recorded no GTID position: nothing to replay after");
    const lags: number[] = [];
    const writeStart = Date.now();
    const until = writeStart + seconds * 1000;
    const sampling = (async () => {
      while (Date.now() < until) {
        await new Promise((r) => setTimeout(r, 1000));
        // How far S3 trails the server: what a lost server would take with it (status.lagSeconds is
        // written with the status, not every second, so it is not what is sampled here).
        // Before the writes the server was idle: nothing older than their start was missing from S3.
        const last = (await archiveNow()).status?.lastArchivedTime;
        lags.push(Math.max(0, (Date.now() - Math.max(writeStart, last ? Date.parse(last) : 0)) / 1000));
      }
    })();
    const committed = await writeSteadily(sourceLogin, db, rowsPerTable, until);
    const lastCommit = Date.now();
    await sampling;
    const writeSeconds = (lastCommit - writeStart) / 1000;
    const lastPosition = await gtidBinlogPos(admin);
    const lastGtid = lastPosition.split(",").find((g) => g.startsWith("0-")) ?? lastPosition;
    const archived = await waitFor("the archive to hold the last commit", async () => {
      const a = await archiveNow();
      return a.status?.archivedPosition === lastPosition ? a : undefined;
    }, 10 * ARCHIVE_AGE_SECONDS * 1000, 200);
    const catchUpSeconds = (Date.now() - lastCommit) / 1000;
    const original = await tableChecksums(admin, db);

    // 3. Recovery into the second server: ours, then the reference.
    const restoreSpec = (name: string, pointInTime: boolean): MySQLRestore =>
      ({
        apiVersion: MySQLRestoreKind.apiVersion, kind: MySQLRestoreKind.kind, metadata: { name, namespace: ns },
        spec: { instanceRef: { name: TARGET }, source: { backupRef: { name: "base" } }, ...(pointInTime ? { pointInTime: { archiveRef: { name: ARCHIVE }, gtid: lastGtid } } : {}) },
      });
    const pitr = await timedOperation<MySQLRestore>(client, manager, MySQLRestoreKind.resource, restoreSpec("to-last-gtid", true));
    const afterPitr = differences(original, await tableChecksums(targetAdmin, db));
    if (afterPitr.length > 0) failures.push(`after the point-in-time MySQLRestore, CHECKSUM TABLE differs from the source's: ${afterPitr.join("; ")}`);
    const replayed = pitr.obj.status?.pointInTime?.transactions ?? 0;
    if (replayed !== committed) failures.push(`the point-in-time restore replayed ${count(replayed)} transactions; the writers committed ${count(committed)} after the backup`);
    await dropDatabase(targetAdmin, db);

    const full = await timedOperation<MySQLRestore>(client, manager, MySQLRestoreKind.resource, restoreSpec("backup-only", false));
    const location = archived.status?.location ?? "";
    const folder = location.replace(/^s3:\/\/[^/]+\//, "");
    const index = parseArchiveIndex(Buffer.from((await (await s3.send(new GetObjectCommand({ Bucket: env.s3.bucket, Key: `${folder}index.json` }))).Body?.transformToByteArray()) ?? []));
    const plan = planReplay(index, backupGtid, { gtid: lastGtid });
    const pipe = await pipelineBinlogReplay({ server: targetLogin, s3, bucket: env.s3.bucket, keys: plan.files.map((f) => `${folder}${f.key}`), after: backupGtid, until: lastGtid });
    const afterPipe = differences(original, await tableChecksums(targetAdmin, db));
    if (afterPipe.length > 0) failures.push(`after the reference (restore + mariadb-binlog | mariadb), CHECKSUM TABLE differs from the source's: ${afterPipe.join("; ")}`);

    const pipeSeconds = pipe.ms / 1000;
    const reference = full.seconds + pipeSeconds;
    const sortedLags = [...lags].sort((a, b) => a - b);
    const BOUND = `reference: rotation.maxFileAgeSeconds (${ARCHIVE_AGE_SECONDS} s): a file is stored this long after its first transaction, so S3 trails by up to that plus the upload while the stream keeps up`;
    const HAND = "reference: MySQLRestore of the same backup + download + mariadb-binlog | mariadb; ratio < 1 is better";
    row(`rows of the backed-up database (${benchTables.length} tables × ${count(rowsPerTable)})`, benchTables.length * rowsPerTable, "");
    row("full backup: MySQLBackup create -> Completed", backup.seconds, "s");
    row(`writes: transactions committed by ${WRITERS} clients after the backup`, committed, "");
    row("writes: transactions per second", committed / writeSeconds, "tx/s");
    row("S3 behind the server while writing (now − newest archived transaction), median", percentile(sortedLags, 50), "s", ARCHIVE_AGE_SECONDS, BOUND);
    row("S3 behind the server while writing, 95th percentile", percentile(sortedLags, 95), "s", ARCHIVE_AGE_SECONDS, BOUND);
    row("S3 behind the server while writing, largest", sortedLags.at(-1) ?? NaN, "s", ARCHIVE_AGE_SECONDS, BOUND);
    row("last commit -> archived in S3", catchUpSeconds, "s", ARCHIVE_AGE_SECONDS, BOUND);
    row("archived binlog files the recovery needs", plan.files.length, "");
    row("archived binlog bytes the recovery needs", mb(plan.bytes), "MB");
    row("transactions replayed by the point-in-time restore", replayed, "", committed, "reference: committed after the backup");
    row("point-in-time recovery: MySQLRestore create -> Completed", pitr.seconds, "s", reference, HAND);
    row("  of which the full restore alone (same backup, MySQLRestore)", full.seconds, "s");
    row("  replay: point-in-time minus the full restore alone", pitr.seconds - full.seconds, "s", pipeSeconds, "reference: download + mariadb-binlog | mariadb of the same files; ratio < 1 is better");
    row("point-in-time recovery: CPU seconds, manager process", pitr.usage.cpuSeconds, "s", full.usage.cpuSeconds + pipe.cpuSeconds, "reference: the full restore's manager CPU + mariadb-binlog + mariadb + download");
    row("manager peak RSS during the point-in-time recovery", mib(pitr.usage.peakBytes), "MiB");
    row("tables identical after the point-in-time restore (CHECKSUM TABLE)", benchTables.length - afterPitr.length, "", benchTables.length);
    row("tables identical after the reference (CHECKSUM TABLE)", benchTables.length - afterPipe.length, "", benchTables.length);
    row("machine load average (1 min) before the run", loadBefore, "");
    row("machine load average (1 min) after the run", load1(), "");
    return {
      rows,
      failures,
      details: { namespace: ns, database: db, rowsPerTable, writers: WRITERS, seconds, archiveAgeSeconds: ARCHIVE_AGE_SECONDS, lags, backupGtid, lastGtid, pitr: { seconds: pitr.seconds, status: pitr.obj.status, usage: pitr.usage }, full: { seconds: full.seconds, usage: full.usage }, pipeline: pipe },
    };
  } finally {
    await manager?.stop().catch(() => manager?.kill());
    await admin?.end().catch(() => undefined);
    await targetAdmin?.end().catch(() => undefined);
    for (const server of [source, target]) if (server) await stopMariaDB(server).catch((err: unknown) => console.error(`point-in-time benchmark: could not stop mariadbd ${server.port}: ${String(err)}`));
    await deletePrefix(s3, env.s3.bucket, prefix).catch((err: unknown) => console.error(`point-in-time benchmark: could not empty s3://${env.s3.bucket}/${prefix}/: ${String(err)}`));
    s3.destroy();
    await deleteNamespace(client, ns).catch(() => undefined);
  }
}

export const pointInTimeBenchmark: Benchmark = {
  name: "point-in-time",
  description: `point-in-time recovery: binlog archive lag under ${WRITERS} writers, and MySQLRestore pointInTime vs a restore + mariadb-binlog | mariadb`,
  run,
};
