// A restore never leaves the target worse than it found it: the faults of a
// bad day, injected for real against a manager running as a process of its
// own (so it can be SIGKILLed), the real MariaDB and versitygw. The target
// is changed after the backup, so that "untouched" is told apart from
// "restored": after each failed restore its fingerprint (CHECKSUM TABLE of
// every table, SHOW CREATE of every object) must be what it was before.
//
// A restore is held just before it would change the target by a table lock
// a test connection holds (LOCK TABLES … READ): the kill and the deletion
// then hit it at a known point, with everything staged.
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import mysql from "mysql2/promise";
import { builtin, findCondition, type KubeObject } from "@stateward/core";
import { MySQLInstanceKind } from "@stateward/mysql";
import { BackupError, cleanUpRestore, leftTargetUntouched, MySQLBackupKind, MySQLRestoreKind, runRestore, type MySQLBackup, type MySQLRestore } from "@stateward/operator-mysql-backup";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startManagerProcess, type ManagerHandle } from "../../bench/manager-handle.ts";
import { s3Client, TcpProxy } from "../../harness/index.ts";
import { eventsAbout } from "../../support/events.ts";
import { deleteNamespace, freshNamespace, testClient, waitGone } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import { fingerprint, id, type DatabaseFingerprint } from "./torture.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const BK = MySQLBackupKind.resource;
const RS = MySQLRestoreKind.resource;
const suffix = randomBytes(3).toString("hex");
const db = `rsafe_${suffix}`;
const prefix = `restore-safety-${suffix}`;
const root = { host: env.mysql.host, port: env.mysql.port, user: env.mysql.user, password: env.mysql.password };
const logDir = join(import.meta.dirname, "../../../.stateward/test/logs");
let ns: string;
let folder: string;
let manager: ManagerHandle | undefined;
let s3: S3Client;
let admin: mysql.Connection;
/** The database as the backup has it. */
let backedUp: DatabaseFingerprint;
/** The database as the restores find it (changed since the backup). */
let before: DatabaseFingerprint;

type EventObject = KubeObject & { reason?: string; note?: string; type?: string; regarding?: { name?: string } };

const storage = () => ({
  s3: { bucket: env.s3.bucket, prefix, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } },
});

function restore(name: string): MySQLRestore {
  return { apiVersion: MySQLRestoreKind.apiVersion, kind: MySQLRestoreKind.kind, metadata: { name, namespace: ns }, spec: { instanceRef: { name: "db" }, source: { backupRef: { name: "full" } } } };
}

async function finished<T extends KubeObject & { status?: { phase?: string } }>(rt: typeof BK, name: string, timeoutMs = 120_000): Promise<T> {
  return waitFor(`${rt.kind} ${name} finished`, async () => {
    const o = await client.get<T>(rt, ns, name);
    return o.status?.phase === "Completed" || o.status?.phase === "Failed" ? o : undefined;
  }, timeoutMs, 250);
}

async function getObject(key: string): Promise<Buffer> {
  const res = await s3.send(new GetObjectCommand({ Bucket: env.s3.bucket, Key: key }));
  return Buffer.from(await res.Body!.transformToByteArray());
}

async function putObject(key: string, body: Buffer): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: env.s3.bucket, Key: key, Body: body }));
}

async function manifest(): Promise<{ objects: { key: string; kind: string; table?: string }[] }> {
  return JSON.parse((await getObject(`${folder}/manifest.json`)).toString("utf8")) as { objects: { key: string; kind: string; table?: string }[] };
}

async function eventsOf(name: string): Promise<EventObject[]> {
  const list = await client.list<EventObject>(builtin.event, { namespace: ns });
  return list.items.filter((e) => e.regarding?.name === name);
}

/** The staging databases of the restore with this uid, as the operator documents their names (stw_restore_<id>_<n>). */
async function stagingDatabasesOf(uid: string): Promise<string[]> {
  const token = createHash("sha256").update(uid).digest("hex").slice(0, 12);
  const [rows] = await admin.query("SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE ?", [`stw\\_restore\\_${token}\\_%`]);
  return (rows as { name: string }[]).map((r) => r.name);
}

/** Holds every restore before it can change zz_big (the last table in the backup's order): a read lock a swap or a DROP TABLE waits for. */
async function holdTarget(): Promise<mysql.Connection> {
  const conn = await mysql.createConnection(root);
  await conn.query(`LOCK TABLES ${id(db)}.zz_big READ`);
  return conn;
}

/** Waits until a connection is blocked by that lock: the restore got as far as it can without touching the target. */
async function blockedOnTarget(): Promise<string> {
  return waitFor("a restore waiting for the target's lock", async () => {
    // Other suites share the server: only a statement on this suite's database counts.
    const [rows] = await admin.query(
      "SELECT INFO AS info FROM information_schema.PROCESSLIST WHERE STATE = 'Waiting for table metadata lock' AND INFO IS NOT NULL AND (DB = ? OR INSTR(INFO, ?) > 0)",
      [db, db],
    );
    return (rows as { info: string }[])[0]?.info;
  }, 120_000, 100);
}

async function startManager(n: number, processEnv: Record<string, string> = {}): Promise<ManagerHandle> {
  return startManagerProcess({ kubeconfig: env.kubeconfig, namespace: ns, operators: "mysql-backup" }, join(logDir, `restore-safety-${suffix}-manager-${n}.log`), 60_000, processEnv);
}

beforeAll(async () => {
  mkdirSync(logDir, { recursive: true });
  s3 = s3Client(env.s3);
  ns = await freshNamespace(client, "rsafe");
  folder = `${prefix}/${ns}/full`;
  // The manager installs the CRDs, so it starts before the objects are created.
  manager = await startManager(1);
  admin = await mysql.createConnection({ ...root, charset: "utf8mb4" });
  const q = (sql: string) => admin.query(sql);
  await q(`CREATE DATABASE ${id(db)}`);
  await q(`USE ${id(db)}`);
  await q("CREATE TABLE a_small (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB");
  await q("INSERT INTO a_small SELECT seq, CONCAT('a-', seq) FROM seq_1_to_2000");
  await q("CREATE TABLE b_small (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB");
  await q("INSERT INTO b_small SELECT seq, CONCAT('b-', seq) FROM seq_1_to_2000");
  await q("CREATE TABLE customer (id INT PRIMARY KEY, name VARCHAR(100)) ENGINE=InnoDB");
  await q("INSERT INTO customer SELECT seq, CONCAT('c-', seq) FROM seq_1_to_100");
  await q("CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT, note VARCHAR(50) NOT NULL DEFAULT '', CONSTRAINT fk_c FOREIGN KEY (customer_id) REFERENCES customer (id)) ENGINE=InnoDB");
  await q("INSERT INTO orders SELECT seq, 1 + seq % 100, '' FROM seq_1_to_1000");
  // A trigger on a table the restore replaces: it would change the data if it fired, and it must come back.
  await q("CREATE TRIGGER orders_bi BEFORE INSERT ON orders FOR EACH ROW SET NEW.note = CONCAT(NEW.note, '+t')");
  await q("CREATE VIEW v_orders AS SELECT o.id, c.name FROM orders o JOIN customer c ON c.id = o.customer_id");
  await q("CREATE TABLE zz_big (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=InnoDB");
  await q("INSERT INTO zz_big SELECT seq, REPEAT(MD5(seq), 4) FROM seq_1_to_50000");
  backedUp = await fingerprint(admin, db);

  await client.create(builtin.secret, { metadata: { name: "mysql-admin", namespace: ns }, stringData: { username: root.user, password: root.password } } as KubeObject);
  await client.create(builtin.secret, {
    metadata: { name: "s3-creds", namespace: ns },
    stringData: { AWS_ACCESS_KEY_ID: env.s3.accessKeyId, AWS_SECRET_ACCESS_KEY: env.s3.secretAccessKey },
  } as KubeObject);
  await client.create(MySQLInstanceKind.resource, {
    apiVersion: MySQLInstanceKind.apiVersion, kind: MySQLInstanceKind.kind, metadata: { name: "db", namespace: ns },
    spec: { host: root.host, port: root.port, adminSecretRef: { name: "mysql-admin" } },
  } as KubeObject);
  await client.create(BK, { apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name: "full", namespace: ns }, spec: { instanceRef: { name: "db" }, storage: storage(), databases: [db] } });
  expect((await finished<MySQLBackup>(BK, "full")).status?.phase).toBe("Completed");

  // Life goes on after the backup: what a failed restore must leave exactly as it is.
  await q("UPDATE a_small SET v = 'changed since' WHERE id <= 10");
  await q("DELETE FROM b_small WHERE id > 1990");
  await q("INSERT INTO orders (id, customer_id) VALUES (5001, 1)");
  await q("INSERT INTO zz_big VALUES (60001, 'new')");
  before = await fingerprint(admin, db);
  expect(before).not.toEqual(backedUp);
}, 300_000);

afterAll(async () => {
  await manager?.stop().catch(() => manager?.kill());
  await admin?.query(`DROP DATABASE IF EXISTS ${id(db)}`);
  await admin?.end();
  s3?.destroy();
  if (ns) await deleteNamespace(client, ns);
});

/**
 * Database `viewDb` — items (500 rows), audited (100 rows, with a trigger: a table with a trigger is
 * moved aside in its own database, not to the holding one) and a view joining items with
 * `other`.rates — backed up by the Completed MySQLBackup `backup`. Dropping `other` makes the
 * view's CREATE, after a staged restore's swap, fail; locking `other`.rates makes it wait.
 */
async function backUpWithView(viewDb: string, other: string, backup: string): Promise<void> {
  const q = (sql: string) => admin.query(sql);
  await q(`CREATE DATABASE ${id(other)}`);
  await q(`CREATE TABLE ${id(other)}.rates (id INT PRIMARY KEY, rate INT) ENGINE=InnoDB`);
  await q(`CREATE DATABASE ${id(viewDb)}`);
  await q(`CREATE TABLE ${id(viewDb)}.items (id INT PRIMARY KEY, v VARCHAR(50)) ENGINE=InnoDB`);
  await q(`INSERT INTO ${id(viewDb)}.items SELECT seq, CONCAT('i-', seq) FROM seq_1_to_500`);
  await q(`CREATE TABLE ${id(viewDb)}.audited (id INT PRIMARY KEY, v VARCHAR(50)) ENGINE=InnoDB`);
  await q(`INSERT INTO ${id(viewDb)}.audited SELECT seq, CONCAT('a-', seq) FROM seq_1_to_100`);
  await q(`CREATE TRIGGER ${id(viewDb)}.audited_bi BEFORE INSERT ON ${id(viewDb)}.audited FOR EACH ROW SET NEW.v = UPPER(NEW.v)`);
  await q(`CREATE VIEW ${id(viewDb)}.priced AS SELECT i.id, r.rate FROM ${id(viewDb)}.items i JOIN ${id(other)}.rates r ON r.id = i.id`);
  await client.create(BK, {
    apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name: backup, namespace: ns },
    spec: { instanceRef: { name: "db" }, storage: storage(), databases: [viewDb] },
  });
  expect((await finished<MySQLBackup>(BK, backup)).status?.phase).toBe("Completed");
}

describe("restore safety", () => {
  it("records the manifest's SHA-256 when a backup completes", async () => {
    const done = await client.get<MySQLBackup>(BK, ns, "full");
    expect(done.status?.manifestSha256).toBe(createHash("sha256").update(await getObject(`${folder}/manifest.json`)).digest("hex"));
  });

  it("fails with a clear reason when one data object is missing and another corrupt, leaving the target untouched", async () => {
    const objects = (await manifest()).objects;
    const missing = objects.find((o) => o.kind === "data" && o.table === "a_small")!;
    const corrupt = objects.find((o) => o.kind === "data" && o.table === "b_small")!;
    const missingBytes = await getObject(`${folder}/${missing.key}`);
    const corruptBytes = await getObject(`${folder}/${corrupt.key}`);
    await s3.send(new DeleteObjectCommand({ Bucket: env.s3.bucket, Key: `${folder}/${missing.key}` }));
    const flipped = Buffer.from(corruptBytes);
    flipped[Math.floor(flipped.length / 2)]! ^= 0xff;
    await putObject(`${folder}/${corrupt.key}`, flipped);
    try {
      await client.create(RS, restore("broken"));
      const failed = await finished<MySQLRestore>(RS, "broken");
      expect(failed.status?.phase).toBe("Failed");
      const ready = findCondition(failed.status?.conditions, "Ready");
      expect(ready?.status).toBe("False");
      expect(["ObjectNotFound", "ChecksumMismatch"]).toContain(ready?.reason);
      expect(ready?.message).toMatch(new RegExp(`(${missing.key}|${corrupt.key})`));
      expect(ready?.message).toMatch(/target was left untouched/);
      // The Event follows the status write.
      const event = await waitFor("the Warning Event", async () => (await eventsOf("broken")).find((e) => e.type === "Warning" && e.reason === ready?.reason));
      expect(event.note).toMatch(/target was left untouched/);
      expect(await fingerprint(admin, db)).toEqual(before);
      expect(await stagingDatabasesOf(failed.metadata.uid!)).toEqual([]);
    } finally {
      await putObject(`${folder}/${missing.key}`, missingBytes);
      await putObject(`${folder}/${corrupt.key}`, corruptBytes);
    }
  }, 180_000);

  it("refuses a manifest changed since the backup completed, leaving the target untouched", async () => {
    const original = await getObject(`${folder}/manifest.json`);
    // Still a valid manifest, just not the one written: b_small's rows left out.
    const forged = JSON.parse(original.toString("utf8")) as { objects: { kind: string; table?: string }[] };
    forged.objects = forged.objects.filter((o) => !(o.kind === "data" && o.table === "b_small"));
    await putObject(`${folder}/manifest.json`, Buffer.from(JSON.stringify(forged, null, 2)));
    try {
      await client.create(RS, restore("tampered"));
      const failed = await finished<MySQLRestore>(RS, "tampered");
      expect(failed.status?.phase).toBe("Failed");
      const ready = findCondition(failed.status?.conditions, "Ready");
      expect(ready?.reason).toBe("ChecksumMismatch");
      expect(ready?.message).toMatch(/manifest\.json changed since the backup was taken/);
      expect(await fingerprint(admin, db)).toEqual(before);
    } finally {
      await putObject(`${folder}/manifest.json`, original);
    }
  }, 180_000);

  it("in mode InPlace, checks every object before the first statement: a corrupt last object leaves the target untouched", async () => {
    const objects = (await manifest()).objects;
    // The last object in restore order: an in-place restore that verified as it went would have replaced every table by then.
    const last = objects.filter((o) => o.kind === "data").at(-1)!;
    const original = await getObject(`${folder}/${last.key}`);
    const flipped = Buffer.from(original);
    flipped[Math.floor(flipped.length / 2)]! ^= 0xff;
    await putObject(`${folder}/${last.key}`, flipped);
    try {
      const err = (await runRestore({
        target: root,
        source: {
          backup: { bucket: env.s3.bucket, prefix: folder, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true, credentials: { accessKeyId: env.s3.accessKeyId, secretAccessKey: env.s3.secretAccessKey } },
        },
        mode: "InPlace",
      }).catch((e: unknown) => e)) as BackupError;
      expect(err).toBeInstanceOf(BackupError);
      expect(err.reason).toBe("ChecksumMismatch");
      expect(err.message).toContain(last.key);
      expect(await fingerprint(admin, db)).toEqual(before);
    } finally {
      await putObject(`${folder}/${last.key}`, original);
    }
  }, 120_000);

  it("deleting a running restore stops it, drops its staging databases and says the target was left untouched", async () => {
    const lock = await holdTarget();
    try {
      await client.create(RS, restore("deleted"));
      await blockedOnTarget();
      const running = await client.get<MySQLRestore>(RS, ns, "deleted");
      expect(running.status?.phase).toBe("Running");
      await client.delete(RS, ns, "deleted");
      // Gone while the lock is still held: the restore did not wait for the swap to go ahead.
      await waitGone(client, RS, ns, "deleted", 60_000);
      const event = await waitFor("the Deleted Event", async () => (await eventsOf("deleted")).find((e) => e.reason === "Deleted"));
      expect(event.note).toMatch(/target was left untouched/);
      expect(await stagingDatabasesOf(running.metadata.uid!)).toEqual([]);
    } finally {
      await lock.end();
    }
    expect(await fingerprint(admin, db)).toEqual(before);
  }, 180_000);

  it("a manager SIGKILLed mid-restore leaves the target untouched; the next one drops the staging and marks it Interrupted", async () => {
    const lock = await holdTarget();
    let uid: string;
    try {
      await client.create(RS, restore("killed"));
      await blockedOnTarget();
      uid = (await client.get<MySQLRestore>(RS, ns, "killed")).metadata.uid!;
      manager!.kill();
      await waitFor("the manager process gone", () => (manager!.running() ? undefined : true));
    } finally {
      await lock.end();
    }
    // What the killed process had sent, waiting for the lock, must not go ahead once the lock is gone.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await fingerprint(admin, db)).toEqual(before);

    // This manager has no local temporary space at all (its TMPDIR does not exist): a restore
    // streams from S3 into the server and stages nothing on the manager's disk (the chart gives
    // /tmp 64Mi, less than one data object may hold).
    manager = await startManager(2, { TMPDIR: join(logDir, `no-such-dir-${suffix}`) });
    const failed = await finished<MySQLRestore>(RS, "killed");
    const ready = findCondition(failed.status?.conditions, "Ready");
    expect(ready?.reason).toBe("Interrupted");
    expect(ready?.message).toMatch(/target, which was left untouched/);
    expect(await stagingDatabasesOf(uid)).toEqual([]);
    expect(await fingerprint(admin, db)).toEqual(before);
  }, 240_000);

  it("then restores the backup over the changed target, with no local temporary space: tables, the trigger and the view as backed up", async () => {
    await client.create(RS, restore("good"));
    const done = await finished<MySQLRestore>(RS, "good");
    const ready = findCondition(done.status?.conditions, "Ready");
    expect(ready?.message).toMatch(/^Restored/);
    expect(ready).toMatchObject({ status: "True", reason: "Completed" });
    expect(done.status?.mode).toBe("Staged");
    expect(await fingerprint(admin, db)).toEqual(backedUp);
    expect(await stagingDatabasesOf(done.metadata.uid!)).toEqual([]);
    const [aside] = await admin.query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE 'stw\\_%'", [db]);
    expect(aside).toEqual([]);
    // The finalizer is gone once the restore finished: deleting it is immediate.
    await client.delete(RS, ns, "good");
    await waitGone(client, RS, ns, "good", 10_000);
  }, 180_000);

  it("a view the target cannot create fails the restore after the swap: the tables it replaced are kept, and the message says where", async () => {
    // A view of a table in another database, gone by the time of the restore: its CREATE VIEW,
    // after the swap, fails. The target's tables from before the restore are then the only copy
    // of the data written since the backup.
    const viewDb = `rsafe_v_${suffix}`;
    const other = `rsafe_x_${suffix}`;
    const q = (sql: string) => admin.query(sql);
    let holding: string | undefined;
    try {
      await backUpWithView(viewDb, other, "with-view");
      await q(`UPDATE ${id(viewDb)}.items SET v = 'written since' WHERE id <= 3`);
      await q(`UPDATE ${id(viewDb)}.audited SET v = 'written since' WHERE id = 1`);
      await q(`DROP DATABASE ${id(other)}`);

      const r = restore("view-fails");
      r.spec.source = { backupRef: { name: "with-view" } };
      const token = createHash("sha256").update((await client.create(RS, r)).metadata.uid!).digest("hex").slice(0, 12);
      holding = `stw_replaced_${token}`;
      const failed = await finished<MySQLRestore>(RS, "view-fails");
      expect(failed.status?.phase).toBe("Failed");
      const ready = findCondition(failed.status?.conditions, "Ready");
      expect(ready?.status).toBe("False");
      expect(ready?.message).toContain(`Table '${other}.rates' doesn't exist`);
      expect(ready?.message).toMatch(/swapped in; views, routines, triggers or events of the backup may be missing/);
      expect(ready?.message).toContain(`2 tables as they were before the restore were kept: 1 in database \`${holding}\``);
      expect(ready?.message).toContain(`\`${viewDb}\`.\`stw_replaced_${token}_1_audited\``);
      const event = await waitFor("the Warning Event", async () => (await eventsAbout(client, ns, { name: "view-fails", kind: MySQLRestoreKind.kind })).find((e) => e.type === "Warning"));
      expect(event.note).toContain(holding);

      // The restored tables are in place; the ones they replaced hold what was written since the backup.
      const [restored] = await admin.query(`SELECT v FROM ${id(viewDb)}.items WHERE id = 1 UNION ALL SELECT v FROM ${id(viewDb)}.audited WHERE id = 1`);
      expect((restored as { v: string }[]).map((x) => x.v)).toEqual(["i-1", "a-1"]);
      const [keptItems] = await admin.query(`SELECT COUNT(*) AS n, SUM(v = 'written since') AS since FROM ${id(holding)}.\`2_items\``);
      expect(keptItems).toEqual([{ n: 500, since: "3" }]);
      const [keptAudited] = await admin.query(`SELECT v FROM ${id(viewDb)}.${id(`stw_replaced_${token}_1_audited`)} WHERE id = 1`);
      expect(keptAudited).toEqual([{ v: "written since" }]);
      expect(await stagingDatabasesOf(failed.metadata.uid!)).toEqual([]);
    } finally {
      if (holding) await q(`DROP DATABASE IF EXISTS ${id(holding)}`);
      await q(`DROP DATABASE IF EXISTS ${id(viewDb)}`);
      await q(`DROP DATABASE IF EXISTS ${id(other)}`);
    }
  }, 240_000);
});

// The target's tables a swap replaced are kept whenever a restore stops after
// it, whatever stopped it, and a user is told where they are. Each test writes
// to the target after the backup, so the kept tables hold the only copy of it.
describe("the tables a swap replaced", () => {
  const keptDb = `rsafe_k_${suffix}`;
  /** A database the view reads: dropped, the view's CREATE (after the swap) fails; locked, it waits. */
  const other = `rsafe_kx_${suffix}`;
  const q = (sql: string) => admin.query(sql);
  const tokenOf = (runId: string) => createHash("sha256").update(runId).digest("hex").slice(0, 12);
  const backupSource = (backup = "kept") => ({
    backup: {
      bucket: env.s3.bucket, prefix: `${prefix}/${ns}/${backup}`, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true,
      credentials: { accessKeyId: env.s3.accessKeyId, secretAccessKey: env.s3.secretAccessKey },
    },
  });

  beforeAll(async () => {
    await backUpWithView(keptDb, other, "kept");
  }, 180_000);

  afterAll(async () => {
    await q(`DROP DATABASE IF EXISTS ${id(keptDb)}`);
    await q(`DROP DATABASE IF EXISTS ${id(other)}`);
  });

  /** What is written to the target after the backup: what only the kept tables hold once a restore swapped. */
  async function writeSince(): Promise<void> {
    // A restore stopped after its swap may not have recreated the trigger (post-data): audited must go aside in its own database.
    await q(`CREATE TRIGGER IF NOT EXISTS ${id(keptDb)}.audited_bi BEFORE INSERT ON ${id(keptDb)}.audited FOR EACH ROW SET NEW.v = UPPER(NEW.v)`);
    await q(`UPDATE ${id(keptDb)}.items SET v = 'written since' WHERE id <= 3`);
    await q(`UPDATE ${id(keptDb)}.audited SET v = 'written since' WHERE id = 1`);
  }

  /** The kept tables of run `runId` hold what was written since the backup; the restored ones are in place. */
  async function expectKept(runId: string): Promise<void> {
    const token = tokenOf(runId);
    const [keptItems] = await admin.query(`SELECT COUNT(*) AS n, SUM(v = 'written since') AS since FROM ${id(`stw_replaced_${token}`)}.\`2_items\``);
    expect(keptItems).toEqual([{ n: 500, since: "3" }]);
    const [keptAudited] = await admin.query(`SELECT v FROM ${id(keptDb)}.${id(`stw_replaced_${token}_1_audited`)} WHERE id = 1`);
    expect(keptAudited).toEqual([{ v: "written since" }]);
    const [restored] = await admin.query(`SELECT v FROM ${id(keptDb)}.items WHERE id = 1 UNION ALL SELECT v FROM ${id(keptDb)}.audited WHERE id = 1`);
    expect((restored as { v: string }[]).map((x) => x.v)).toEqual(["i-1", "a-1"]);
  }

  async function dropKept(runId: string): Promise<void> {
    const token = tokenOf(runId);
    await q(`DROP DATABASE IF EXISTS ${id(`stw_replaced_${token}`)}`);
    await q(`DROP TABLE IF EXISTS ${id(keptDb)}.${id(`stw_replaced_${token}_1_audited`)}`);
  }

  /**
   * Creates restore `name` of the backup "kept" and holds it with its tables swapped in: the view's CREATE,
   * after the swap, waits for a write lock on the table it reads. Returns the restore's uid and `release`,
   * which ends any statement still waiting (a stopped restore's connection may be gone while its CREATE VIEW
   * waits on in the server: it must not run after the test) and then the lock.
   */
  async function heldAfterSwap(name: string, instance = "db"): Promise<{ uid: string; release: () => Promise<void> }> {
    const lock = await mysql.createConnection(root);
    await lock.query(`LOCK TABLES ${id(other)}.rates WRITE`);
    const waitingViews = async () => {
      const [rows] = await admin.query("SELECT ID AS id FROM information_schema.PROCESSLIST WHERE STATE = 'Waiting for table metadata lock' AND INSTR(INFO, ?) > 0", [other]);
      return rows as { id: number }[];
    };
    const release = async () => {
      for (const { id: thread } of await waitingViews()) await admin.query("KILL QUERY ?", [thread]).catch(() => undefined);
      await lock.end();
    };
    try {
      const r = restore(name);
      r.spec.instanceRef = { name: instance };
      r.spec.source = { backupRef: { name: "kept" } };
      const uid = (await client.create(RS, r)).metadata.uid!;
      await waitFor("the restore's CREATE VIEW waiting for the lock", async () => ((await waitingViews()).length > 0 ? true : undefined), 120_000, 100);
      return { uid, release };
    } catch (err) {
      await release();
      throw err;
    }
  }

  it("deleting a restore after its swap says in the Deleted Event, once, where the replaced tables were kept", async () => {
    await writeSince();
    const held = await heldAfterSwap("deleted-after-swap");
    try {
      try {
        await client.delete(RS, ns, "deleted-after-swap");
        await waitGone(client, RS, ns, "deleted-after-swap", 60_000);
        const holding = `stw_replaced_${tokenOf(held.uid)}`;
        const event = await waitFor("the Deleted Event", async () => (await eventsOf("deleted-after-swap")).find((e) => e.reason === "Deleted"));
        expect(event.note).toMatch(/stopped because the MySQLRestore was deleted/);
        expect(event.note).toMatch(/swapped in; views, routines, triggers or events of the backup may be missing/);
        expect(event.note).toContain(`2 tables as they were before the restore were kept: 1 in database \`${holding}\``);
        expect(event.note).toContain(`\`${keptDb}\`.\`stw_replaced_${tokenOf(held.uid)}_1_audited\``);
        // Said once: no other Event of the restore repeats it.
        const all = (await eventsOf("deleted-after-swap")).map((e) => e.note ?? "").join("\n");
        expect(all.split("as they were before the restore were kept").length - 1).toBe(1);
        expect(all).not.toMatch(/left untouched/);
      } finally {
        await held.release();
      }
      await expectKept(held.uid);
      expect(await stagingDatabasesOf(held.uid)).toEqual([]);
    } finally {
      // Its kept table with the trigger would keep the trigger's name taken for the next test.
      await dropKept(held.uid);
    }
  }, 240_000);

  it("a manager stopped after a restore's swap marks it Failed, saying where the replaced tables were kept", async () => {
    await writeSince();
    const held = await heldAfterSwap("stopped-after-swap");
    try {
      try {
        // SIGTERM: the manager aborts its runs, writes what they left, and exits (0, or stop() throws).
        await manager!.stop();
      } finally {
        await held.release();
        manager = await startManager(4);
      }
      const failed = await finished<MySQLRestore>(RS, "stopped-after-swap");
      const ready = findCondition(failed.status?.conditions, "Ready");
      expect(ready?.reason).toBe("Interrupted");
      expect(ready?.message).toMatch(/stopped because the manager is shutting down/);
      expect(ready?.message).toContain(`2 tables as they were before the restore were kept: 1 in database \`stw_replaced_${tokenOf(held.uid)}\``);
      expect(ready?.message).not.toMatch(/left untouched/);
      await expectKept(held.uid);
      expect(await stagingDatabasesOf(held.uid)).toEqual([]);
    } finally {
      await dropKept(held.uid);
    }
  }, 240_000);

  it("a swap whose answer was lost (the RENAME ran) is told as done: the replaced tables are kept and the message says where", async () => {
    await writeSince();
    const proxy = new TcpProxy({ host: root.host, port: root.port });
    await proxy.start();
    // The server runs the RENAME; its answer is dropped and the connection cut.
    proxy.leaveUnanswered(/RENAME TABLE/, { cut: true });
    const runId = `lost-answer-${suffix}`;
    try {
      const err = (await runRestore({ target: { ...root, host: "127.0.0.1", port: proxy.port }, source: backupSource(), mode: "Staged", runId }).catch((e: unknown) => e)) as BackupError;
      expect(proxy.unanswered).toBe(1);
      expect(err).toBeInstanceOf(BackupError);
      expect(leftTargetUntouched(err)).toBe(false);
      expect(err.message).toMatch(/swapped in; views, routines, triggers or events of the backup may be missing/);
      expect(err.message).toContain(`2 tables as they were before the restore were kept: 1 in database \`stw_replaced_${tokenOf(runId)}\``);
      await expectKept(runId);
      expect(await stagingDatabasesOf(runId)).toEqual([]);
    } finally {
      await proxy.stop();
      await dropKept(runId);
    }
  }, 180_000);

  it("a swap whose answer was lost, with a target view in its way, is told as done too", async () => {
    // The view with a restored table's name is dropped just before the RENAME; with no answer, the
    // swap's undo cannot make it again — and yet the RENAME ran: the target's table went aside.
    const wayDb = `rsafe_kw_${suffix}`;
    await q(`CREATE DATABASE ${id(wayDb)}`);
    await q(`CREATE TABLE ${id(wayDb)}.kept_t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB`);
    await q(`CREATE TABLE ${id(wayDb)}.shadow (id INT PRIMARY KEY) ENGINE=InnoDB`);
    await q(`INSERT INTO ${id(wayDb)}.kept_t VALUES (1, 'backed up')`);
    await client.create(BK, {
      apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name: "in-the-way", namespace: ns },
      spec: { instanceRef: { name: "db" }, storage: storage(), databases: [wayDb] },
    });
    expect((await finished<MySQLBackup>(BK, "in-the-way")).status?.phase).toBe("Completed");
    await q(`UPDATE ${id(wayDb)}.kept_t SET v = 'written since'`);
    await q(`DROP TABLE ${id(wayDb)}.shadow`);
    await q(`CREATE VIEW ${id(wayDb)}.shadow AS SELECT 1 AS id`);
    const proxy = new TcpProxy({ host: root.host, port: root.port });
    await proxy.start();
    proxy.leaveUnanswered(/RENAME TABLE/, { cut: true });
    const runId = `lost-in-the-way-${suffix}`;
    try {
      const err = (await runRestore({ target: { ...root, host: "127.0.0.1", port: proxy.port }, source: backupSource("in-the-way"), mode: "Staged", runId }).catch((e: unknown) => e)) as BackupError;
      expect(proxy.unanswered).toBe(1);
      expect(err).toBeInstanceOf(BackupError);
      expect(leftTargetUntouched(err)).toBe(false);
      expect(err.message).not.toMatch(/were not replaced/);
      expect(err.message).toMatch(/swapped in; views, routines, triggers or events of the backup may be missing/);
      expect(err.message).toContain(`were kept: 1 in database \`stw_replaced_${tokenOf(runId)}\``);
      expect(err.message).toContain("their triggers may be missing");
      const [kept] = await admin.query(`SELECT v FROM ${id(`stw_replaced_${tokenOf(runId)}`)}.\`1_kept_t\``);
      expect(kept).toEqual([{ v: "written since" }]);
    } finally {
      await proxy.stop();
      await q(`DROP DATABASE IF EXISTS ${id(`stw_replaced_${tokenOf(runId)}`)}`);
      await q(`DROP DATABASE IF EXISTS ${id(wayDb)}`);
    }
  }, 180_000);

  it("a swap whose answer was lost, and then the server too: the message names the database the replaced tables would be kept in", async () => {
    await writeSince();
    const proxy = new TcpProxy({ host: root.host, port: root.port });
    await proxy.start();
    proxy.leaveUnanswered(/RENAME TABLE/);
    const runId = `lost-server-${suffix}`;
    const holding = `stw_replaced_${tokenOf(runId)}`;
    try {
      const restoring = runRestore({ target: { ...root, host: "127.0.0.1", port: proxy.port }, source: backupSource(), mode: "Staged", runId }).catch((e: unknown) => e);
      // The RENAME ran; its answer hangs. Then the server is out of reach: the cleanup cannot tell what the swap did.
      await waitFor("the swap done on the server", async () => {
        const [rows] = await admin.query("SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = '2_items'", [holding]);
        return (rows as unknown[]).length > 0 ? true : undefined;
      }, 60_000, 100);
      proxy.block();
      const err = (await restoring) as BackupError;
      expect(err).toBeInstanceOf(BackupError);
      expect(leftTargetUntouched(err)).toBe(false);
      expect(err.message).toMatch(/staging databases \(stw_restore_\*\) could not be dropped/);
      expect(err.message).toContain(`If the swap went through, the target's tables from before the restore are kept in database \`${holding}\``);
      await expectKept(runId);
    } finally {
      await proxy.stop();
      await cleanUpRestore(root, runId);
      await dropKept(runId);
    }
  }, 180_000);

  it("a manager killed after the swap, and the server out of reach for the next one: the Interrupted message names the database the replaced tables are kept in", async () => {
    await writeSince();
    // The restore reaches the server through a proxy, which is then blocked: the next manager cannot look.
    const proxy = new TcpProxy({ host: root.host, port: root.port });
    await proxy.start();
    await client.create(MySQLInstanceKind.resource, {
      apiVersion: MySQLInstanceKind.apiVersion, kind: MySQLInstanceKind.kind, metadata: { name: "db-proxied", namespace: ns },
      spec: { host: "127.0.0.1", port: proxy.port, adminSecretRef: { name: "mysql-admin" } },
    } as KubeObject);
    let uid: string | undefined;
    try {
      const held = await heldAfterSwap("killed-after-swap", "db-proxied");
      uid = held.uid;
      try {
        manager!.kill();
        await waitFor("the manager process gone", () => (manager!.running() ? undefined : true));
        proxy.block();
      } finally {
        await held.release();
      }
      manager = await startManager(3);
      const failed = await finished<MySQLRestore>(RS, "killed-after-swap");
      const ready = findCondition(failed.status?.conditions, "Ready");
      expect(ready?.reason).toBe("Interrupted");
      const holding = `stw_replaced_${tokenOf(uid)}`;
      expect(ready?.message).toMatch(/staging databases \(stw_restore_\w+_\*\) could not be dropped/);
      expect(ready?.message).toContain(`If it stopped after swapping the restored tables in, before its end, the target's tables from before the restore are kept in database \`${holding}\``);
      expect(ready?.message).not.toMatch(/left untouched/);
      const event = await waitFor("the Interrupted Event", async () => (await eventsOf("killed-after-swap")).find((e) => e.reason === "Interrupted"));
      expect(event.note).toContain(holding);
      // They are where the message says.
      await expectKept(uid);
    } finally {
      await proxy.stop();
      await client.delete(MySQLInstanceKind.resource, ns, "db-proxied").catch(() => undefined);
      // What it left, also when it failed before its uid was known here.
      uid ??= await client.get<MySQLRestore>(RS, ns, "killed-after-swap").then((r) => r.metadata.uid, () => undefined);
      if (uid) {
        await cleanUpRestore(root, uid);
        await dropKept(uid);
      }
    }
  }, 240_000);

  it("a restore run again with the same run id keeps the tables the first run kept, and refuses to stage over them", async () => {
    await writeSince();
    await q(`DROP DATABASE ${id(other)}`);
    const runId = `rerun-${suffix}`;
    const holding = `stw_replaced_${tokenOf(runId)}`;
    try {
      const first = (await runRestore({ target: root, source: backupSource(), mode: "Staged", runId }).catch((e: unknown) => e)) as BackupError;
      expect(first.message).toContain(`Table '${other}.rates' doesn't exist`);
      expect(first.message).toContain(`were kept: 1 in database \`${holding}\``);
      await expectKept(runId);

      const again = (await runRestore({ target: root, source: backupSource(), mode: "Staged", runId }).catch((e: unknown) => e)) as BackupError;
      // The first run's kept tables hold what was written since the backup still.
      await expectKept(runId);
      expect(again).toBeInstanceOf(BackupError);
      expect(again.reason).toBe("InvalidOptions");
      expect(again.message).toMatch(/an earlier run of this restore swapped its tables in/);
      expect(again.message).toContain(`were kept: 1 in database \`${holding}\``);
      expect(leftTargetUntouched(again)).toBe(true);
      expect(await stagingDatabasesOf(runId)).toEqual([]);
    } finally {
      await dropKept(runId);
      await q(`CREATE DATABASE IF NOT EXISTS ${id(other)}`);
      await q(`CREATE TABLE IF NOT EXISTS ${id(other)}.rates (id INT PRIMARY KEY, rate INT) ENGINE=InnoDB`);
    }
  }, 180_000);
});
