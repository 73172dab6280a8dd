// Binlog archiving against a real MariaDB (binary log on) and the real S3:
// the manager-side stream archives every transaction exactly once — across a
// stop and a restart — into files the stock `mariadb-binlog` reads and a
// second server replays to the same data; a GTID gap is reported and nothing
// past it archived; and the MySQLBinlogArchive kind runs it through
// Kubernetes (status, Events, stopped on deletion).
import type { S3Client } from "@aws-sdk/client-s3";
import { execFile, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import mysql from "mysql2/promise";
import { Manager, captureLogs, findCondition } from "@stateward/core";
import {
  type BinlogArchiver,
  MySQLBinlogArchiveKind,
  TransactionAssembler,
  createMySQLBackupOperator,
  formatGtid,
  readBinlogFile,
  type ArchiveIndex,
  type MySQLBinlogArchive,
} from "@stateward/operator-mysql-backup";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { s3Client, startMariaDB, type MariaDBEndpoint } from "../../harness/index.ts";
import { createBackupPrerequisites } from "../../support/backup-setup.ts";
import { binlogPosition, getObject as getObjectIn, readArchiveIndex, startArchiver as startArchiverOn } from "../../support/binlog-archive.ts";
import { eventsAbout } from "../../support/events.ts";
import { deleteNamespace, freshNamespace, kubeConfigFrom, testClient } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";

const env = inject("environment");
const run = promisify(execFile);
const suffix = randomBytes(3).toString("hex");
const SOURCE_SERVER_ID = 1;
let s3: S3Client;
let dir: string;
let source: MariaDBEndpoint & { pid: number };
let replay: MariaDBEndpoint & { pid: number };

const connect = (ep: MariaDBEndpoint) => mysql.createConnection({ host: ep.host, port: ep.port, user: ep.user, password: ep.password, charset: "utf8mb4" });

const getObject = (key: string): Promise<Buffer> => getObjectIn(s3, env.s3.bucket, key);
const archiveIndex = (folder: string): Promise<ArchiveIndex> => readArchiveIndex(s3, env.s3.bucket, folder);

/** The archiver on `prefix`, streaming from `target()` (the source by default). */
const startArchiver = (prefix: string, target: () => MariaDBEndpoint = () => source) => startArchiverOn(env.s3, prefix, target);

/** Waits until the archive holds everything the server's binlog has. */
async function caughtUp(archiver: BinlogArchiver): Promise<string> {
  return waitFor("the archive to hold the server's binlog position", async () => {
    const server = await binlogPosition(source);
    return archiver.progress().archivedPosition === server ? server : undefined;
  }, 60_000, 200);
}

interface ArchiveContents {
  index: ArchiveIndex;
  /** GTIDs of every archived transaction, in file order. */
  gtids: string[];
  /** The downloaded files, in order. */
  paths: string[];
}

/** Downloads the index and every file, checks each against the index, and reads the transactions back. */
async function download(prefix: string, into: string): Promise<ArchiveContents> {
  const index = await archiveIndex(prefix);
  const gtids: string[] = [];
  const paths: string[] = [];
  for (const f of index.files) {
    const bytes = await getObject(`${prefix}/${f.key}`);
    expect(bytes.length).toBe(f.size);
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(f.sha256);
    const assembler = new TransactionAssembler();
    const inFile = readBinlogFile(bytes).flatMap((e) => {
      const item = assembler.push(e);
      return item.kind === "transaction" ? [formatGtid(item.transaction.gtid)] : [];
    });
    expect([inFile[0], inFile.at(-1), inFile.length]).toEqual([f.firstGtid, f.lastGtid, f.transactions]);
    gtids.push(...inFile);
    const path = join(into, f.key);
    writeFileSync(path, bytes);
    paths.push(path);
  }
  return { index, gtids, paths };
}

/** The sequence number of domain 0 in a GTID position ("" is 0). */
const seqOf = (position: string): number => (position === "" ? 0 : Number(/(?:^|,)0-\d+-(\d+)/.exec(position)?.[1]));

/** `0-1-1` … `0-1-last`. */
const sequence = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `0-${SOURCE_SERVER_ID}-${from + i}`);

beforeAll(async () => {
  s3 = s3Client(env.s3);
  dir = mkdtempSync(join(tmpdir(), "sw-binlog-archive-"));
  source = await startMariaDB({ dir: join(dir, "source"), args: ["--log-bin=mysql-bin", `--server-id=${SOURCE_SERVER_ID}`, "--binlog-format=ROW"] });
  replay = await startMariaDB({ dir: join(dir, "replay"), args: ["--server-id=2"] });
}, 180_000);

afterAll(() => {
  for (const server of [source, replay]) {
    try {
      if (server) process.kill(server.pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("the binlog archiver", () => {
  const db = `sw_archive_${suffix}`;

  it("archives every transaction exactly once across a stop and a restart, in files mariadb-binlog reads and a server replays", async () => {
    const prefix = `binlog-archive-test/${suffix}/engine`;
    // The harness keeps its set-up out of the binlog: the archive starts at the very first transaction.
    expect(await binlogPosition(source)).toBe("");
    let archiving = startArchiver(prefix);
    await waitFor("the stream to start", () => archiving.reports.find((p) => p.streaming), 30_000);

    const conn = await connect(source);
    await conn.query(`CREATE DATABASE ${db}`);
    await conn.query(`CREATE TABLE ${db}.orders (id INT PRIMARY KEY, qty INT NOT NULL, note VARCHAR(64)) ENGINE=InnoDB`);
    await conn.query(`CREATE TABLE ${db}.audit (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(64)) ENGINE=Aria`);
    // Writes go on while the archiver runs, is stopped (with a file open) and runs again.
    let written = 0;
    let restarted!: () => void;
    const restart = new Promise<void>((resolve) => (restarted = resolve));
    const workload = (async () => {
      for (let i = 1; i <= 300; i++) {
        if (i % 10 === 0) {
          await conn.query("BEGIN");
          await conn.query(`INSERT INTO ${db}.orders VALUES (?, ?, ?)`, [i, i, `tx ${i}`]);
          await conn.query(`UPDATE ${db}.orders SET qty = qty + 1 WHERE id = ?`, [i - 1]);
          await conn.query("COMMIT");
        } else if (i % 25 === 0) {
          await conn.query(`INSERT INTO ${db}.audit (what) VALUES (?)`, [`non-transactional ${i}`]);
        } else {
          await conn.query(`INSERT INTO ${db}.orders VALUES (?, ?, ?)`, [i, i, `row ${i}`]);
        }
        if (i === 150) await conn.query(`ALTER TABLE ${db}.orders ADD INDEX by_qty (qty)`);
        written = i;
        // The last third only once the archiver runs again.
        if (i === 200) await restart;
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    await waitFor("a file archived while writes go on", () => (archiving.archiver.progress().files >= 1 && written >= 50) || undefined, 60_000, 20);
    await archiving.stop();
    const whileStopped = await connect(source);
    for (let i = 1; i <= 5; i++) await whileStopped.query(`INSERT INTO ${db}.audit (what) VALUES (?)`, [`while stopped ${i}`]);
    await whileStopped.end();
    archiving = startArchiver(prefix);
    restarted();
    await workload;
    await conn.end();
    const end = await caughtUp(archiving.archiver);
    await archiving.stop();

    const last = seqOf(end);
    const files = mkdtempSync(join(dir, "download-"));
    const archive = await download(prefix, files);
    // Every transaction once, in order: no gap, no duplicate across the restart.
    expect(archive.gtids).toEqual(sequence(1, last));
    expect(archive.index).toMatchObject({ startPosition: "", position: end });
    expect(archive.index.files.length).toBeGreaterThan(1);
    for (const f of archive.index.files) expect(f).toMatchObject({ serverId: SOURCE_SERVER_ID, source: `${source.host}:${source.port}` });

    // The stock tool reads every file and sees the same transactions.
    const { stdout } = await run("mariadb-binlog", archive.paths, { maxBuffer: 64 * 1024 * 1024 });
    expect([...stdout.matchAll(/\tGTID (\d+-\d+-\d+)/g)].map((m) => m[1])).toEqual(archive.gtids);
    expect(stdout).not.toMatch(/not closed properly|Warning/i);

    // Replayed into an empty server, the archive gives the same data.
    await new Promise<void>((resolve, reject) => {
      const reader = spawn("mariadb-binlog", archive.paths, { stdio: ["ignore", "pipe", "pipe"] });
      const client = spawn("mariadb", ["-h", replay.host, "-P", String(replay.port), "-u", replay.user, `--password=${replay.password}`], { stdio: ["pipe", "ignore", "pipe"] });
      let errors = "";
      reader.stderr.on("data", (d: Buffer) => (errors += d.toString()));
      client.stderr.on("data", (d: Buffer) => (errors += d.toString()));
      reader.stdout.pipe(client.stdin);
      client.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`replay failed (${code}): ${errors}`))));
    });
    const checksums = async (ep: MariaDBEndpoint) => {
      const c = await connect(ep);
      try {
        const [rows] = await c.query<mysql.RowDataPacket[]>(`CHECKSUM TABLE ${db}.orders, ${db}.audit EXTENDED`);
        const [count] = await c.query<mysql.RowDataPacket[]>(`SELECT COUNT(*) AS n FROM ${db}.orders`);
        return { rows: rows.map((r): [string, string] => [String(r.Table), String(r.Checksum)]), count: Number(count[0]?.n) };
      } finally {
        await c.end();
      }
    };
    const original = await checksums(source);
    expect(original.count).toBe(294);
    expect(await checksums(replay)).toEqual(original);
  }, 180_000);

  it("reports a GTID gap and archives nothing past it", async () => {
    const prefix = `binlog-archive-test/${suffix}/gap`;
    const archiving = startArchiver(prefix);
    try {
      await waitFor("the stream to start", () => archiving.reports.find((p) => p.streaming), 30_000);
      const conn = await connect(source);
      await conn.query(`CREATE DATABASE IF NOT EXISTS ${db}_gap`);
      await conn.query(`CREATE TABLE ${db}_gap.t (id INT PRIMARY KEY) ENGINE=InnoDB`);
      await conn.query(`INSERT INTO ${db}_gap.t VALUES (1)`);
      const before = await caughtUp(archiving.archiver);
      const seq = seqOf(before);
      // A session may number its next transaction itself: the binlog then skips sequence numbers.
      await conn.query("SET SESSION gtid_seq_no = ?", [seq + 5]);
      await conn.query(`INSERT INTO ${db}_gap.t VALUES (2)`);
      await conn.end();
      const reported = await waitFor("the gap to be reported", () => archiving.reports.find((p) => p.error?.reason === "GtidGap"), 30_000);
      expect(reported.error?.message).toBe(
        `GTID gap: the server sent 0-1-${seq + 5} after 0-1-${seq}; sequence number ${seq + 1} is missing from the stream`,
      );
      expect(archiving.archiver.progress().archivedPosition).toBe(before);
      const index = await archiveIndex(prefix);
      expect(index.position).toBe(before);
    } finally {
      await archiving.stop();
    }
  }, 120_000);
});

describe("MySQLBinlogArchive through Kubernetes", () => {
  const client = testClient(env.kubeconfig);
  const AR = MySQLBinlogArchiveKind.resource;
  const db = `sw_archive_op_${suffix}`;
  let ns: string;
  let manager: Manager;

  beforeAll(async () => {
    ns = await freshNamespace(client, "binlog-archive");
    manager = new Manager({ kubeConfig: kubeConfigFrom(env.kubeconfig), namespaces: [ns], logger: captureLogs().logger, gracefulShutdownMs: 10_000 }).load(
      createMySQLBackupOperator(),
    );
    await manager.start();
    await createBackupPrerequisites(client, ns, env, source);
  }, 180_000);

  afterAll(async () => {
    await manager?.stop();
    if (ns) await deleteNamespace(client, ns);
  });

  it("archives the instance's binlog, reports position, lag and the source, and stops when deleted", async () => {
    const start = await binlogPosition(source);
    await client.create<MySQLBinlogArchive>(AR, {
      apiVersion: MySQLBinlogArchiveKind.apiVersion, kind: MySQLBinlogArchiveKind.kind, metadata: { name: "orders", namespace: ns },
      spec: {
        instanceRef: { name: "db" },
        rotation: { maxFileAgeSeconds: 5 },
        storage: { s3: { bucket: env.s3.bucket, prefix: `binlog-archive-test/${suffix}`, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } },
      },
    });
    await waitFor("the archive Ready", async () => {
      const a = await client.get<MySQLBinlogArchive>(AR, ns, "orders");
      return findCondition(a.status?.conditions, "Ready")?.status === "True" ? a : undefined;
    }, 60_000, 250);
    const conn = await connect(source);
    await conn.query(`CREATE DATABASE ${db}`);
    await conn.query(`CREATE TABLE ${db}.t (id INT PRIMARY KEY) ENGINE=InnoDB`);
    for (let i = 1; i <= 20; i++) await conn.query(`INSERT INTO ${db}.t VALUES (?)`, [i]);
    const end = await binlogPosition(source);
    const archived = await waitFor("the status to show the last transaction archived", async () => {
      const a = await client.get<MySQLBinlogArchive>(AR, ns, "orders");
      return a.status?.lastArchivedGtid === end ? a : undefined;
    }, 60_000, 250);
    expect(archived.status).toMatchObject({
      location: `s3://${env.s3.bucket}/binlog-archive-test/${suffix}/${ns}/orders/`,
      startPosition: start,
      archivedPosition: end,
      source: `server ${SOURCE_SERVER_ID} at ${source.host}:${source.port}`,
    });
    expect(archived.status?.lastArchivedTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(findCondition(archived.status?.conditions, "Ready")).toMatchObject({ status: "True", reason: "Archiving" });
    await waitFor("the lag to return to 0", async () => {
      const a = await client.get<MySQLBinlogArchive>(AR, ns, "orders");
      return a.status?.lagSeconds === 0 ? a : undefined;
    }, 60_000, 250);
    const events = await eventsAbout(client, ns, { name: "orders", kind: "MySQLBinlogArchive" });
    expect(events.map((e) => e.reason)).toContain("Streaming");

    await client.delete(AR, ns, "orders");
    await waitFor("the stream to stop", () => (manager.background.list().some((t) => t.name.includes(`${ns}/orders`)) ? undefined : true), 30_000, 100);
    await conn.query(`INSERT INTO ${db}.t VALUES (21)`);
    await conn.end();
    await new Promise((r) => setTimeout(r, 7_000));
    const index = await archiveIndex(`binlog-archive-test/${suffix}/${ns}/orders`);
    // The archive stays in S3 (it is what a restore reads); nothing after the deletion went into it.
    expect(index.position).toBe(end);
  }, 180_000);
});

describe("the binlog archiver across a switchover", () => {
  const db = `sw_archive_sw_${suffix}`;
  let replica: MariaDBEndpoint & { pid: number };

  beforeAll(async () => {
    replica = await startMariaDB({ dir: join(dir, "replica"), args: ["--log-bin=mysql-bin", "--server-id=3", "--binlog-format=ROW", "--log-slave-updates"] });
  }, 120_000);

  afterAll(() => {
    try {
      if (replica) process.kill(replica.pid, "SIGKILL");
    } catch {
      // gone already
    }
  });

  it("follows the new primary: the archive goes on after the last GTID of the old one, without gap or duplicate", async () => {
    const prefix = `binlog-archive-test/${suffix}/switchover`;
    const primary = await connect(source);
    const standby = await connect(replica);
    // The replica starts where the primary is now, as a cluster's replica would after its seeding.
    await standby.query("SET GLOBAL gtid_slave_pos = ?", [await binlogPosition(source)]);
    await standby.query("CHANGE MASTER TO master_host = ?, master_port = ?, master_user = ?, master_password = ?, master_use_gtid = slave_pos", [
      source.host, source.port, source.user, source.password,
    ]);
    await standby.query("START SLAVE");
    let target: MariaDBEndpoint = source;
    const archiving = startArchiver(prefix, () => target);
    const { archiver, reports } = archiving;
    try {
      await waitFor("the stream to start", () => reports.find((p) => p.streaming), 30_000);
      const start = archiver.progress().archivedPosition;
      await primary.query(`CREATE DATABASE ${db}`);
      await primary.query(`CREATE TABLE ${db}.t (id INT PRIMARY KEY, at VARCHAR(16)) ENGINE=InnoDB`);
      for (let i = 1; i <= 30; i++) await primary.query(`INSERT INTO ${db}.t VALUES (?, 'old primary')`, [i]);
      // A planned switchover: the old primary stops taking writes, the replica catches up and takes over.
      await primary.query("SET GLOBAL read_only = 1");
      const handover = await binlogPosition(source);
      await waitFor("the replica to catch up", async () => {
        const [rows] = await standby.query<mysql.RowDataPacket[]>("SELECT @@gtid_slave_pos AS p");
        return rows[0]?.p === handover || undefined;
      }, 30_000, 100);
      await standby.query("STOP SLAVE");
      await standby.query("RESET SLAVE ALL");
      target = replica;
      for (let i = 31; i <= 60; i++) await standby.query(`INSERT INTO ${db}.t VALUES (?, 'new primary')`, [i]);
      const end = await binlogPosition(replica);
      await waitFor("the archive to hold the new primary's position", () => (archiver.progress().archivedPosition === end ? true : undefined), 60_000, 200);

      const archive = await download(prefix, mkdtempSync(join(dir, "download-")));
      const first = seqOf(start);
      const last = seqOf(end);
      const handoverSeq = seqOf(handover);
      // Numbered on, one by one, by the old primary up to the handover and by the new one after it.
      expect(archive.gtids).toEqual([
        ...Array.from({ length: handoverSeq - first }, (_, i) => `0-1-${first + 1 + i}`),
        ...Array.from({ length: last - handoverSeq }, (_, i) => `0-3-${handoverSeq + 1 + i}`),
      ]);
      expect(archive.index.files.at(-1)).toMatchObject({ serverId: 3, source: `${replica.host}:${replica.port}`, lastGtid: `0-3-${last}` });
      expect(new Set(archive.index.files.map((f) => f.serverId))).toEqual(new Set([SOURCE_SERVER_ID, 3]));
      // A switchover is not an error.
      expect(reports.filter((p) => p.error)).toEqual([]);
      const { stdout } = await run("mariadb-binlog", archive.paths, { maxBuffer: 64 * 1024 * 1024 });
      expect([...stdout.matchAll(/\tGTID (\d+-\d+-\d+)/g)].map((m) => m[1])).toEqual(archive.gtids);
    } finally {
      await archiving.stop();
      await primary.query("SET GLOBAL read_only = 0");
      await primary.end();
      await standby.end();
    }
  }, 180_000);
});
