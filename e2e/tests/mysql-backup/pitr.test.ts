// Point-in-time recovery through Kubernetes, the user's story: a workload
// writes continuously into a MariaDB (binary log on, a server of this test's
// own: the environment's shared one logs nothing), a MySQLBinlogArchive
// archives it, a MySQLBackup is taken, writes go on, and a table is dropped
// by mistake at time T. A MySQLRestore with pointInTime T − 1 s, restoring
// onto that same server, must bring the dropped table back and hold every
// row committed at or before T − 1 s and none after; one to a GTID must stop
// exactly there. What to expect is a reference copy taken from the server
// before the restores (every row, with the commit second the row records
// itself: `created = NOW()` in UTC, the header time of its binlog events).
//
// And the gaps, each a Failed restore with its reason and an Event, the
// target untouched (fingerprint): a corrupted binlog object in S3
// (ChecksumMismatch), a point before any backup (NoBackupBeforePoint), a
// point in the future (PointInFuture); invalid specs are refused by the API
// server.
import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import mysql from "mysql2/promise";
import { Manager, captureLogs, findCondition, type KubeObject } from "@stateward/core";
import {
  MySQLBackupKind,
  MySQLBinlogArchiveKind,
  MySQLRestoreKind,
  TransactionAssembler,
  createMySQLBackupOperator,
  formatGtid,
  readBinlogFile,
  type ArchiveIndex,
  type MySQLBackup,
  type MySQLBinlogArchive,
  type MySQLRestore,
} from "@stateward/operator-mysql-backup";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { repoRoot, s3Client, startMariaDB, tools, type MariaDBEndpoint } from "../../harness/index.ts";
import { backupCompleted, createBackupPrerequisites, createMySQLInstance, restoreFinished } from "../../support/backup-setup.ts";
import { getObject as getObjectIn, readArchiveIndex } from "../../support/binlog-archive.ts";
import { eventsAbout } from "../../support/events.ts";
import { deleteNamespace, freshNamespace, kubeConfigFrom, testClient } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import { fingerprint, id, type DatabaseFingerprint } from "./torture.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const AR = MySQLBinlogArchiveKind.resource;
const BK = MySQLBackupKind.resource;
const RS = MySQLRestoreKind.resource;
const suffix = randomBytes(3).toString("hex");
const db = `sw_pitr_op_${suffix}`;
const prefix = `pitr-test/${suffix}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let dir: string;
let server: MariaDBEndpoint & { pid: number };
let s3: S3Client;
let ns: string;
let manager: Manager;
let admin: mysql.Connection;

type Row = { id: number; v: string; created: string };

const connect = (ep: MariaDBEndpoint) =>
  mysql.createConnection({ host: ep.host, port: ep.port, user: ep.user, password: ep.password, charset: "utf8mb4", dateStrings: true, timezone: "Z" });

const storage = () => ({ s3: { bucket: env.s3.bucket, prefix, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } });

/** "2026-12-02T03:14:15Z" as a DATETIME literal of the UTC session: "2026-12-02 03:14:15". */
const asDatetime = (at: Date) => at.toISOString().slice(0, 19).replace("T", " ");

async function value(sql: string): Promise<string> {
  const [rows] = await admin.query<mysql.RowDataPacket[]>(sql);
  return String(Object.values(rows[0] ?? {})[0] ?? "");
}

async function rowsOf(table: string): Promise<Row[]> {
  const [rows] = await admin.query<mysql.RowDataPacket[]>(`SELECT id, v, created FROM ${id(db)}.${id(table)} ORDER BY id`);
  return rows.map((r) => ({ id: Number(r.id), v: String(r.v), created: String(r.created) }));
}

/** One checksum of a table's rows, as the reference and the restored copy are compared. */
const digest = (rows: Row[]) => createHash("sha256").update(JSON.stringify(rows)).digest("hex");

const getObject = (key: string): Promise<Buffer> => getObjectIn(s3, env.s3.bucket, key);

const archiveFolder = () => `${prefix}/${ns}/arch`;
const archiveIndex = (): Promise<ArchiveIndex> => readArchiveIndex(s3, env.s3.bucket, archiveFolder());

/** The commit time (whole seconds, as the binlog records it) of an archived transaction. */
async function commitTime(gtid: string): Promise<Date> {
  const index = await archiveIndex();
  for (const f of index.files) {
    const assembler = new TransactionAssembler();
    for (const event of readBinlogFile(await getObject(`${archiveFolder()}/${f.key}`))) {
      const item = assembler.push(event);
      if (item.kind === "transaction" && formatGtid(item.transaction.gtid) === gtid) return new Date(item.transaction.lastTimestamp * 1000);
    }
  }
  throw new Error(`transaction ${gtid} is not in the archive`);
}

function pointInTimeRestore(name: string, pointInTime: Record<string, unknown>, extra: Record<string, unknown> = {}): MySQLRestore {
  return {
    apiVersion: MySQLRestoreKind.apiVersion, kind: MySQLRestoreKind.kind, metadata: { name, namespace: ns },
    spec: { instanceRef: { name: "db" }, databases: [db], pointInTime: { archiveRef: { name: "arch" }, ...pointInTime }, ...extra },
  };
}

const finished = (name: string, timeoutMs?: number) => restoreFinished(client, ns, name, timeoutMs);

/** A MySQLBackup of the test's database, once Completed. */
async function takeBackup(name: string): Promise<MySQLBackup> {
  await client.create<MySQLBackup>(BK, {
    apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name, namespace: ns },
    spec: { instanceRef: { name: "db" }, databases: [db], storage: storage() },
  });
  return backupCompleted(client, ns, name);
}

/** The server's whole position archived: the archive holds every transaction so far. */
async function archivedEverything(): Promise<void> {
  const position = await value("SELECT @@gtid_binlog_pos");
  await waitFor("the archive to hold the server's position", async () => {
    const a = await client.get<MySQLBinlogArchive>(AR, ns, "arch");
    return a.status?.archivedPosition === position || undefined;
  }, 60_000, 250);
}

// What the workload and the mistake left: filled in by beforeAll.
let backupPosition: string;
let ordersReference: Row[];
let keptReference: Row[];
/** The drop's commit second, as its binlog events record it. */
let dropTime: Date;
/** An insert after the backup and after the last write to `kept`, before the drop; its GTID and row id. */
let checkpoint: { gtid: string; id: number };
/** The GTID of a CREATE TABLE between the backup and the checkpoint. */
let createScratch: string;

beforeAll(async () => {
  s3 = s3Client(env.s3);
  dir = mkdtempSync(join(tmpdir(), "sw-pitr-"));
  server = await startMariaDB({ dir: join(dir, "server"), args: ["--log-bin=mysql-bin", "--server-id=1", "--binlog-format=ROW"] });
  admin = await connect(server);
  await admin.query("SET time_zone = '+00:00'");
  ns = await freshNamespace(client, "pitr");
  manager = new Manager({ kubeConfig: kubeConfigFrom(env.kubeconfig), namespaces: [ns], logger: captureLogs().logger, gracefulShutdownMs: 10_000 }).load(createMySQLBackupOperator());
  await manager.start();
  await createBackupPrerequisites(client, ns, env, server);

  // The archive first: it begins at the server's position of the moment, and the backup must be within it.
  await client.create<MySQLBinlogArchive>(AR, {
    apiVersion: MySQLBinlogArchiveKind.apiVersion, kind: MySQLBinlogArchiveKind.kind, metadata: { name: "arch", namespace: ns },
    spec: { instanceRef: { name: "db" }, rotation: { maxFileAgeSeconds: 5 }, storage: storage() },
  });
  await waitFor("the archive Ready", async () => {
    const a = await client.get<MySQLBinlogArchive>(AR, ns, "arch");
    return findCondition(a.status?.conditions, "Ready")?.status === "True" || undefined;
  }, 60_000, 250);

  await admin.query(`CREATE DATABASE ${id(db)}`);
  for (const t of ["orders", "kept"]) {
    await admin.query(`CREATE TABLE ${id(db)}.${id(t)} (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(64) NOT NULL, created DATETIME NOT NULL) ENGINE=InnoDB`);
  }
  // The workload: an insert every ~20 ms into orders, recording each one's GTID; into kept too while `keptWrites`.
  const writer = await connect(server);
  await writer.query("SET time_zone = '+00:00'");
  const gtidOf = new Map<number, string>();
  let writing = true;
  let keptWrites = true;
  let n = 0;
  const workload = (async () => {
    while (writing) {
      n += 1;
      const [res] = await writer.query<mysql.ResultSetHeader>(`INSERT INTO ${id(db)}.orders (v, created) VALUES (?, NOW())`, [`order ${n}`]);
      const [g] = await writer.query<mysql.RowDataPacket[]>("SELECT @@last_gtid AS g");
      gtidOf.set(res.insertId, String(g[0]?.g));
      if (keptWrites && n % 5 === 0) await writer.query(`INSERT INTO ${id(db)}.kept (v, created) VALUES (?, NOW())`, [`kept ${n}`]);
      await sleep(20);
    }
  })();
  try {
    await sleep(1_500);
    const backup = await takeBackup("full");
    backupPosition = backup.status?.position?.gtid ?? "";
    expect(backupPosition).toMatch(/^0-1-\d+$/);
    // kept changes after the backup too (only the replay brings those rows back), then rests.
    await sleep(700);
    // A table that lived only between the backup and the checkpoint: the ReplayFailed test re-creates it on the target.
    // Under USE: a replay filtered to the restored databases takes a statement by its default database, as mariadb-binlog --database does.
    await admin.query(`USE ${id(db)}`);
    await admin.query(`CREATE TABLE ${id(db)}.scratch (id INT PRIMARY KEY) ENGINE=InnoDB`);
    const [created] = await admin.query<mysql.RowDataPacket[]>("SELECT @@last_gtid AS g");
    createScratch = String(created[0]?.g);
    await admin.query(`DROP TABLE ${id(db)}.scratch`);
    await sleep(800);
    keptWrites = false;
    await sleep(300);
    keptReference = await rowsOf("kept");
    const lastId = Math.max(...gtidOf.keys());
    checkpoint = { gtid: gtidOf.get(lastId) ?? "", id: lastId };
    // The mistake comes more than a second later: T − 1 s is after every write to kept.
    await sleep(2_200);
    await admin.query(`DROP TABLE ${id(db)}.kept`);
    const [g] = await admin.query<mysql.RowDataPacket[]>("SELECT @@last_gtid AS g");
    const dropGtid = String(g[0]?.g);
    // Writes go on after the mistake.
    await sleep(2_500);
    writing = false;
    await workload;
    ordersReference = await rowsOf("orders");
    await archivedEverything();
    dropTime = await commitTime(dropGtid);
  } finally {
    writing = false;
    await workload.catch(() => undefined);
    await writer.end();
  }
}, 300_000);

afterAll(async () => {
  await manager?.stop();
  if (ns) await deleteNamespace(client, ns);
  await admin?.end();
  try {
    if (server) process.kill(server.pid, "SIGKILL");
  } catch {
    // gone already
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("MySQLRestore.pointInTime", () => {
  it("statements run without a default database (qualified names, no USE) are replayed when the restore covers every database of the backup", async () => {
    // First: a replay across an earlier restore onto this server is not possible (README, limits), and the later tests' points are before these statements.
    // A session that never ran USE: the binlog records these with an empty default database.
    const bare = await connect(server);
    let last: string;
    try {
      await bare.query(`CREATE TABLE ${id(db)}.added (id INT PRIMARY KEY) ENGINE=InnoDB`);
      await bare.query(`INSERT INTO ${id(db)}.added VALUES (1), (2)`);
      await bare.query(`ALTER TABLE ${id(db)}.orders ADD COLUMN note VARCHAR(16) NULL`);
      await bare.query(`CREATE TABLE ${id(db)}.doomed (id INT PRIMARY KEY) ENGINE=InnoDB`);
      await bare.query(`DROP TABLE ${id(db)}.doomed`);
      const [g] = await bare.query<mysql.RowDataPacket[]>("SELECT @@last_gtid AS g");
      last = String(g[0]?.g);
    } finally {
      await bare.end();
    }
    await archivedEverything();
    // A restore keeps the target's tables the backup lacks: the replay re-creates `added`, so it must not exist.
    await admin.query(`DROP TABLE ${id(db)}.added`);
    await client.create<MySQLRestore>(RS, pointInTimeRestore("no-default-db", { gtid: last }, { source: { backupRef: { name: "full" } } }));
    const restore = await finished("no-default-db");
    expect(findCondition(restore.status?.conditions, "Ready"), JSON.stringify(restore.status)).toMatchObject({ status: "True", reason: "Completed" });
    expect(restore.status?.pointInTime).toMatchObject({ lastReplayedGtid: last });
    const columns = async (table: string) => {
      const [rows] = await admin.query<mysql.RowDataPacket[]>("SELECT COLUMN_NAME AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", [db, table]);
      return rows.map((r) => String(r.c));
    };
    expect(await columns("orders")).toEqual(["id", "v", "created", "note"]);
    const [added] = await admin.query<mysql.RowDataPacket[]>(`SELECT id FROM ${id(db)}.added ORDER BY id`);
    expect(added.map((r) => Number(r.id))).toEqual([1, 2]);
    expect(await columns("doomed")).toEqual([]);
    expect(digest(await rowsOf("orders"))).toBe(digest(ordersReference));
  }, 240_000);

  it("restores onto the server to one second before a table was dropped: the table is back, every row up to then is there, none after", async () => {
    const point = new Date(dropTime.getTime() - 1000);
    await client.create<MySQLRestore>(RS, pointInTimeRestore("before-drop", { time: point.toISOString().replace(".000Z", "Z") }));
    const restore = await finished("before-drop");
    expect(findCondition(restore.status?.conditions, "Ready"), JSON.stringify(restore.status)).toMatchObject({ status: "True", reason: "Completed" });
    expect(restore.status?.pointInTime).toMatchObject({ backup: "full", backupPosition, point: point.toISOString().replace(".000Z", "Z") });
    expect(restore.status?.pointInTime?.transactions).toBeGreaterThan(0);
    expect(Date.parse(restore.status?.pointInTime?.lastReplayedTime ?? "")).toBeLessThanOrEqual(point.getTime());

    const expectedOrders = ordersReference.filter((r) => r.created <= asDatetime(point));
    // The workload wrote in the point's second and after it: the cut is tested on both sides.
    expect(expectedOrders.some((r) => r.created === asDatetime(point))).toBe(true);
    expect(ordersReference.length).toBeGreaterThan(expectedOrders.length);
    const orders = await rowsOf("orders");
    expect({ rows: orders.length, digest: digest(orders) }).toEqual({ rows: expectedOrders.length, digest: digest(expectedOrders) });
    const kept = await rowsOf("kept");
    expect({ rows: kept.length, digest: digest(kept) }).toEqual({ rows: keptReference.length, digest: digest(keptReference) });
    // The Event is recorded just after the status: waited for, not read at once.
    const events = await waitFor("the Completed Event", async () => {
      const all = await eventsAbout(client, ns, { name: "before-drop", kind: "MySQLRestore" });
      return all.some((e) => e.reason === "Completed") ? all : undefined;
    }, 15_000, 250);
    expect(events.map((e) => e.reason)).toContain("Started");
  }, 240_000);

  it("restores to a GTID exactly: every transaction up to and including it, nothing after", async () => {
    await client.create<MySQLRestore>(RS, pointInTimeRestore("to-gtid", { gtid: checkpoint.gtid }, { source: { backupRef: { name: "full" } } }));
    const restore = await finished("to-gtid");
    expect(findCondition(restore.status?.conditions, "Ready"), JSON.stringify(restore.status)).toMatchObject({ status: "True", reason: "Completed" });
    expect(restore.status?.pointInTime).toMatchObject({ backup: "full", point: `GTID ${checkpoint.gtid}`, lastReplayedGtid: checkpoint.gtid });
    const orders = await rowsOf("orders");
    const expected = ordersReference.filter((r) => r.id <= checkpoint.id);
    expect({ rows: orders.length, last: orders.at(-1)?.id, digest: digest(orders) }).toEqual({ rows: expected.length, last: checkpoint.id, digest: digest(expected) });
    expect(digest(await rowsOf("kept"))).toBe(digest(keptReference));
  }, 240_000);

  describe("refuses what it cannot restore, leaving the target untouched", () => {
    let before: DatabaseFingerprint;

    beforeAll(async () => {
      before = await fingerprint(admin, db);
    });

    async function failedWith(name: string, reason: string): Promise<string> {
      const restore = await finished(name, 60_000);
      const ready = findCondition(restore.status?.conditions, "Ready");
      expect(restore.status?.phase, JSON.stringify(restore.status)).toBe("Failed");
      expect(ready?.reason).toBe(reason);
      const events = await waitFor(`a ${reason} Event`, async () => {
        const all = await eventsAbout(client, ns, { name, kind: "MySQLRestore" });
        return all.some((e) => e.reason === reason) ? all : undefined;
      }, 15_000, 250);
      expect(events.map((e) => e.reason)).not.toContain("Started");
      expect(await fingerprint(admin, db)).toEqual(before);
      return ready?.message ?? "";
    }

    it("a corrupted binlog object in S3: ChecksumMismatch, nothing swapped in", async () => {
      const index = await archiveIndex();
      const backupSeq = BigInt(backupPosition.split("-")[2] ?? "0");
      // The first file the replay needs: the one holding the first transaction after the backup.
      const needed = index.files.find((f) => BigInt(f.endPosition.split("-")[2] ?? "0") > backupSeq);
      expect(needed).toBeDefined();
      const key = `${archiveFolder()}/${needed!.key}`;
      const original = await getObject(key);
      const corrupted = Buffer.from(original);
      corrupted[Math.floor(corrupted.length / 2)]! ^= 0xff;
      await s3.send(new PutObjectCommand({ Bucket: env.s3.bucket, Key: key, Body: corrupted }));
      try {
        await client.create<MySQLRestore>(RS, pointInTimeRestore("corrupt", { gtid: checkpoint.gtid }));
        const restore = await finished("corrupt", 120_000);
        expect(restore.status?.phase).toBe("Failed");
        const ready = findCondition(restore.status?.conditions, "Ready");
        expect(ready?.reason).toBe("ChecksumMismatch");
        expect(ready?.message).toContain(`binlog file ${needed!.key}`);
        expect(ready?.message).toContain("The target was left untouched");
        await waitFor("a ChecksumMismatch Event", async () => ((await eventsAbout(client, ns, { name: "corrupt", kind: "MySQLRestore" })).some((e) => e.reason === "ChecksumMismatch") ? true : undefined), 15_000, 250);
        expect(await fingerprint(admin, db)).toEqual(before);
        const [staging] = await admin.query<mysql.RowDataPacket[]>("SELECT COUNT(*) AS n FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'stw\\_restore\\_%'");
        expect(Number(staging[0]?.n)).toBe(0);
      } finally {
        await s3.send(new PutObjectCommand({ Bucket: env.s3.bucket, Key: key, Body: original }));
      }
    }, 180_000);

    it("binlog files larger than the manager's scratch space: ScratchSpaceTooSmall before anything is downloaded", async () => {
      // The chart passes its /tmp emptyDir's sizeLimit (scratchSizeLimit) as STATEWARD_SCRATCH_LIMIT; this manager runs in-process.
      process.env.STATEWARD_SCRATCH_LIMIT = "1Ki";
      try {
        await client.create<MySQLRestore>(RS, pointInTimeRestore("no-room", { gtid: checkpoint.gtid }));
        const message = await failedWith("no-room", "ScratchSpaceTooSmall");
        expect(message).toMatch(/^the replay needs [\d.]+ (KiB|MiB) of archived binlog \(\d+ files\)/);
        expect(message).toContain("STATEWARD_SCRATCH_LIMIT 1Ki: the chart's scratchSizeLimit");
        expect(await fingerprint(admin, db)).toEqual(before);
      } finally {
        delete process.env.STATEWARD_SCRATCH_LIMIT;
      }
    }, 90_000);

    it("a point before any backup: NoBackupBeforePoint", async () => {
      const backup = await client.get<MySQLBackup>(BK, ns, "full");
      const point = new Date(Date.parse(backup.status?.snapshotTime ?? "") - 2000);
      await client.create<MySQLRestore>(RS, pointInTimeRestore("too-early", { time: point.toISOString().replace(/\.\d+Z$/, "Z") }));
      const message = await failedWith("too-early", "NoBackupBeforePoint");
      expect(message).toContain("taken after the point");
    }, 90_000);

    it("a point in the future: PointInFuture", async () => {
      const point = new Date(Date.now() + 3_600_000);
      await client.create<MySQLRestore>(RS, pointInTimeRestore("future", { time: point.toISOString().replace(/\.\d+Z$/, "Z") }));
      const message = await failedWith("future", "PointInFuture");
      expect(message).toContain("later than now");
    }, 90_000);

    it("invalid specs are refused by the API server", async () => {
      const refused = async (name: string, pointInTime: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
        const err = await client.create<MySQLRestore>(RS, pointInTimeRestore(name, pointInTime, extra)).then(() => undefined, (e: unknown) => e as Error);
        expect(err, name).toBeInstanceOf(Error);
        return err?.message ?? "";
      };
      expect(await refused("both", { time: "2026-01-01T00:00:00Z", gtid: "0-1-5" })).toContain("exactly one of pointInTime.time or pointInTime.gtid");
      expect(await refused("neither", {})).toContain("exactly one of pointInTime.time or pointInTime.gtid");
      expect(await refused("bad-gtid", { gtid: "0-1" })).toMatch(/gtid/);
      expect(await refused("with-s3", { gtid: "0-1-5" }, { source: { s3: { ...storage().s3, path: "x" } } })).toContain("cannot be combined with spec.pointInTime");
      const noSource = { apiVersion: MySQLRestoreKind.apiVersion, kind: MySQLRestoreKind.kind, metadata: { name: "nothing", namespace: ns }, spec: { instanceRef: { name: "db" } } };
      const err = await client.create(RS, noSource as KubeObject).then(() => undefined, (e: unknown) => e as Error);
      expect(err?.message).toContain("set spec.source, or spec.pointInTime");
    });
  });

  it("a recent point the archive has not reached yet: Pending (PointNotArchived, polled, an Event), not Failed", async () => {
    // A transaction the server has not written yet (a time would be archived: the idle archive is current); the restore is seconds old.
    const [domain, serverId, seq] = (await value("SELECT @@gtid_binlog_pos")).split("-");
    const ahead = `${domain}-${serverId}-${BigInt(seq ?? "0") + 1000n}`;
    await client.create<MySQLRestore>(RS, pointInTimeRestore("not-yet", { gtid: ahead }, { source: { backupRef: { name: "full" } } }));
    const waiting = await waitFor("the restore Pending on the archive", async () => {
      const r = await client.get<MySQLRestore>(RS, ns, "not-yet");
      return findCondition(r.status?.conditions, "Ready")?.reason === "PointNotArchived" ? r : undefined;
    }, 30_000, 250);
    expect(waiting.status?.phase).toBe("Pending");
    expect(findCondition(waiting.status?.conditions, "Ready")?.message).toContain("Waiting for MySQLBinlogArchive arch");
    await sleep(6_000);
    // Polled every 5 s, not in a tight loop; still waiting.
    const events = (await eventsAbout(client, ns, { name: "not-yet", kind: "MySQLRestore" })).filter((e) => e.reason === "PointNotArchived");
    expect(events.length).toBeGreaterThanOrEqual(1);
    expect((await client.get<MySQLRestore>(RS, ns, "not-yet")).status?.phase).toBe("Pending");
    await client.delete(RS, ns, "not-yet");
  }, 60_000);

  it("a transaction that fails on the target: ReplayFailed, saying what the target holds", async () => {
    // The target has a table the backup lacks (a restore keeps those) that the archive creates: replaying that CREATE TABLE fails.
    await admin.query(`CREATE TABLE ${id(db)}.scratch (id INT PRIMARY KEY) ENGINE=InnoDB`);
    await client.create<MySQLRestore>(RS, pointInTimeRestore("replay-fails", { gtid: checkpoint.gtid }, { source: { backupRef: { name: "full" } } }));
    const restore = await finished("replay-fails");
    const ready = findCondition(restore.status?.conditions, "Ready");
    expect(restore.status?.phase, JSON.stringify(restore.status)).toBe("Failed");
    expect(ready?.reason).toBe("ReplayFailed");
    const [domain, server, seq] = createScratch.split("-");
    const before = `${domain}-${server}-${BigInt(seq ?? "0") - 1n}`;
    expect(ready?.message).toContain(`transaction ${createScratch} failed`);
    expect(ready?.message).toContain(`the target holds the backup plus every archived transaction up to ${before}`);
    expect(ready?.message).toContain(`MySQLBackup full (GTID position "${backupPosition}")`);
    await waitFor("a ReplayFailed Event", async () => ((await eventsAbout(client, ns, { name: "replay-fails", kind: "MySQLRestore" })).some((e) => e.reason === "ReplayFailed") ? true : undefined), 15_000, 250);
    await admin.query(`DROP TABLE ${id(db)}.scratch`);
  }, 240_000);

  it("a time after the server's last write, the archive idle and current: Completed with exactly the data, no wait for a later transaction", async () => {
    // A backup after the earlier restores onto this server (a replay cannot cross them, README), then a few writes, then nothing.
    await takeBackup("late");
    for (let i = 0; i < 3; i++) await admin.query(`INSERT INTO ${id(db)}.orders (v, created) VALUES (?, UTC_TIMESTAMP())`, [`idle ${i}`]);
    const reference = await rowsOf("orders");
    // Idle past the rotation age (5 s) and a heartbeat (5 s): the last file is uploaded, then the archive is current.
    await sleep(12_000);
    const index = await archiveIndex();
    expect(Date.parse(index.currentAt ?? "")).toBeGreaterThan(Date.now() - 8_000);
    const point = new Date(Math.floor(Date.now() / 1000) * 1000 - 2_000);
    await client.create<MySQLRestore>(RS, pointInTimeRestore("idle", { time: point.toISOString().replace(".000Z", "Z") }));
    // Completed within a poll or two: not Pending until the rotation age plus the margin (65 s), then Failed.
    const restore = await finished("idle", 30_000);
    expect(findCondition(restore.status?.conditions, "Ready"), JSON.stringify(restore.status)).toMatchObject({ status: "True", reason: "Completed" });
    expect(restore.status?.pointInTime).toMatchObject({ backup: "late", transactions: 3 });
    const orders = await rowsOf("orders");
    expect({ rows: orders.length, digest: digest(orders) }).toEqual({ rows: reference.length, digest: digest(reference) });
    expect(orders.slice(-3).map((r) => r.v)).toEqual(["idle 0", "idle 1", "idle 2"]);
  }, 240_000);

  it("starts from a backup of the archive's own server, not a newer backup of another server in the namespace", async () => {
    // Another MariaDB with a database of the same name, backed up last: its GTID position looks covered by the
    // archive (a domain-0 sequence like any), but its data is not what the archive's transactions apply to.
    const other = await startMariaDB({ dir: join(dir, "other"), args: ["--log-bin=mysql-bin", "--server-id=2", "--binlog-format=ROW"] });
    const o = await connect(other);
    try {
      await o.query(`CREATE DATABASE ${id(db)}`);
      await o.query(`CREATE TABLE ${id(db)}.orders (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(64) NOT NULL, created DATETIME NOT NULL) ENGINE=InnoDB`);
      for (let i = 0; i < 20; i++) await o.query(`INSERT INTO ${id(db)}.orders (v, created) VALUES (?, UTC_TIMESTAMP())`, [`other ${i}`]);
      await createMySQLInstance(client, ns, "other", other);
      await takeBackup("own-last");
      const reference = await rowsOf("orders");
      await sleep(1_100);
      await client.create<MySQLBackup>(BK, {
        apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name: "other-server", namespace: ns },
        spec: { instanceRef: { name: "other" }, databases: [db], storage: storage() },
      });
      const otherBackup = await backupCompleted(client, ns, "other-server");
      expect(otherBackup.status?.position?.gtid).toMatch(/^0-2-\d+$/);
      await sleep(1_100);
      const point = new Date(Math.floor(Date.now() / 1000) * 1000);
      // No backupRef: the restore chooses (waiting, if need be, for the idle archive to be current past the point).
      await client.create<MySQLRestore>(RS, pointInTimeRestore("own-server", { time: point.toISOString().replace(".000Z", "Z") }));
      const restore = await finished("own-server", 90_000);
      expect(findCondition(restore.status?.conditions, "Ready"), JSON.stringify(restore.status)).toMatchObject({ status: "True", reason: "Completed" });
      expect(restore.status?.pointInTime?.backup).toBe("own-last");
      const orders = await rowsOf("orders");
      expect({ rows: orders.length, digest: digest(orders) }).toEqual({ rows: reference.length, digest: digest(reference) });
    } finally {
      await o.end();
      process.kill(other.pid, "SIGKILL");
    }
  }, 240_000);

  it("the examples apply (server-side dry run: schema and CEL rules), the point-in-time ones included", async () => {
    const dir = join(repoRoot, "examples", "mysql-backup");
    const files = [
      ...readdirSync(dir).filter((f) => f.endsWith(".yaml")).map((f) => join(dir, f)),
      ...readdirSync(join(dir, "point-in-time")).filter((f) => f.endsWith(".yaml")).map((f) => join(dir, "point-in-time", f)),
    ];
    const args = ["--kubeconfig", env.kubeconfig, "-n", ns, "apply", "--dry-run=server", ...files.flatMap((f) => ["-f", f])];
    const { stdout } = await promisify(execFile)(tools.kubectl(), args);
    expect(stdout).toContain("mysqlbinlogarchive.stateward.io/shop-binlog created (server dry run)");
    expect(stdout).toContain("mysqlrestore.stateward.io/shop-before-drop created (server dry run)");
  });
});
