// The backup engine of the mysql-backup operator against the real MariaDB
// and the real S3 server: exact round trips of every value type and object
// kind, restores by the stock `mariadb` client and from `mariadb-dump` files,
// a consistent snapshot under concurrent writes, and the faults a user will
// meet (S3 unreachable, wrong keys, no bucket, server down, corrupted object,
// cancellation) — each with a clear error and nothing half-written left.
import {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { spawn, execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { gunzipSync, gzipSync, zstdDecompressSync } from "node:zlib";
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freePort, s3Client, startMariaDB, TcpProxy, tools, type MariaDBEndpoint } from "../../harness/index.ts";
import { ensurePki, readPem } from "../../harness/pki.ts";
import { startProcess, stopPid } from "../../harness/process.ts";
import { waitFor } from "../../support/wait.ts";
import {
  BackupError,
  BucketClient,
  deleteBackup,
  locateRestoreSource,
  readBackupManifest,
  runBackup,
  runRestore,
  stagingDatabaseName,
  type BackupManifest,
  type BackupResult,
  type S3Location,
} from "@stateward/operator-mysql-backup";
import { createBigDatabase, createTortureDatabase, fingerprint, id, type DatabaseFingerprint } from "./torture.ts";

const env = inject("environment");
const run = promisify(execFile);
const suffix = randomBytes(3).toString("hex");
const root = { host: env.mysql.host, port: env.mysql.port, user: env.mysql.user, password: env.mysql.password };
const s3Options = {
  endpoint: env.s3.endpoint,
  region: env.s3.region,
  forcePathStyle: true,
  credentials: { accessKeyId: env.s3.accessKeyId, secretAccessKey: env.s3.secretAccessKey },
};
const at = (prefix: string): S3Location => ({ ...s3Options, bucket: env.s3.bucket, prefix });
let s3: S3Client;

async function connect(endpoint: Pick<MariaDBEndpoint, "host" | "port" | "user" | "password"> = root): Promise<mysql.Connection> {
  return mysql.createConnection({ host: endpoint.host, port: endpoint.port, user: endpoint.user, password: endpoint.password, charset: "utf8mb4" });
}

async function dropDatabases(conn: mysql.Connection, ...dbs: string[]): Promise<void> {
  for (const db of dbs) await conn.query(`DROP DATABASE IF EXISTS ${id(db)}`);
}

async function keysUnder(prefix: string): Promise<string[]> {
  const page = await s3.send(new ListObjectsV2Command({ Bucket: env.s3.bucket, Prefix: `${prefix}/` }));
  return (page.Contents ?? []).map((o) => o.Key ?? "");
}

async function incompleteUploadsUnder(prefix: string): Promise<string[]> {
  const page = await s3.send(new ListMultipartUploadsCommand({ Bucket: env.s3.bucket, Prefix: `${prefix}/` }));
  return (page.Uploads ?? []).map((u) => u.Key ?? "");
}

async function getObject(key: string): Promise<Buffer> {
  const res = await s3.send(new GetObjectCommand({ Bucket: env.s3.bucket, Key: key }));
  return Buffer.from(await res.Body!.transformToByteArray());
}

/** Feeds `sql` to the stock `mariadb` client, as a user restoring by hand would. */
function mariadbCli(sql: Buffer, args: string[] = []): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("mariadb", ["-h", root.host, "-P", String(root.port), "-u", root.user, ...args], {
      env: { ...process.env, MYSQL_PWD: root.password },
      stdio: ["pipe", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`mariadb exited with ${code}: ${stderr}`))));
    child.stdin.end(sql);
  });
}

function decompress(bytes: Buffer, compression: BackupManifest["compression"]): Buffer {
  if (compression === "gzip") return gunzipSync(bytes);
  if (compression === "zstd") return zstdDecompressSync(bytes);
  return bytes;
}

/** Samples the process's RSS (and the memory held by Buffers) while `work` runs. */
async function peakRss<T>(work: () => Promise<T>): Promise<{ value: T; peak: number; before: number; peakBuffers: number }> {
  const before = process.memoryUsage().rss;
  let peak = before;
  let peakBuffers = 0;
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    peak = Math.max(peak, m.rss);
    peakBuffers = Math.max(peakBuffers, m.arrayBuffers);
  }, 20);
  try {
    const value = await work();
    return { value, peak, before, peakBuffers };
  } finally {
    clearInterval(timer);
  }
}

const mib = (n: number): string => `${(n / 1024 / 1024).toFixed(1)} MiB`;

beforeAll(() => {
  s3 = s3Client(env.s3);
});
afterAll(() => s3.destroy());

describe("backup and restore of the torture schema and a million-row table", () => {
  const torture = `sw_torture_${suffix}`;
  const big = `sw_big_${suffix}`;
  const prefix = `engine-test/${suffix}/full`;
  let admin: mysql.Connection;
  let before: Record<string, DatabaseFingerprint>;
  let backup: BackupResult;
  let rowCount = 0;

  beforeAll(async () => {
    admin = await connect();
    await dropDatabases(admin, torture, big);
    const t0 = performance.now();
    await createTortureDatabase(admin, torture);
    await createBigDatabase(admin, big, 1_000_000);
    console.log(`torture schema and 1,000,000-row table created in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    before = { [torture]: await fingerprint(admin, torture), [big]: await fingerprint(admin, big) };
    for (const db of [torture, big]) {
      for (const table of Object.keys(before[db]!.checksums)) {
        const [rows] = await admin.query(`SELECT COUNT(*) AS n FROM ${id(db)}.${id(table)}`);
        rowCount += Number((rows as { n: number }[])[0]?.n);
      }
    }
  }, 180_000);

  afterAll(async () => {
    await dropDatabases(admin, torture, big);
    await admin.end();
    await deleteBackup(at(prefix)).catch(() => undefined);
  });

  it("backs up both databases consistently, streaming, with a manifest written last", async () => {
    const progress: number[] = [];
    const { value, peak, before: rssBefore, peakBuffers } = await peakRss(() =>
      runBackup({
        source: root,
        storage: at(prefix),
        databases: [torture, big],
        onProgress: (p) => progress.push(p.rows),
      }),
    );
    backup = value;
    const sqlMBps = backup.uncompressedSize / 1e6 / (backup.durations.dumpMs / 1000);
    console.log(
      `backup: ${backup.rows} rows, ${(backup.uncompressedSize / 1e6).toFixed(1)} MB of SQL -> ${(backup.size / 1e6).toFixed(1)} MB gzip in ${backup.durations.dumpMs} ms ` +
        `(${sqlMBps.toFixed(1)} MB/s of SQL; lock held ${backup.durations.lockMs} ms); RSS ${mib(rssBefore)} before, peak ${mib(peak)}; ` +
        `Buffers peak ${mib(peakBuffers)}`,
    );

    expect(backup.databases).toEqual([torture, big]);
    expect(backup.rows).toBe(rowCount);
    const manifest = await readBackupManifest(at(prefix));
    expect(manifest).toEqual(backup.manifest);
    expect(manifest.compression).toBe("gzip");
    expect(manifest.server.flavor).toBe("MariaDB");
    // Restore order: every schema object, then data, then post-data.
    const kinds = manifest.objects.map((o) => o.kind);
    expect(kinds.indexOf("data")).toBeGreaterThan(kinds.lastIndexOf("schema"));
    expect(kinds.indexOf("post-data")).toBeGreaterThan(kinds.lastIndexOf("data"));
    // Every table has data objects (the empty one too), the big one several.
    const tablesWithData = new Set(manifest.objects.filter((o) => o.kind === "data").map((o) => `${o.database}.${o.table}`));
    expect([...tablesWithData].sort()).toEqual(
      [...Object.keys(before[torture]!.checksums).map((t) => `${torture}.${t}`), `${big}.big`].sort(),
    );
    expect(manifest.objects.filter((o) => o.table === "big").length).toBeGreaterThan(1);
    expect(manifest.objects.find((o) => o.table === "empty_table")?.rows).toBe(0);
    // Each object as stored matches its size and SHA-256.
    const keys = await keysUnder(prefix);
    expect(keys.sort()).toEqual([...manifest.objects.map((o) => `${prefix}/${o.key}`), `${prefix}/manifest.json`].sort());
    const sample = manifest.objects.find((o) => o.kind === "post-data")!;
    const stored = await getObject(`${prefix}/${sample.key}`);
    expect(stored.length).toBe(sample.size);
    expect(createHashHex(stored)).toBe(sample.sha256);
    expect(decompress(stored, "gzip").length).toBe(sample.uncompressedSize);
    // MyISAM is outside the snapshot: the backup says so.
    expect(backup.warnings.join("\n")).toMatch(/legacy.*MyISAM/);
    expect(progress.length).toBeGreaterThan(0);
    expect(await incompleteUploadsUnder(prefix)).toEqual([]);
    // Memory does not follow the data: ~190 MB of SQL went through, a
    // fraction of it was ever held in buffers at once.
    expect(peakBuffers).toBeLessThan(120 * 1024 * 1024);
  }, 120_000);

  it("refuses to write over a complete backup", async () => {
    await expect(runBackup({ source: root, storage: at(prefix), databases: [torture] })).rejects.toMatchObject({
      reason: "BackupExists",
      message: expect.stringContaining(prefix) as unknown,
    });
  });

  it("restores after the databases are dropped: identical checksums and definitions", async () => {
    await dropDatabases(admin, torture, big);
    const t0 = performance.now();
    const result = await runRestore({ target: root, source: { backup: at(prefix), manifestSha256: backup.manifestSha256 } });
    const seconds = (performance.now() - t0) / 1000;
    console.log(`restore: ${(result.bytes / 1e6).toFixed(1)} MB of SQL in ${seconds.toFixed(1)} s (${(result.bytes / 1e6 / seconds).toFixed(1)} MB/s)`);
    expect(result.objects).toBe(backup.objects);
    expect(result.rows).toBe(backup.rows);
    expect(await fingerprint(admin, torture)).toEqual(before[torture]);
    expect(await fingerprint(admin, big)).toEqual(before[big]);
  }, 180_000);

  it("restores with the stock mariadb client alone, applying the objects in manifest order", async () => {
    await dropDatabases(admin, torture, big);
    const manifest = await readBackupManifest(at(prefix));
    for (const o of manifest.objects) {
      await mariadbCli(decompress(await getObject(`${prefix}/${o.key}`), manifest.compression));
    }
    expect(await fingerprint(admin, torture)).toEqual(before[torture]);
    expect(await fingerprint(admin, big)).toEqual(before[big]);
  }, 180_000);

  it("restores only the databases asked for", async () => {
    await dropDatabases(admin, torture);
    const result = await runRestore({ target: root, source: { backup: at(prefix) }, databases: [torture] });
    expect(result.databases).toEqual([torture]);
    expect(result.objects).toBe(backup.manifest.objects.filter((o) => o.database === torture).length);
    expect(await fingerprint(admin, torture)).toEqual(before[torture]);
    await expect(runRestore({ target: root, source: { backup: at(prefix) }, databases: ["not_in_it"] })).rejects.toMatchObject({
      reason: "DatabaseNotFound",
    });
    await expect(runRestore({ target: root, source: { backup: at(prefix), manifestSha256: "0".repeat(64) } })).rejects.toMatchObject({
      reason: "ChecksumMismatch",
      message: expect.stringMatching(/manifest\.json changed since the backup was taken/) as unknown,
    });
  }, 60_000);

  it("restores a mariadb-dump file, plain or gzip, as the stock client does", async () => {
    const { stdout: dump } = await run(
      "mariadb-dump",
      ["-h", root.host, "-P", String(root.port), "-u", root.user, "--single-transaction", "--routines", "--triggers", "--events", "--databases", torture],
      { env: { ...process.env, MYSQL_PWD: root.password }, encoding: "buffer", maxBuffer: 256 * 1024 * 1024 },
    );
    // mariadb-dump writes FLOAT with 6 significant digits, so its restore is
    // not the original: the reference is the stock client applying the same file.
    await dropDatabases(admin, torture);
    await mariadbCli(dump);
    const reference = await fingerprint(admin, torture);
    expect(reference.definitions).toEqual(before[torture]!.definitions);
    expect({ ...reference.checksums, types: "" }).toEqual({ ...before[torture]!.checksums, types: "" });

    for (const [name, body] of [
      ["dump.sql", dump],
      ["dump.sql.gz", gzipSync(dump)],
    ] as const) {
      const key = `${prefix}-dumps/${name}`;
      await s3.send(new PutObjectCommand({ Bucket: env.s3.bucket, Key: key, Body: body }));
      await dropDatabases(admin, torture);
      const source = await locateRestoreSource({ ...s3Options, bucket: env.s3.bucket, path: key });
      expect(source).toEqual({ dumpFile: { ...s3Options, bucket: env.s3.bucket, key } });
      const result = await runRestore({ target: root, source });
      expect(result.kind).toBe("dumpFile");
      expect(result.databases).toEqual([torture]);
      expect(await fingerprint(admin, torture)).toEqual(reference);
    }
    await s3.send(
      new DeleteObjectsCommand({
        Bucket: env.s3.bucket,
        Delete: { Objects: [{ Key: `${prefix}-dumps/dump.sql` }, { Key: `${prefix}-dumps/dump.sql.gz` }] },
      }),
    );
  }, 120_000);

  it("refuses a corrupted object, naming it, and leaves the target as it was", async () => {
    const manifest = await readBackupManifest(at(prefix));
    const target = manifest.objects.find((o) => o.table === "customer")!;
    const key = `${prefix}/${target.key}`;
    const original = await getObject(key);
    // Valid gzip of valid SQL, just not what was backed up.
    const forged = gzipSync(
      Buffer.from(decompress(original, "gzip").toString("utf8").replace("'Ada'", "'Eve'"), "utf8"),
    );
    await s3.send(new PutObjectCommand({ Bucket: env.s3.bucket, Key: key, Body: forged }));
    try {
      await dropDatabases(admin, torture);
      const err = (await runRestore({ target: root, source: { backup: at(prefix) }, databases: [torture] }).catch((e: unknown) => e)) as BackupError;
      expect(err).toBeInstanceOf(BackupError);
      expect(err.reason).toBe("ChecksumMismatch");
      expect(err.message).toContain(target.key);
      expect(err.message).toMatch(/the target was not changed/);
      // Staged: the database the restore would have created does not exist.
      const [dbs] = await admin.query("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", [torture]);
      expect(dbs).toEqual([]);
    } finally {
      await s3.send(new PutObjectCommand({ Bucket: env.s3.bucket, Key: key, Body: original }));
    }
  }, 60_000);

  it("refuses an object damaged at rest in the bucket (its bytes no longer match the checksum S3 stored with it), naming it", async () => {
    // Damaged on the S3 server's disk, not replaced through the API: the checksum stored at upload stays.
    const damage = (key: string): (() => void) => {
      const file = join(env.s3.dataDir ?? "", env.s3.bucket, key);
      const original = readFileSync(file);
      const damaged = Buffer.from(original);
      damaged[damaged.length - 1]! ^= 0x01;
      writeFileSync(file, damaged);
      return () => writeFileSync(file, original);
    };
    expect(env.s3.dataDir, "the test S3 server's data directory").toBeDefined();
    const manifest = await readBackupManifest(at(prefix));
    const target = manifest.objects.find((o) => o.table === "customer")!;
    await dropDatabases(admin, torture);
    // InPlace first downloads every object only to check it: there the S3 checksum is what refuses it (Staged
    // decompresses as it downloads, and the damaged gzip trailer may be noticed first).
    for (const [key, mode, names] of [
      [`${prefix}/manifest.json`, "Staged", `s3://${env.s3.bucket}/${prefix}/manifest.json is damaged`],
      [`${prefix}/${target.key}`, "Staged", target.key],
      // Downloaded three times first: a damage on the way would have been gone at the next download.
      [`${prefix}/${target.key}`, "InPlace", `${target.key} is damaged: read 3 times, its bytes never matched the checksum S3 stored with it (Checksum mismatch`],
    ] as const) {
      const repair = damage(key);
      try {
        const err = (await runRestore({ target: root, source: { backup: at(prefix) }, databases: [torture], mode }).catch((e: unknown) => e)) as BackupError;
        expect(err).toBeInstanceOf(BackupError);
        expect({ mode, reason: err.reason, names: err.message.includes(names) }).toEqual({ mode, reason: "ChecksumMismatch", names: true });
        const [dbs] = await admin.query("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", [torture]);
        expect(dbs).toEqual([]);
      } finally {
        repair();
      }
    }
  }, 60_000);

  it("deletes a backup completely", async () => {
    const result = await deleteBackup(at(prefix));
    expect(result.deletedObjects).toBe(backup.objects + 1);
    expect(await keysUnder(prefix)).toEqual([]);
    await expect(readBackupManifest(at(prefix))).rejects.toMatchObject({ reason: "ManifestNotFound" });
  });
});

function createHashHex(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

describe("compressions, cancellation and S3 failures", () => {
  const db = `sw_small_${suffix}`;
  const prefix = `engine-test/${suffix}/small`;
  let admin: mysql.Connection;
  let before: DatabaseFingerprint;

  beforeAll(async () => {
    admin = await connect();
    await dropDatabases(admin, db);
    await admin.query(`CREATE DATABASE ${id(db)}`);
    await admin.query(`CREATE TABLE ${id(db)}.t (id INT PRIMARY KEY, v VARCHAR(200), b VARBINARY(64)) ENGINE=InnoDB`);
    // ~60 MB of SQL: long enough to be caught mid-upload.
    await admin.query(
      `INSERT INTO ${id(db)}.t SELECT seq, CONCAT(REPEAT(MD5(seq), 5), '表'), UNHEX(SHA2(seq, 512)) FROM ${id(db)}.seq_1_to_200000`,
    );
    before = await fingerprint(admin, db);
  }, 60_000);

  afterAll(async () => {
    await dropDatabases(admin, db);
    await admin.end();
    for (const p of ["zstd", "none", "retry", "aborted", "unanswered", "damaged", "unreachable", "denied", "nobucket"]) await deleteBackup(at(`${prefix}/${p}`)).catch(() => undefined);
  });

  it.each(["zstd", "none"] as const)("round-trips with %s compression and many small objects", async (compression) => {
    // The uncompressed one also sends checksums only where S3 requires them, as for older stores.
    const location: S3Location = { ...at(`${prefix}/${compression}`), ...(compression === "none" ? { requestChecksumCalculation: "WHEN_REQUIRED" } : {}) };
    const backup = await runBackup({ source: root, storage: location, databases: [db], compression, objectSize: 4 * 1024 * 1024 });
    expect(backup.manifest.compression).toBe(compression);
    expect(backup.manifest.objects.filter((o) => o.kind === "data").length).toBeGreaterThan(5);
    const stored = await getObject(`${location.prefix}/${backup.manifest.objects[0]!.key}`);
    expect(decompress(stored, compression).toString("utf8")).toMatch(/^-- Stateward MySQL backup: schema of database/);
    await dropDatabases(admin, db);
    await runRestore({ target: root, source: { backup: location }, parallelism: 3 });
    expect(await fingerprint(admin, db)).toEqual(before);
  }, 60_000);

  it("stops a restore through its signal, leaving the target untouched and no staging database", async () => {
    const controller = new AbortController();
    const runId = `abort-${suffix}`;
    const err = (await runRestore({
      target: root,
      source: { backup: at(`${prefix}/zstd`) },
      parallelism: 1,
      runId,
      signal: controller.signal,
      onProgress: (p) => {
        if (p.objectsDone >= 2) controller.abort();
      },
    }).catch((e: unknown) => e)) as BackupError;
    expect(err).toBeInstanceOf(BackupError);
    expect(err.reason).toBe("Aborted");
    expect(await fingerprint(admin, db)).toEqual(before);
    const [staging] = await admin.query("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE ?", [`${stagingDatabaseName(runId, 0).slice(0, -2)}%`]);
    expect(staging).toEqual([]);
  }, 60_000);

  it("clears what a killed attempt left in its folder, and never touches other files there", async () => {
    const location = at(`${prefix}/retry`);
    const folder = location.prefix;
    await s3.send(new CreateMultipartUploadCommand({ Bucket: env.s3.bucket, Key: `${folder}/0001-${db}/data/0001-t.0001.sql.gz` }));
    await s3.send(new PutObjectCommand({ Bucket: env.s3.bucket, Key: `${folder}/0009-stale/schema.sql.gz`, Body: "stale" }));
    await s3.send(new PutObjectCommand({ Bucket: env.s3.bucket, Key: `${folder}/README.txt`, Body: "not ours" }));
    const backup = await runBackup({ source: root, storage: location, databases: [db] });
    expect(await incompleteUploadsUnder(folder)).toEqual([]);
    expect((await keysUnder(folder)).sort()).toEqual(
      [`${folder}/README.txt`, `${folder}/manifest.json`, ...backup.manifest.objects.map((o) => `${folder}/${o.key}`)].sort(),
    );
    const deleted = await deleteBackup(location);
    expect(deleted.deletedObjects).toBe(backup.objects + 1);
    expect(await keysUnder(folder)).toEqual([`${folder}/README.txt`]);
    await s3.send(new DeleteObjectsCommand({ Bucket: env.s3.bucket, Delete: { Objects: [{ Key: `${folder}/README.txt` }] } }));
  }, 60_000);

  it("aborted through its signal: multipart uploads aborted, nothing left in the folder", async () => {
    const location = at(`${prefix}/aborted`);
    const controller = new AbortController();
    const backup = runBackup({
      source: root,
      storage: location,
      databases: [db],
      compression: "none",
      upload: { partSize: 5 * 1024 * 1024 },
      signal: controller.signal,
    });
    const failure = backup.catch((e: unknown) => e);
    await waitFor("a multipart upload in flight", async () => ((await incompleteUploadsUnder(location.prefix)).length > 0 ? true : undefined), 30_000, 10);
    controller.abort();
    const err = (await failure) as BackupError;
    expect(err).toBeInstanceOf(BackupError);
    expect(err.reason).toBe("Aborted");
    expect(await incompleteUploadsUnder(location.prefix)).toEqual([]);
    expect(await keysUnder(location.prefix)).toEqual([]);
    // The server stops too, instead of streaming the table into a dead socket.
    await waitFor("the dump query to end on the server", async () => {
      const [rows] = await admin.query("SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT CONCAT(\\_binary%'");
      return Number((rows as { n: number }[])[0]?.n) === 0 ? true : undefined;
    }, 10_000);
  }, 60_000);

  /** A database of two rows, and a proxy in front of S3 (stop it when done). */
  async function tinyDatabaseBehindProxy(tiny: string): Promise<TcpProxy> {
    await admin.query(`CREATE DATABASE ${id(tiny)}`);
    await admin.query(`CREATE TABLE ${id(tiny)}.t (id INT PRIMARY KEY, v VARCHAR(20))`);
    await admin.query(`INSERT INTO ${id(tiny)}.t VALUES (1, 'one'), (2, 'two')`);
    const proxy = new TcpProxy({ host: "127.0.0.1", port: Number(new URL(env.s3.endpoint).port) });
    await proxy.start();
    return proxy;
  }

  it("stored a manifest whose answer never came back: the failed backup leaves no manifest behind, and the next one to that folder completes", async () => {
    // S3 does the PUT of manifest.json; the backup never hears so, times out and fails. Its objects
    // are deleted: a manifest left behind would make the folder look complete without them (and
    // refuse the next backup there as BackupExists).
    const tiny = `sw_tiny_${suffix}`;
    const proxy = await tinyDatabaseBehindProxy(tiny);
    const location = { ...at(`${prefix}/unanswered`), endpoint: `http://127.0.0.1:${proxy.port}`, idleTimeoutMs: 1_000 };
    try {
      proxy.leaveUnanswered(/^PUT \S*\/manifest\.json[ ?]/m);
      const err = (await runBackup({ source: root, storage: location, databases: [tiny] }).catch((e: unknown) => e)) as BackupError;
      expect(err).toBeInstanceOf(BackupError);
      expect(proxy.unanswered).toBeGreaterThan(0);
      expect(await keysUnder(location.prefix)).toEqual([]);

      proxy.leaveUnanswered(undefined);
      const backup = await runBackup({ source: root, storage: location, databases: [tiny] });
      expect(await keysUnder(location.prefix)).toContain(`${location.prefix}/manifest.json`);
      expect(backup.objects).toBeGreaterThan(0);
    } finally {
      await proxy.stop();
      await dropDatabases(admin, tiny);
    }
  }, 120_000);

  it("reads a manifest, a data object InPlace verifies or a post-data object again when its bytes were damaged on the way, and calls it damaged only when no read arrives whole", async () => {
    // The proxy alters the first byte of chosen GET answers: S3 sent the right bytes, the checksum it
    // stored with the object (sent beside them) no longer matches what arrived.
    const tiny = `sw_damaged_${suffix}`;
    const proxy = await tinyDatabaseBehindProxy(tiny);
    const location = { ...at(`${prefix}/damaged`), endpoint: `http://127.0.0.1:${proxy.port}` };
    const rows = async (): Promise<unknown> => (await admin.query(`SELECT id, v FROM ${id(tiny)}.t ORDER BY id`))[0];
    try {
      // A view: the backup gets a post-data object, which a staged restore reads whole before the swap.
      await admin.query(`CREATE VIEW ${id(tiny)}.odd AS SELECT id FROM ${id(tiny)}.t WHERE id % 2 = 1`);
      await runBackup({ source: root, storage: location, databases: [tiny] });
      await dropDatabases(admin, tiny);
      const manifestGet = /^GET \S*\/manifest\.json[ ?]/m;

      proxy.damageAnswers(manifestGet, 1);
      await runRestore({ target: root, source: { backup: location }, databases: [tiny] });
      expect({ damaged: proxy.damaged, rows: await rows() }).toEqual({ damaged: 1, rows: [{ id: 1, v: "one" }, { id: 2, v: "two" }] });

      await dropDatabases(admin, tiny);
      proxy.damageAnswers(manifestGet, 3);
      const err = (await runRestore({ target: root, source: { backup: location }, databases: [tiny] }).catch((e: unknown) => e)) as BackupError;
      expect(err).toBeInstanceOf(BackupError);
      expect({ damaged: proxy.damaged, reason: err.reason, message: err.message }).toEqual({
        damaged: 4,
        reason: "ChecksumMismatch",
        message: expect.stringContaining(`s3://${env.s3.bucket}/${location.prefix}/manifest.json is damaged: read 3 times`) as string,
      });
      const absent = async (): Promise<unknown> => (await admin.query("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", [tiny]))[0];
      expect(await absent()).toEqual([]);

      // InPlace's first pass downloads every object before anything is applied: a data object damaged on
      // the way is downloaded again, and the restore completes.
      const dataGet = /^GET \S*\/data\/\S+[ ?]/m;
      proxy.damageAnswers(dataGet, 1);
      await runRestore({ target: root, source: { backup: location }, databases: [tiny], mode: "InPlace" });
      expect({ damaged: proxy.damaged, rows: await rows() }).toEqual({ damaged: 5, rows: [{ id: 1, v: "one" }, { id: 2, v: "two" }] });

      // Damaged at every download: refused as damaged, before anything is applied.
      await dropDatabases(admin, tiny);
      proxy.damageAnswers(dataGet, 3);
      const streamed = (await runRestore({ target: root, source: { backup: location }, databases: [tiny], mode: "InPlace" }).catch((e: unknown) => e)) as BackupError;
      expect(streamed).toBeInstanceOf(BackupError);
      expect({ damaged: proxy.damaged, reason: streamed.reason, message: streamed.message }).toEqual({
        damaged: 8,
        reason: "ChecksumMismatch",
        message: expect.stringMatching(/^s3:\/\/\S+\/data\/\S+ is damaged: read 3 times, its bytes never matched the checksum S3 stored with it/) as string,
      });
      expect(await absent()).toEqual([]);

      // Staged: the post-data object is read whole before the swap, nothing applied to the target yet: read
      // again when damaged on the way, and the restore completes with the view.
      const postDataGet = /^GET \S*\/post-data\.sql\S*[ ?]/m;
      proxy.damageAnswers(postDataGet, 1);
      await runRestore({ target: root, source: { backup: location }, databases: [tiny], mode: "Staged" });
      const view = async (): Promise<unknown> => (await admin.query(`SELECT id FROM ${id(tiny)}.odd ORDER BY id`))[0];
      expect({ damaged: proxy.damaged, view: await view() }).toEqual({ damaged: 9, view: [{ id: 1 }] });

      // Damaged at every download: refused as damaged, the target as it was.
      await dropDatabases(admin, tiny);
      proxy.damageAnswers(postDataGet, 3);
      const staged = (await runRestore({ target: root, source: { backup: location }, databases: [tiny], mode: "Staged" }).catch((e: unknown) => e)) as BackupError;
      expect(staged).toBeInstanceOf(BackupError);
      expect({ damaged: proxy.damaged, reason: staged.reason, message: staged.message }).toEqual({
        damaged: 12,
        reason: "ChecksumMismatch",
        message: expect.stringMatching(/^s3:\/\/\S+\/post-data\.sql\S* is damaged: read 3 times, its bytes never matched the checksum S3 stored with it/) as string,
      });
      expect(await absent()).toEqual([]);
    } finally {
      await proxy.stop();
      await dropDatabases(admin, tiny);
    }
  }, 120_000);

  it("fails before touching the database when S3 is unreachable", async () => {
    const port = await freePort();
    // The MySQL side is unusable too: the error must still be about S3.
    const err = (await runBackup({
      source: { host: "127.0.0.1", port: 1, user: "nobody" },
      storage: { ...at(`${prefix}/unreachable`), endpoint: `http://127.0.0.1:${port}` },
    }).catch((e: unknown) => e)) as BackupError;
    expect(err.reason).toBe("StorageUnreachable");
    expect(err.message).toContain(`http://127.0.0.1:${port}`);
    expect(err.retryable).toBe(true);
  }, 60_000);

  it("says the keys are wrong, without showing them", async () => {
    const wrong = `${env.s3.secretAccessKey}x`;
    const err = (await runBackup({
      source: root,
      storage: { ...at(`${prefix}/denied`), credentials: { accessKeyId: env.s3.accessKeyId, secretAccessKey: wrong } },
      databases: [db],
    }).catch((e: unknown) => e)) as BackupError;
    expect(err.reason).toBe("StorageAccessDenied");
    expect(err.message).toMatch(/denied access.*check the access key, the secret key/);
    expect(err.message).not.toContain(wrong);
    expect(err.message).not.toContain(env.s3.accessKeyId);
    expect(await keysUnder(`${prefix}/denied`)).toEqual([]);
  });

  it("says the bucket does not exist", async () => {
    const bucket = `missing-${suffix}`;
    const err = (await runBackup({ source: root, storage: { ...at(`${prefix}/nobucket`), bucket }, databases: [db] }).catch((e: unknown) => e)) as BackupError;
    expect(err.reason).toBe("BucketNotFound");
    expect(err.message).toContain(`bucket "${bucket}" does not exist`);
  });

  it("says which database does not exist, and refuses a restore without a manifest", async () => {
    await expect(runBackup({ source: root, storage: at(`${prefix}/nobucket`), databases: ["sw_no_such_db"] })).rejects.toMatchObject({
      reason: "DatabaseNotFound",
      message: expect.stringContaining("sw_no_such_db") as unknown,
    });
    await expect(runRestore({ target: root, source: { backup: at(`${prefix}/never-written`) } })).rejects.toMatchObject({
      reason: "ManifestNotFound",
    });
  });
});

describe("a server with a binary log: consistent snapshot, and the server going down", () => {
  const db = `sw_ledger_${suffix}`;
  const prefix = `engine-test/${suffix}/ledger`;
  let dir: string;
  let server: MariaDBEndpoint & { pid: number };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sw-backup-mariadb-"));
    server = await startMariaDB({ dir, args: ["--log-bin=mysql-bin", "--server-id=7", "--binlog-format=ROW"] });
    const conn = await connect(server);
    await conn.query(`CREATE DATABASE ${id(db)}`);
    await conn.query(`CREATE TABLE ${id(db)}.ledger (id BIGINT AUTO_INCREMENT PRIMARY KEY, txn INT NOT NULL, k INT NOT NULL, pad VARCHAR(100)) ENGINE=InnoDB`);
    await conn.query(`CREATE TABLE ${id(db)}.filler (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=InnoDB`);
    await conn.query(`INSERT INTO ${id(db)}.filler SELECT seq, REPEAT(MD5(seq), 6) FROM ${id(db)}.seq_1_to_300000`);
    await conn.end();
  }, 180_000);

  afterAll(async () => {
    if (server) {
      try {
        process.kill(server.pid, "SIGKILL");
      } catch {
        // already gone (the last test stops it)
      }
    }
    rmSync(dir, { recursive: true, force: true });
    for (const p of ["consistent", "down"]) await deleteBackup(at(`${prefix}/${p}`)).catch(() => undefined);
  });

  it("restores exactly the transactions committed up to the recorded GTID position", async () => {
    const writer = await connect(server);
    await writer.query(`USE ${id(db)}`);
    const committed: { txn: number; seq: number }[] = [];
    let stop = false;
    const writing = (async () => {
      for (let txn = 1; !stop; txn++) {
        await writer.beginTransaction();
        for (let k = 1; k <= 5; k++) await writer.query("INSERT INTO ledger (txn, k, pad) VALUES (?, ?, REPEAT('x', 50))", [txn, k]);
        await writer.commit();
        const [rows] = await writer.query("SELECT @@last_gtid AS gtid");
        committed.push({ txn, seq: Number(String((rows as { gtid: string }[])[0]?.gtid).split("-")[2]) });
      }
    })();
    await waitFor("the writer to get going", () => (committed.length >= 20 ? true : undefined), 30_000, 10);
    const location = at(`${prefix}/consistent`);
    const result = await runBackup({ source: server, storage: location, databases: [db] });
    const atEnd = committed.length;
    await waitFor("writes after the backup", () => (committed.length >= atEnd + 10 ? true : undefined), 30_000, 10);
    stop = true;
    await writing;
    await writer.end();

    expect(result.position?.binlogFile).toMatch(/^mysql-bin\.\d+$/);
    expect(result.position?.binlogPosition).toBeGreaterThan(0);
    expect(result.position?.gtid).toMatch(/^0-7-\d+$/);
    expect(result.manifest.position).toEqual(result.position);
    const snapshotSeq = Number(result.position!.gtid!.split("-")[2]);
    const expected = committed.filter((c) => c.seq <= snapshotSeq).map((c) => c.txn);
    // Writes happened on both sides of the snapshot, so the test can fail.
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(committed.length);

    const conn = await connect(server);
    await dropDatabases(conn, db);
    await runRestore({ target: server, source: { backup: location } });
    const [rows] = await conn.query(`SELECT txn, COUNT(*) AS n FROM ${id(db)}.ledger GROUP BY txn ORDER BY txn`);
    const restored = rows as { txn: number; n: number }[];
    // Every transaction whole or absent, and exactly those up to the position.
    expect(restored.filter((r) => Number(r.n) !== 5)).toEqual([]);
    expect(restored.map((r) => r.txn)).toEqual(expected);
    await conn.end();
  }, 120_000);

  it("fails with a clear, retryable error and leaves nothing in S3 when the server dies mid-backup", async () => {
    const location = at(`${prefix}/down`);
    const backup = runBackup({ source: server, storage: location, databases: [db], compression: "none", upload: { partSize: 5 * 1024 * 1024 } });
    const failure = backup.catch((e: unknown) => e);
    await waitFor("a multipart upload in flight", async () => ((await incompleteUploadsUnder(location.prefix)).length > 0 ? true : undefined), 30_000, 10);
    process.kill(server.pid, "SIGKILL");
    const err = (await failure) as BackupError;
    expect(err).toBeInstanceOf(BackupError);
    expect(err.reason).toBe("ConnectionLost");
    expect(err.message).toContain(`lost the connection to MySQL at ${server.host}:${server.port}`);
    expect(err.retryable).toBe(true);
    expect(await incompleteUploadsUnder(location.prefix)).toEqual([]);
    expect(await keysUnder(location.prefix)).toEqual([]);
  }, 60_000);
});

describe("S3 over TLS with a custom CA", () => {
  const db = `sw_tls_${suffix}`;
  let dir: string;
  let gateway: { pid: number; endpoint: string };
  let ca: string;
  let admin: mysql.Connection;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sw-s3-tls-"));
    // A CA of our own and a server certificate for 127.0.0.1 signed by it.
    const pki = await ensurePki(join(dir, "pki"));
    ca = readPem(pki.caCert);
    const port = await freePort();
    mkdirSync(join(dir, "data"));
    mkdirSync(join(dir, "meta"));
    const proc = startProcess({
      name: "versitygw-tls",
      command: tools.versitygw(),
      args: ["--port", `127.0.0.1:${port}`, "--cert", pki.serverCert, "--key", pki.serverKey, "posix", "--sidecar", join(dir, "meta"), join(dir, "data")],
      env: { ...process.env, ROOT_ACCESS_KEY: env.s3.accessKeyId, ROOT_SECRET_KEY: env.s3.secretAccessKey },
      logFile: join(dir, "versitygw.log"),
    });
    gateway = { pid: proc.pid, endpoint: `https://127.0.0.1:${port}` };
    await waitFor("the TLS gateway", async () => {
      await runBackup({ source: root, storage: { ...tlsLocation("probe"), bucket: "no-such-bucket" } }).catch((e: unknown) => {
        if ((e as BackupError).reason !== "BucketNotFound") throw e as Error;
      });
      return true;
    }, 30_000, 200);
    const client = new BucketClient({ ...tlsLocation(""), bucket: env.s3.bucket });
    await client.client.send(new CreateBucketCommand({ Bucket: env.s3.bucket }));
    client.destroy();
    admin = await connect();
    await dropDatabases(admin, db);
    await admin.query(`CREATE DATABASE ${id(db)}`);
    await admin.query(`CREATE TABLE ${id(db)}.t (id INT PRIMARY KEY, v VARCHAR(20))`);
    await admin.query(`INSERT INTO ${id(db)}.t VALUES (1, 'over tls'), (2, '表')`);
  }, 60_000);

  afterAll(async () => {
    await dropDatabases(admin, db);
    await admin.end();
    if (gateway) await stopPid(gateway.pid);
    rmSync(dir, { recursive: true, force: true });
  });

  function tlsLocation(prefix: string, withCa = true): S3Location {
    return { ...at(prefix), endpoint: gateway.endpoint, ...(withCa ? { caBundle: ca } : {}) };
  }

  it("backs up and restores through an endpoint whose certificate only the given CA vouches for", async () => {
    const before = await fingerprint(admin, db);
    const backup = await runBackup({ source: root, storage: tlsLocation("tls/b1"), databases: [db] });
    expect(backup.objects).toBeGreaterThan(1);
    await dropDatabases(admin, db);
    await runRestore({ target: root, source: { backup: tlsLocation("tls/b1") } });
    expect(await fingerprint(admin, db)).toEqual(before);
  }, 60_000);

  it("refuses the endpoint without that CA, saying why", async () => {
    const err = (await runBackup({ source: root, storage: tlsLocation("tls/b2", false), databases: [db] }).catch((e: unknown) => e)) as BackupError;
    expect(err.reason).toBe("StorageUnreachable");
    expect(err.message).toMatch(/SELF_SIGNED|UNABLE_TO_VERIFY|certificate/i);
  }, 60_000);
});
