// Point-in-time replay against real MariaDB servers and the real S3: a source
// (binary log on, row format with some transactions logged as statements) is
// archived by the real archiver while a varied workload runs (multi-statement
// transactions, DDL, JSON, binary BLOBs, NULLs, emoji, DECIMAL, DATETIME(6),
// AUTO_INCREMENT with column defaults, a non-transactional table, user
// variables); its state is recorded at GTID and time checkpoints. A second
// server gets the "backup" (a dump taken at a known GTID position) and the
// archived files are replayed on it up to each checkpoint: its tables must be
// the source's at that point, byte for byte (CHECKSUM TABLE, row content,
// SHOW CREATE TABLE), and the replay must say it stopped exactly there.
import { createHash, randomBytes } from "node:crypto";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mysql from "mysql2/promise";
import {
  BackupError,
  BackupStore,
  BinlogArchiver,
  MySQLSession,
  archiveStorage,
  parseArchiveIndex,
  planReplay,
  replayBinlog,
  type ArchiveIndex,
  type ArchiveStorage,
  type RecoveryPoint,
} from "@stateward/operator-mysql-backup";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startMariaDB, type MariaDBEndpoint } from "../../harness/index.ts";
import { selectValue } from "../../support/select-value.ts";
import { waitFor } from "../../support/wait.ts";

const env = inject("environment");
const suffix = randomBytes(3).toString("hex");
const db = `sw_pitr_${suffix}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let dir: string;
let source: MariaDBEndpoint & { pid: number };
let target: MariaDBEndpoint & { pid: number };
let store: BackupStore;
let storage: ArchiveStorage;

const connect = (ep: MariaDBEndpoint) =>
  mysql.createConnection({ host: ep.host, port: ep.port, user: ep.user, password: ep.password, charset: "utf8mb4", dateStrings: true, supportBigNumbers: true, bigNumberStrings: true });
const login = (ep: MariaDBEndpoint) => ({ host: ep.host, port: ep.port, user: ep.user, password: ep.password });
const clientArgs = (ep: MariaDBEndpoint) => ["-h", ep.host, "-P", String(ep.port), "-u", ep.user, `--password=${ep.password}`];

const value = (ep: MariaDBEndpoint, sql: string): Promise<string> => selectValue(() => connect(ep), sql);

/** A command's stdout; `input` goes to its stdin. */
function runTool(command: string, args: string[], input?: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    let errors = "";
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d: Buffer) => (errors += d.toString()));
    child.on("error", reject);
    // A client that fails stops reading: its exit code tells, not the broken pipe.
    child.stdin.on("error", () => undefined);
    child.on("close", (code) => (code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(`${command} failed (${code}): ${errors}`))));
    child.stdin.end(input);
  });
}

/** What a server holds of the test database: per table its definition, CHECKSUM TABLE and a hash of its rows. */
async function snapshot(ep: MariaDBEndpoint): Promise<Record<string, { create: string; checksum: string; rows: number; content: string }>> {
  const c = await connect(ep);
  try {
    const [tables] = await c.query<mysql.RowDataPacket[]>("SELECT TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME", [db]);
    const out: Record<string, { create: string; checksum: string; rows: number; content: string }> = {};
    for (const { t } of tables) {
      const name = `\`${db}\`.\`${String(t)}\``;
      const [[create]] = (await c.query<mysql.RowDataPacket[]>(`SHOW CREATE TABLE ${name}`)) as unknown as [mysql.RowDataPacket[]];
      const [[sum]] = (await c.query<mysql.RowDataPacket[]>(`CHECKSUM TABLE ${name} EXTENDED`)) as unknown as [mysql.RowDataPacket[]];
      const [rows] = await c.query<mysql.RowDataPacket[]>(`SELECT * FROM ${name} ORDER BY 1`);
      const content = createHash("sha256")
        .update(JSON.stringify(rows, (_k, v: unknown) => (v && typeof v === "object" && (v as { type?: string }).type === "Buffer" ? Buffer.from((v as { data: number[] }).data).toString("hex") : v)))
        .digest("hex");
      out[String(t)] = { create: String(create?.["Create Table"]), checksum: String(sum?.Checksum), rows: rows.length, content };
    }
    return out;
  } finally {
    await c.end();
  }
}

interface Checkpoint {
  /** The source's gtid_binlog_pos (domain 0 only: "0-1-N"). */
  gtid: string;
  /** For a time checkpoint: a time after every transaction before it and before every one after it. */
  time?: Date;
  state: Awaited<ReturnType<typeof snapshot>>;
}

const seqOf = (gtid: string): number => (gtid === "" ? 0 : Number(/^0-\d+-(\d+)$/.exec(gtid)?.[1]));

let backupPosition: string;
let dump: Buffer;
const checkpoints = new Map<string, Checkpoint>();
let index: ArchiveIndex;
const paths = new Map<string, string>();

async function resetTarget(): Promise<void> {
  const c = await connect(target);
  await c.query(`DROP DATABASE IF EXISTS \`${db}\``);
  await c.end();
  await runTool("mariadb", clientArgs(target), dump);
}

/** Resets the target to the backup and replays to `until`: the planned files, or (`everything`) all from the backup on, to see the replay itself stop. */
async function replayTo(until: RecoveryPoint, everything = false) {
  await resetTarget();
  const plan = planReplay(index, backupPosition, everything ? { gtid: index.files.at(-1)?.lastGtid as string } : until);
  const session = await MySQLSession.open(login(target), { charset: "binary" });
  try {
    const started = performance.now();
    const result = await replayBinlog(
      session,
      plan.files.map((f) => paths.get(f.key) as string),
      { after: backupPosition, until },
    );
    return { result, plan, ms: performance.now() - started };
  } finally {
    await session.close();
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "sw-pitr-replay-"));
  source = await startMariaDB({ dir: join(dir, "source"), args: ["--log-bin=mysql-bin", "--server-id=1", "--binlog-format=ROW"] });
  // The target writes its own binlog in strict GTID mode: replayed transactions must get its GTIDs, not the source's.
  target = await startMariaDB({ dir: join(dir, "target"), args: ["--log-bin=mysql-bin", "--server-id=2", "--gtid-strict-mode=1"] });
  store = new BackupStore({
    endpoint: env.s3.endpoint,
    region: env.s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: env.s3.accessKeyId, secretAccessKey: env.s3.secretAccessKey },
    bucket: env.s3.bucket,
    prefix: `pitr-replay-test/${suffix}`,
  });
  storage = archiveStorage(store);

  const controller = new AbortController();
  const archiver = new BinlogArchiver({
    storage,
    target: () => Promise.resolve(login(source)),
    serverId: 4_000_000_321,
    rotation: { maxFileAgeMs: 1_500, maxFileBytes: 256 * 1024 },
    heartbeatMs: 1_000,
    primaryCheckMs: 500,
    retry: { initialMs: 200, maxMs: 2_000 },
    signal: controller.signal,
  });
  const archiving = archiver.run();
  await waitFor("the archiver to stream", () => archiver.progress().streaming || undefined, 30_000, 100);

  const conn = await connect(source);
  // A second session logs its writes as statements: Query events with Intvar/User_var events and their context.
  const stmt = await connect(source);
  await stmt.query("SET SESSION binlog_format = 'STATEMENT'");
  await conn.query(`CREATE DATABASE \`${db}\``);
  await conn.query(`USE \`${db}\``);
  await stmt.query(`USE \`${db}\``);
  await conn.query(`CREATE TABLE items (
    id INT AUTO_INCREMENT PRIMARY KEY,
    name VARCHAR(100) CHARACTER SET utf8mb4 NOT NULL,
    price DECIMAL(12,4) NULL,
    data JSON NULL,
    img BLOB NULL,
    at DATETIME(6) NULL,
    note TEXT NULL,
    status VARCHAR(10) NOT NULL DEFAULT 'new',
    created DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
  ) ENGINE=InnoDB`);
  await conn.query("CREATE TABLE ledger (id BIGINT AUTO_INCREMENT PRIMARY KEY, item INT NOT NULL, delta DECIMAL(12,4) NOT NULL) ENGINE=InnoDB");
  await conn.query("CREATE TABLE journal (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(64) NOT NULL) ENGINE=Aria");
  let n = 0;
  const item = () => {
    n += 1;
    const blob = Buffer.concat([Buffer.from([0, 0x27, 0x5c, 0xff, 0x0a, 0x0d, 0x1a]), randomBytes(32 + (n % 50))]);
    return [
      `item ${n} ${n % 4 === 0 ? "😀🚀 ünïcödé" : "plain"}`,
      (n * 1.0625).toFixed(4),
      JSON.stringify({ n, tags: ["a", "ü😀"], nested: { ok: n % 2 === 0, nil: null } }),
      blob,
      `2026-01-${String(1 + (n % 28)).padStart(2, "0")} 0${n % 10}:0${n % 6}:0${n % 7}.${String(n * 7919).padStart(6, "0").slice(-6)}`,
      n % 3 === 0 ? null : `note ${n}\n'quoted' \\ backslash`,
    ];
  };
  const insertItem = (c: mysql.Connection) => c.query("INSERT INTO items (name, price, data, img, at, note) VALUES (?, ?, ?, ?, ?, ?)", item());
  for (let i = 0; i < 20; i++) await insertItem(conn);

  // The backup: writes paused, its position and a dump of the database.
  backupPosition = await value(source, "SELECT @@gtid_binlog_pos");
  dump = await runTool("mariadb-dump", [...clientArgs(source), "--single-transaction", "--databases", db]);

  const record = async (key: string, time?: Date) => {
    checkpoints.set(key, { gtid: await value(source, "SELECT @@gtid_binlog_pos"), state: await snapshot(source), ...(time ? { time } : {}) });
  };
  /** Waits into a new second S, records the state as of time S (every commit so far is at or before S − 1), and resumes only in second S + 1. */
  const timeCheckpoint = async (key: string) => {
    await sleep(1000 - (Date.now() % 1000) + 50);
    const second = Math.floor(Date.now() / 1000);
    await record(key, new Date(second * 1000 + 999));
    await sleep(Math.max(0, (second + 1) * 1000 - Date.now() + 50));
  };

  for (let round = 1; round <= 12; round++) {
    // A multi-statement transaction (rows): insert, update another row, a ledger line.
    await conn.query("BEGIN");
    await insertItem(conn);
    await conn.query("UPDATE items SET price = price + 1.5, at = NOW(6), data = JSON_SET(data, '$.round', ?) WHERE id = (SELECT MIN(id) FROM items) + ?", [round, round]);
    await conn.query("INSERT INTO ledger (item, delta) VALUES (?, ?)", [round, `-${round}.0001`]);
    await conn.query("COMMIT");
    // Non-transactional.
    await conn.query("INSERT INTO journal (what) VALUES (?)", [`round ${round}`]);
    if (round % 3 === 0) await conn.query("DELETE FROM items WHERE id = (SELECT id FROM (SELECT MIN(id) AS id FROM items) AS m)");
    if (round % 2 === 0) {
      // Logged as statements: AUTO_INCREMENT (Intvar), column defaults (status, created = the statement's time with microseconds), user variables.
      await stmt.query("INSERT INTO items (name, price) VALUES (?, ?)", [`stmt ${round} ✓`, `${round}.5`]);
      await stmt.query("SET @v = ?, @d = 12.3456, @i = ?", [`vär ${round} 😀`, round * 1000]);
      await stmt.query("BEGIN");
      await stmt.query("INSERT INTO items (name, price, note) VALUES (@v, @d, NULL)");
      await stmt.query("UPDATE items SET note = CONCAT(COALESCE(note, ''), ' +', @i), status = 'seen' WHERE id % 4 = 1");
      await stmt.query("COMMIT");
    }
    if (round === 4) {
      await conn.query("CREATE TABLE extra (k VARCHAR(20) PRIMARY KEY, v BIGINT UNSIGNED) ENGINE=InnoDB");
      await conn.query("INSERT INTO extra VALUES ('max', 18446744073709551615), ('zero', 0)");
    }
    if (round === 6) await conn.query("ALTER TABLE items ADD COLUMN tag VARCHAR(20) NULL DEFAULT 'x' AFTER name");
    if (round === 8) await conn.query("DROP TABLE extra");
    if (round === 9) await stmt.query("ALTER TABLE ledger ADD INDEX by_item (item)");
    if (round === 11) {
      // One row statement of ~13 MiB (many rows events): more than one BINLOG statement may carry (max_allowed_packet 16 MiB).
      await conn.query("CREATE TABLE big (id INT PRIMARY KEY, payload LONGTEXT) ENGINE=InnoDB");
      await conn.query("INSERT INTO big SELECT seq, REPEAT(MD5(seq), 3200) FROM seq_1_to_130");
    }
    // The round ends with a row change (so that one transaction more or less shows).
    await conn.query("INSERT INTO ledger (item, delta) VALUES (?, ?)", [round * 100, `${round}.25`]);
    if (round === 5 || round === 10) await timeCheckpoint(`time-${round}`);
    else await record(`gtid-${round}`);
  }
  // Many small transactions, for the speed comparison.
  for (let i = 0; i < 1500; i++) {
    if (i % 3 === 0) await insertItem(conn);
    else await conn.query("UPDATE ledger SET delta = delta + 0.0001 WHERE id = ?", [1 + (i % 20)]);
  }
  await record("end");
  await stmt.end();
  await conn.end();

  const end = checkpoints.get("end")?.gtid as string;
  await waitFor("the archive to hold every transaction", () => (archiver.progress().archivedPosition === end ? true : undefined), 60_000, 200);
  controller.abort();
  await archiving;

  index = parseArchiveIndex((await storage.get("index.json")) as Buffer);
  expect(index.position).toBe(end);
  expect(index.files.length).toBeGreaterThan(2);
  for (const f of index.files) {
    const bytes = (await storage.get(f.key)) as Buffer;
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(f.sha256);
    const path = join(dir, f.key);
    writeFileSync(path, bytes);
    paths.set(f.key, path);
  }
}, 300_000);

afterAll(() => {
  store?.destroy();
  for (const server of [source, target]) {
    try {
      if (server) process.kill(server.pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("point-in-time replay", () => {
  it("replays to a GTID: exactly up to that transaction, the source's state at it", async () => {
    for (const key of ["gtid-3", "gtid-7", "gtid-9"]) {
      const point = checkpoints.get(key) as Checkpoint;
      const { result, plan } = await replayTo({ gtid: point.gtid });
      expect(result, key).toMatchObject({ lastGtid: point.gtid, transactions: seqOf(point.gtid) - seqOf(backupPosition) });
      expect(plan.files.length, key).toBeLessThan(index.files.length);
      expect(await snapshot(target), key).toEqual(point.state);
    }
  }, 180_000);

  it("replays to a time: every transaction committed up to that second, none after", async () => {
    for (const key of ["time-5", "time-10"]) {
      const point = checkpoints.get(key) as Checkpoint;
      const expected = { lastGtid: point.gtid, transactions: seqOf(point.gtid) - seqOf(backupPosition) };
      // The planned files, then every file: the replay itself stops before the first later transaction.
      let lastEventTime = "";
      for (const everything of [false, true]) {
        const { result } = await replayTo({ time: point.time as Date }, everything);
        expect(result, key).toMatchObject(expected);
        expect(await snapshot(target), key).toEqual(point.state);
        lastEventTime = result.lastEventTime as string;
      }
      // The point at the second of the last transaction's commit: that one is in (binlog times are whole seconds).
      const { result } = await replayTo({ time: new Date(lastEventTime) }, true);
      expect(result, key).toMatchObject(expected);
      expect(await snapshot(target), key).toEqual(point.state);
    }
  }, 180_000);

  it("replays the whole archive with the target's own GTIDs, as mariadb-binlog | mariadb does (speed compared)", async () => {
    const end = checkpoints.get("end") as Checkpoint;
    const before = await value(target, "SELECT @@gtid_binlog_pos");
    const ours = await replayTo({ gtid: end.gtid });
    expect(ours.result.lastGtid).toBe(end.gtid);
    expect(await snapshot(target)).toEqual(end.state);
    // The target numbered the replayed transactions itself (server 2), after its own.
    const after = await value(target, "SELECT @@gtid_binlog_pos");
    expect(after).toMatch(/^0-2-\d+$/);
    expect(seqOf(after)).toBeGreaterThanOrEqual(seqOf(before) + ours.result.transactions);

    // The stock pipeline keeps the source's GTIDs (SET gtid_seq_no): the target's strict mode refuses them
    // (0-1-N after its own 0-2-M), so it runs with strict mode off, for the comparison only. It also sends
    // the 13 MiB row statement as one BINLOG statement, past the default max_allowed_packet: raised for it.
    await resetTarget();
    const files = ours.plan.files.map((f) => paths.get(f.key) as string);
    const strict = await connect(target);
    const packet = await value(target, "SELECT @@global.max_allowed_packet");
    await strict.query("SET GLOBAL gtid_strict_mode = 0, GLOBAL max_allowed_packet = 64 * 1024 * 1024");
    let stock: number;
    let decoded: number;
    try {
      const started = performance.now();
      const text = await runTool("mariadb-binlog", [`--start-position=${backupPosition}`, ...files]);
      decoded = performance.now() - started;
      await runTool("mariadb", [...clientArgs(target), "--max-allowed-packet=64M"], text);
      stock = performance.now() - started;
    } finally {
      await strict.query("SET GLOBAL gtid_strict_mode = 1, GLOBAL max_allowed_packet = ?", [Number(packet)]);
      await strict.end();
    }
    expect(await snapshot(target)).toEqual(end.state);
    console.log(
      `replay of ${ours.result.transactions} transactions (${ours.plan.files.length} files, ${ours.plan.bytes} bytes): replayBinlog ${ours.ms.toFixed(0)} ms; ` +
        `mariadb-binlog | mariadb ${stock.toFixed(0)} ms (decoding ${decoded.toFixed(0)} ms)`,
    );
  }, 180_000);

  it("stops at a failing transaction: rolled back, named, with the last one applied", async () => {
    const point = checkpoints.get("gtid-3") as Checkpoint;
    await resetTarget();
    // A row the archive's next insert into ledger will collide with.
    const next = Number(await value(target, `SELECT COALESCE(MAX(id), 0) + 1 FROM \`${db}\`.ledger`));
    const c = await connect(target);
    await c.query(`INSERT INTO \`${db}\`.ledger (id, item, delta) VALUES (?, -1, 0)`, [next]);
    await c.end();
    const session = await MySQLSession.open(login(target), { charset: "binary" });
    const plan = planReplay(index, backupPosition, { gtid: point.gtid });
    const failure = await replayBinlog(
      session,
      plan.files.map((f) => paths.get(f.key) as string),
      { after: backupPosition, until: { gtid: point.gtid } },
    ).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(BackupError);
    // The first transaction after the backup inserts the item, updates one, then the ledger line: all of it rolled back.
    const firstAfter = `0-1-${seqOf(backupPosition) + 1}`;
    expect((failure as BackupError).reason).toBe("ReplayFailed");
    expect((failure as Error).message).toContain(`transaction ${firstAfter} failed`);
    expect((failure as Error).message).toMatch(/Duplicate entry/);
    expect((failure as Error).message).toMatch(/nothing of the archive was applied/);
    expect((await session.query<{ t: unknown }>("SELECT @@in_transaction AS t")).map((r) => Number(r.t))).toEqual([0]);
    await session.close();
    expect(await value(target, `SELECT COUNT(*) FROM \`${db}\`.items`)).toBe("20");
  }, 120_000);
});
