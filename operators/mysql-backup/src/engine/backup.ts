// runBackup: a consistent, verifiable backup of MySQL databases into an S3
// folder. Order of work:
//   1. check the bucket (and that no complete backup is already there)
//   2. connect; take the snapshot (snapshot.ts); read the schema
//   3. dump tables in parallel, one connection each, largest first;
//      meanwhile upload the schema and post-data objects
//   4. write manifest.json — last, so its presence means "complete"
// On any failure or abort: every upload is aborted (no multipart upload left
// behind), the objects already written are deleted, and the error says why.
import type { Logger } from "@stateward/core";
import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { flavorOf, type Flavor as ServerFlavor } from "@stateward/mysql";
import { MySQLSession, type MySQLConnectionOptions } from "./connection.ts";
import { abortedError, BackupError, messageOf, throwIfAborted } from "./errors.ts";
import { describeDatabase, hasPostData, listUserDatabases, renderPostDataObject, renderSchemaObject, type DatabaseSchema, type TableSchema } from "./schema.ts";
import { SYSTEM_DATABASES as systemDatabases } from "@stateward/mysql";
import { prepareDumpSession, takeSnapshot } from "./snapshot.ts";
import { qualifiedName, validateIdentifier } from "./sql.ts";
import { dumpTable, type DataPart } from "./table-dump.ts";
import { clearBackupFolder } from "../storage/backup-folder.ts";
import { parseCompression, type Compression } from "../storage/compression.ts";
import { dataKey, databaseFolder, postDataKey, schemaKey } from "../storage/layout.ts";
import { manifestFileName, manifestFormat, manifestFormatVersion, serializeManifest, type BackupManifest, type ManifestObject, type ReplicationPosition } from "../storage/manifest.ts";
import { ObjectUpload, type StoredObject, type UploadTuning } from "../storage/object-upload.ts";
import { BackupStore, type S3Location } from "../storage/s3.ts";

export interface BackupOptions {
  /** The server to back up. The user needs SELECT, SHOW VIEW, TRIGGER, EVENT, RELOAD (for the lock) and, for the position, BINLOG MONITOR / REPLICATION CLIENT. */
  source: MySQLConnectionOptions;
  /** Where the backup goes; the folder must not hold a complete backup yet (see `overwrite`). */
  storage: S3Location;
  /** Databases to back up. Defaults to every database except the server's own (mysql, sys, information_schema, performance_schema). */
  databases?: string[];
  /** Defaults to "gzip". */
  compression?: Compression;
  /** Defaults to 6 for gzip (as `gzip` itself), 3 for zstd. */
  compressionLevel?: number;
  /**
   * Tables dumped at once, each on its own connection inside the shared
   * snapshot (plus one connection that takes the lock). Defaults to 2: a
   * small manager pod has about that many cores for compression.
   */
  parallelism?: number;
  /** A data object ends once it holds this many uncompressed bytes. Defaults to 64 MiB, which bounds a restore's temporary files and lets big tables restore in parallel. */
  objectSize?: number;
  /** Upper bound of one INSERT statement. Defaults to 1 MiB, well under any server's max_allowed_packet. */
  statementSize?: number;
  /** Multipart upload tuning (part size, parts in flight per object). */
  upload?: UploadTuning;
  /** How long to wait for the global read lock before giving up. Defaults to 60 s. */
  lockWaitTimeoutSeconds?: number;
  /**
   * Replace a complete backup already at the location instead of refusing:
   * its objects are deleted, manifest first, before the new one starts.
   * Defaults to false.
   */
  overwrite?: boolean;
  signal?: AbortSignal;
  /** Called about once a second while dumping, and once at the end. */
  onProgress?: (progress: BackupProgress) => void;
  logger?: Logger;
}

export interface BackupProgress {
  phase: "snapshot" | "dumping" | "finishing" | "done";
  tablesTotal: number;
  tablesDone: number;
  rows: number;
  /** SQL bytes produced so far (before compression). */
  bytes: number;
  /** Stored bytes of the objects completed so far. */
  storedBytes: number;
}

export interface BackupResult {
  /** Where it is: `url` is `s3://bucket/prefix/`. */
  location: { bucket: string; prefix: string; manifestKey: string; url: string };
  manifest: BackupManifest;
  /**
   * SHA-256 of manifest.json as written: one checksum for the whole backup
   * (the manifest holds every object's). Give it to runRestore to have it
   * refuse a manifest changed since.
   */
  manifestSha256: string;
  server: { version: string; flavor: ServerFlavor };
  /** Replication position of the snapshot (null when binary logging is off or not readable). */
  position: ReplicationPosition | null;
  databases: string[];
  objects: number;
  rows: number;
  /** Stored (compressed) bytes, manifest excluded. */
  size: number;
  uncompressedSize: number;
  startedAt: Date;
  /** The moment the data represents. */
  snapshotAt: Date;
  completedAt: Date;
  durations: { lockMs: number; dumpMs: number; totalMs: number };
  /** Things a user should know that did not fail the backup (non-transactional tables, missing privileges for the position, ...). */
  warnings: string[];
}

const defaults = {
  compression: "gzip" as Compression,
  parallelism: 2,
  objectSize: 64 * 1024 * 1024,
  statementSize: 1024 * 1024,
  lockWaitTimeoutSeconds: 60,
};

const contentTypes: Readonly<Record<Compression, string>> = { gzip: "application/gzip", zstd: "application/zstd", none: "application/sql" };

/** Engines whose tables the consistent snapshot covers. */
const transactionalEngines = new Set(["innodb", "rocksdb"]);

function positive(value: number | undefined, fallback: number, what: string, max = Number.MAX_SAFE_INTEGER): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < 1 || v > max) throw new BackupError("InvalidOptions", `${what} must be an integer between 1 and ${max}`);
  return v;
}

/** Every upload of a run, so a failure can abort and delete all of them. */
class Uploads {
  private readonly all: ObjectUpload[] = [];
  private readonly store: BackupStore;
  private readonly compression: Compression;
  private readonly level: number | undefined;
  private readonly tuning: UploadTuning;
  private closed = false;

  constructor(store: BackupStore, compression: Compression, level: number | undefined, tuning: UploadTuning) {
    this.store = store;
    this.compression = compression;
    this.level = level;
    this.tuning = tuning;
  }

  open(key: string): ObjectUpload {
    if (this.closed) throw new BackupError("Aborted", "the backup is being discarded");
    const upload = new ObjectUpload(this.store, key, {
      compression: this.compression,
      ...(this.level === undefined ? {} : { level: this.level }),
      ...this.tuning,
      contentType: contentTypes[this.compression],
    });
    this.all.push(upload);
    return upload;
  }

  async abortAll(reason: Error): Promise<void> {
    this.closed = true;
    await Promise.all(this.all.map((u) => u.abort(reason)));
  }

  keys(): string[] {
    return this.all.map((u) => this.store.key(u.key));
  }
}

async function writeObject(upload: ObjectUpload, statements: readonly string[]): Promise<StoredObject> {
  for (const s of statements) {
    if (!upload.write(Buffer.from(s, "utf8"))) await upload.drained();
  }
  return upload.finish();
}

/** Runs one backup; see the file comment for the order of work. */
export async function runBackup(options: BackupOptions): Promise<BackupResult> {
  const startedAt = new Date();
  const t0 = performance.now();
  const compression = options.compression === undefined ? defaults.compression : parseCompression(options.compression);
  const parallelism = positive(options.parallelism, defaults.parallelism, "parallelism", 64);
  const objectSize = positive(options.objectSize, defaults.objectSize, "objectSize");
  const statementSize = positive(options.statementSize, defaults.statementSize, "statementSize", 64 * 1024 * 1024);
  const lockWait = positive(options.lockWaitTimeoutSeconds, defaults.lockWaitTimeoutSeconds, "lockWaitTimeoutSeconds", 31_536_000);
  for (const db of options.databases ?? []) {
    validateIdentifier(db, "database");
    if (systemDatabases.has(db.toLowerCase())) {
      throw new BackupError("InvalidOptions", `database ${db} belongs to the server itself and is not backed up`);
    }
  }
  const store = new BackupStore(options.storage);
  if (store.prefix === "") {
    store.destroy();
    throw new BackupError("InvalidOptions", "the backup's S3 prefix is empty: a backup needs a folder of its own");
  }
  const signal = options.signal;
  const log = options.logger;
  const uploads = new Uploads(store, compression, options.compressionLevel, options.upload ?? {});
  const sessions: MySQLSession[] = [];
  const warnings: string[] = [];
  /** Work started in parallel, awaited (briefly) before a failed backup's objects are deleted. */
  const running: Promise<unknown>[] = [];
  // Aborting (or the first failure) drops every connection, which ends any
  // query in flight at once; the flow below then fails and cleans up.
  const stopAll = (): void => {
    for (const s of sessions) s.destroy();
  };
  // An abort also cuts the S3 requests in flight: lib-storage does not pass an abort on to a PUT
  // already sent, which would complete after the backup was told to stop (a manager that lost
  // leadership would still be writing). The client opens new connections for the cleanup.
  const onAbort = (): void => {
    stopAll();
    store.bucket.refuseWrites(abortedError("the backup", signal));
    store.bucket.client.destroy();
  };
  signal?.addEventListener("abort", onAbort, { once: true });

  const progress: BackupProgress = { phase: "snapshot", tablesTotal: 0, tablesDone: 0, rows: 0, bytes: 0, storedBytes: 0 };
  let lastReport = 0;
  const report = (force = false): void => {
    if (!options.onProgress) return;
    const now = performance.now();
    if (!force && now - lastReport < 1000) return;
    lastReport = now;
    options.onProgress({ ...progress });
  };

  try {
    throwIfAborted(signal, "the backup");
    // Storage first: a wrong bucket or key must fail before the database is touched.
    await store.bucket.checkBucket(signal);
    if (!options.overwrite && (await store.bucket.exists(store.key(manifestFileName), signal))) {
      throw new BackupError("BackupExists", `${store.url} already holds a complete backup; choose another location or delete it first`);
    }
    // The folder belongs to this backup: what an earlier attempt left there
    // (objects, multipart uploads of a killed run) or a replaced backup goes.
    const leftovers = await clearBackupFolder(store, signal);
    if (leftovers.deletedObjects + leftovers.abortedUploads > 0) {
      log?.info("removed what an earlier attempt left in the backup folder", { location: store.url, ...leftovers });
    }

    const control = await MySQLSession.open(options.source);
    sessions.push(control);
    throwIfAborted(signal, "the backup");
    const [versionRow] = await control.query<{ version: string }>("SELECT VERSION() AS version", [], "read the server version");
    const version = versionRow?.version ?? "unknown";
    const flavor = flavorOf(version);
    await prepareDumpSession(control, flavor);

    const available = await listUserDatabases(control);
    const databases = options.databases ? [...new Set(options.databases)] : available;
    const missing = databases.filter((d) => !available.includes(d));
    if (missing.length > 0) {
      throw new BackupError("DatabaseNotFound", `database${missing.length > 1 ? "s" : ""} ${missing.join(", ")} not found on ${control.endpoint}`);
    }
    if (databases.length === 0) throw new BackupError("DatabaseNotFound", `no user database on ${control.endpoint} to back up`);

    const dumpers: MySQLSession[] = [];
    for (let i = 0; i < parallelism; i++) {
      const s = await MySQLSession.open(options.source);
      sessions.push(s);
      dumpers.push(s);
      await prepareDumpSession(s, flavor);
    }
    throwIfAborted(signal, "the backup");

    report(true);
    const snapshot = await takeSnapshot(control, dumpers, flavor, lockWait);
    warnings.push(...snapshot.warnings);
    log?.info("backup snapshot taken", { lockedMs: snapshot.lockedMs, position: snapshot.position, databases });
    const dumpStart = performance.now();

    const schemas: DatabaseSchema[] = [];
    for (const db of databases) schemas.push(await describeDatabase(control, db));
    await control.close();
    sessions.splice(sessions.indexOf(control), 1);

    // Work list: every table, the largest first, so the longest dumps start
    // early and the connections finish at about the same time.
    interface Task { dbIndex: number; tableIndex: number; schema: DatabaseSchema; table: TableSchema }
    const tasks: Task[] = [];
    schemas.forEach((schema, dbIndex) => {
      schema.tables.forEach((table, tableIndex) => {
        tasks.push({ dbIndex, tableIndex, schema, table });
        const name = qualifiedName(schema.name, table.name);
        if (table.engine && !transactionalEngines.has(table.engine.toLowerCase())) {
          warnings.push(`table ${name} uses the ${table.engine} engine, which the snapshot does not cover: its rows may be newer than the recorded position`);
        }
        if (table.systemVersioned) warnings.push(`table ${name} is system-versioned: only its current rows are backed up, not its history`);
      });
    });
    tasks.sort((a, b) => b.table.estimatedBytes - a.table.estimatedBytes);
    progress.tablesTotal = tasks.length;
    progress.phase = "dumping";

    const folderOf = (dbIndex: number, name: string): string => databaseFolder(dbIndex + 1, name);
    const dataParts = new Map<string, DataPart[]>();
    const taskId = (dbIndex: number, tableIndex: number): string => `${dbIndex}/${tableIndex}`;
    let nextTask = 0;
    const worker = async (session: MySQLSession): Promise<void> => {
      for (;;) {
        throwIfAborted(signal, "the backup");
        const task = tasks[nextTask++];
        if (!task) return;
        const dbFolder = folderOf(task.dbIndex, task.schema.name);
        const parts = await dumpTable(session, {
          database: task.schema.name,
          table: task.table,
          keyFor: (part) => dataKey(dbFolder, task.tableIndex + 1, task.table.name, part, compression),
          openObject: (key) => uploads.open(key),
          statementBytes: statementSize,
          objectBytes: objectSize,
          onRows: (rows, bytes) => {
            progress.rows += rows;
            progress.bytes += bytes;
            report();
          },
        });
        dataParts.set(taskId(task.dbIndex, task.tableIndex), parts);
        progress.tablesDone += 1;
        progress.storedBytes += parts.reduce((n, p) => n + p.size, 0);
        report();
      }
    };

    const schemaObjects: ManifestObject[] = [];
    const postDataObjects: ManifestObject[] = [];
    const writeSchemaObjects = async (): Promise<void> => {
      for (const [dbIndex, schema] of schemas.entries()) {
        const folder = folderOf(dbIndex, schema.name);
        const stored = await writeObject(uploads.open(schemaKey(folder, compression)), renderSchemaObject(schema));
        schemaObjects.push({ ...stored, kind: "schema", database: schema.name });
        if (hasPostData(schema)) {
          const rendered = renderPostDataObject(schema);
          warnings.push(...rendered.warnings);
          const post = await writeObject(uploads.open(postDataKey(folder, compression)), rendered.statements);
          postDataObjects.push({ ...post, kind: "post-data", database: schema.name });
        }
      }
    };

    // Promise.all fails at the first error; the catch below then drops every
    // connection, so nothing keeps running behind the failure.
    running.push(writeSchemaObjects(), ...dumpers.map((s) => worker(s)));
    await Promise.all(running);
    throwIfAborted(signal, "the backup");
    const dumpMs = Math.round(performance.now() - dumpStart);
    progress.phase = "finishing";
    report(true);
    for (const s of dumpers) await s.close();
    sessions.length = 0;

    // Restore order: all schema objects, then all data, then post-data (so
    // views, routines and triggers of one database may refer to another).
    const dataObjects: ManifestObject[] = [];
    schemas.forEach((schema, dbIndex) => {
      for (const [tableIndex, table] of schema.tables.entries()) {
        for (const p of dataParts.get(taskId(dbIndex, tableIndex)) ?? []) {
          dataObjects.push({
            key: p.key,
            kind: "data",
            database: schema.name,
            table: table.name,
            part: p.part,
            size: p.size,
            uncompressedSize: p.uncompressedSize,
            rows: p.rows,
            sha256: p.sha256,
          });
        }
      }
    });
    const objects = [...schemaObjects, ...dataObjects, ...postDataObjects].map((o) => ({
      key: o.key,
      kind: o.kind,
      database: o.database,
      ...(o.table === undefined ? {} : { table: o.table, part: o.part, rows: o.rows }),
      size: o.size,
      uncompressedSize: o.uncompressedSize,
      sha256: o.sha256,
    }));
    const completedAt = new Date();
    const totals = {
      objects: objects.length,
      size: objects.reduce((n, o) => n + o.size, 0),
      uncompressedSize: objects.reduce((n, o) => n + o.uncompressedSize, 0),
      rows: objects.reduce((n, o) => n + (o.rows ?? 0), 0),
    };
    const manifest: BackupManifest = {
      format: manifestFormat,
      formatVersion: manifestFormatVersion,
      createdAt: snapshot.at.toISOString(),
      completedAt: completedAt.toISOString(),
      server: { version, flavor },
      position: snapshot.position,
      compression,
      databases,
      objects,
      totals,
    };
    throwIfAborted(signal, "the backup");
    const manifestBytes = serializeManifest(manifest);
    await store.bucket.putBytes(store.key(manifestFileName), manifestBytes, "application/json", signal);
    progress.phase = "done";
    progress.storedBytes = totals.size;
    report(true);
    for (const w of warnings) log?.warn(w);
    log?.info("backup completed", { location: store.url, objects: totals.objects, rows: totals.rows, bytes: totals.size });
    return {
      location: { bucket: store.bucket.bucket, prefix: store.prefix, manifestKey: store.key(manifestFileName), url: store.url },
      manifest,
      manifestSha256: createHash("sha256").update(manifestBytes).digest("hex"),
      server: { version, flavor },
      position: snapshot.position,
      databases,
      objects: totals.objects,
      rows: totals.rows,
      size: totals.size,
      uncompressedSize: totals.uncompressedSize,
      startedAt,
      snapshotAt: snapshot.at,
      completedAt,
      durations: { lockMs: snapshot.lockedMs, dumpMs, totalMs: Math.round(performance.now() - t0) },
      warnings,
    };
  } catch (err) {
    stopAll();
    const failure = signal?.aborted ? abortedError("the backup", signal) : err instanceof BackupError ? err : new BackupError("DatabaseError", messageOf(err), { cause: err });
    await discard(store, uploads, running, failure, log);
    throw failure;
  } finally {
    signal?.removeEventListener("abort", onAbort);
    store.destroy();
  }
}

/**
 * Leaves nothing of a failed backup behind: uploads aborted, objects written
 * so far deleted, and any multipart upload still open in the folder aborted
 * (one a hung request started late). Failures here are logged, not thrown:
 * the backup's own error is what the user needs to see.
 */
async function discard(store: BackupStore, uploads: Uploads, running: Promise<unknown>[], reason: Error, log: Logger | undefined): Promise<void> {
  // Failed before writing anything (S3 unreachable, no such database): there
  // is nothing to clean, and S3 may not even answer.
  if (uploads.keys().length === 0) {
    await uploads.abortAll(reason);
    return;
  }
  try {
    await uploads.abortAll(reason);
    // With connections dropped and uploads aborted, the parallel work fails
    // fast; waiting for it means no upload can start after the cleanup.
    const timer = new AbortController();
    await Promise.race([Promise.allSettled(running), sleep(10_000, undefined, { signal: timer.signal }).catch(() => undefined)]);
    timer.abort();
    await store.bucket.deleteKeys(uploads.keys());
    await store.bucket.abortIncompleteUploads(store.folder, (key) => store.owns(key));
  } catch (err) {
    log?.warn("could not clean up the failed backup's objects; deleteBackup removes them", { location: store.url, err });
  }
}
