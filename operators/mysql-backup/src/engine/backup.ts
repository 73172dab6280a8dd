// runBackup: a consistent, verifiable backup of MySQL databases into an S3
// folder. It reads as its phases, each a function below:
//   1. claimFolder: check the bucket (and that no complete backup is already
//      there), and empty the folder of what an earlier attempt left
//   2. connectAndSnapshot: connect; take the snapshot (snapshot.ts)
//   3. readSchemas: every database's definition, inside the snapshot
//   4. dumpDatabases: dump tables in parallel, one connection each, largest
//      first; meanwhile upload the schema and post-data objects
//   5. buildManifest, writeManifest: manifest.json — last, so its presence
//      means "complete"
//   6. finish: the result
// On any failure or abort: every upload is aborted (no multipart upload left
// behind), the objects already written are deleted (discard, uploads.ts), and
// the error says why. The state the phases share is a BackupRun (backup-run.ts).
import { messageOf, type Logger } from "@stateward/core";
import { createHash } from "node:crypto";
import { flavorOf, type Flavor as ServerFlavor } from "@stateward/mysql";
import type { MySQLSession, MySQLConnectionOptions } from "./connection.ts";
import { abortedError } from "./errors.ts";
import { BackupError } from "../errors.ts";
import { describeDatabase, listUserDatabases, type DatabaseSchema, type TableSchema } from "./schema.ts";
import { hasPostData, renderPostDataObject, renderSchemaObject } from "./schema-objects.ts";
import { prepareDumpSession, takeSnapshot, type Snapshot } from "./snapshot.ts";
import { qualifiedName } from "./sql.ts";
import { dumpTable, type DataPart } from "./table-dump.ts";
import { clearBackupFolder } from "../storage/backup-folder.ts";
import type { Compression } from "../storage/compression.ts";
import { dataKey, databaseFolder, postDataKey, schemaKey } from "../storage/layout.ts";
import { manifestFileName, manifestFormat, manifestFormatVersion, serializeManifest, type BackupManifest, type ManifestObject, type ReplicationPosition } from "../storage/manifest.ts";
import type { UploadTuning } from "../storage/object-upload.ts";
import type { S3Location } from "../storage/s3.ts";
import { BackupRun, checkOptions, openFolder } from "./backup-run.ts";
import { discard, writeObject } from "./uploads.ts";

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

/** Engines whose tables the consistent snapshot covers. */
const transactionalEngines = new Set(["innodb", "rocksdb"]);

/** Runs one backup; see the file comment for the order of work. */
export async function runBackup(options: BackupOptions): Promise<BackupResult> {
  const startedAt = new Date();
  const t0 = performance.now();
  const run = new BackupRun(options, checkOptions(options), openFolder(options.storage));
  const signal = run.signal;
  signal?.addEventListener("abort", run.onAbort, { once: true });
  try {
    await claimFolder(run);
    const source = await connectAndSnapshot(run);
    const schemas = await readSchemas(run, source);
    const dumped = await dumpDatabases(run, source, schemas);
    const manifest = buildManifest(run, source, schemas, dumped);
    const manifestSha256 = await writeManifest(run, manifest);
    return finish(run, { startedAt, t0, source, manifest, manifestSha256, dumpMs: dumped.dumpMs });
  } catch (err) {
    run.stopAll();
    const failure = signal?.aborted ? abortedError("the backup", signal) : err instanceof BackupError ? err : new BackupError("DatabaseError", messageOf(err), { cause: err });
    await discard(run.store, run.uploads, run.running, failure, run.log);
    throw failure;
  } finally {
    signal?.removeEventListener("abort", run.onAbort);
    run.store.destroy();
  }
}

/** Phase 1: the bucket answers, holds no complete backup here (unless overwriting), and the folder is emptied for this one. */
async function claimFolder(run: BackupRun): Promise<void> {
  const { store, signal, log } = run;
  run.throwIfAborted();
  // Storage first: a wrong bucket or key must fail before the database is touched.
  await store.bucket.checkBucket(signal);
  if (!run.options.overwrite && (await store.bucket.exists(store.key(manifestFileName), signal))) {
    throw new BackupError("BackupExists", `${store.url} already holds a complete backup; choose another location or delete it first`);
  }
  // The folder belongs to this backup: what an earlier attempt left there
  // (objects, multipart uploads of a killed run) or a replaced backup goes.
  const leftovers = await clearBackupFolder(store, signal);
  if (leftovers.deletedObjects + leftovers.abortedUploads > 0) {
    log?.info("removed what an earlier attempt left in the backup folder", { location: store.url, ...leftovers });
  }
}

/** The server as the snapshot found it, and the connections that dump it. */
interface SnapshotSource {
  control: MySQLSession;
  dumpers: MySQLSession[];
  version: string;
  flavor: ServerFlavor;
  databases: string[];
  snapshot: Snapshot;
  /** When the snapshot was taken (performance.now()): the dump's duration counts from here. */
  dumpStart: number;
}

/** Phase 2: connect, check the databases exist, open the dump connections and take the consistent snapshot on all of them. */
async function connectAndSnapshot(run: BackupRun): Promise<SnapshotSource> {
  const control = await run.connect();
  run.throwIfAborted();
  const [versionRow] = await control.query<{ version: string }>("SELECT VERSION() AS version", [], "read the server version");
  const version = versionRow?.version ?? "unknown";
  const flavor = flavorOf(version);
  await prepareDumpSession(control, flavor);

  const available = await listUserDatabases(control);
  const databases = run.options.databases ? [...new Set(run.options.databases)] : available;
  const missing = databases.filter((d) => !available.includes(d));
  if (missing.length > 0) {
    throw new BackupError("DatabaseNotFound", `database${missing.length > 1 ? "s" : ""} ${missing.join(", ")} not found on ${control.endpoint}`);
  }
  if (databases.length === 0) throw new BackupError("DatabaseNotFound", `no user database on ${control.endpoint} to back up`);

  const dumpers: MySQLSession[] = [];
  for (let i = 0; i < run.settings.parallelism; i++) {
    const s = await run.connect();
    dumpers.push(s);
    await prepareDumpSession(s, flavor);
  }
  run.throwIfAborted();

  run.report(true);
  const snapshot = await takeSnapshot(control, dumpers, flavor, run.settings.lockWait);
  run.warnings.push(...snapshot.warnings);
  run.log?.info("backup snapshot taken", { lockedMs: snapshot.lockedMs, position: snapshot.position, databases });
  return { control, dumpers, version, flavor, databases, snapshot, dumpStart: performance.now() };
}

/** Phase 3: every database's definition, read inside the snapshot; the control connection is done then. */
async function readSchemas(run: BackupRun, source: SnapshotSource): Promise<DatabaseSchema[]> {
  const schemas: DatabaseSchema[] = [];
  for (const db of source.databases) schemas.push(await describeDatabase(source.control, db));
  await run.close(source.control);
  return schemas;
}

/** One table to dump; the indexes place its objects in the folder and the manifest. */
interface TableTask { dbIndex: number; tableIndex: number; schema: DatabaseSchema; table: TableSchema }

/** The objects written by the dump, not yet in restore order. */
interface DumpedObjects {
  schemaObjects: ManifestObject[];
  postDataObjects: ManifestObject[];
  /** Each table's data parts, by `taskId`. */
  dataParts: Map<string, DataPart[]>;
  dumpMs: number;
}

const taskId = (dbIndex: number, tableIndex: number): string => `${dbIndex}/${tableIndex}`;
const folderOf = (dbIndex: number, name: string): string => databaseFolder(dbIndex + 1, name);

/**
 * Every table, the largest first, so the longest dumps start early and the
 * connections finish at about the same time; warns of tables the snapshot
 * does not fully cover.
 */
function planTables(run: BackupRun, schemas: readonly DatabaseSchema[]): TableTask[] {
  const tasks: TableTask[] = [];
  schemas.forEach((schema, dbIndex) => {
    schema.tables.forEach((table, tableIndex) => {
      tasks.push({ dbIndex, tableIndex, schema, table });
      const name = qualifiedName(schema.name, table.name);
      if (table.engine && !transactionalEngines.has(table.engine.toLowerCase())) {
        run.warnings.push(`table ${name} uses the ${table.engine} engine, which the snapshot does not cover: its rows may be newer than the recorded position`);
      }
      if (table.systemVersioned) run.warnings.push(`table ${name} is system-versioned: only its current rows are backed up, not its history`);
    });
  });
  return tasks.sort((a, b) => b.table.estimatedBytes - a.table.estimatedBytes);
}

/** Phase 4: the tables' data, one connection each, while the schema and post-data objects are uploaded alongside. */
async function dumpDatabases(run: BackupRun, source: SnapshotSource, schemas: DatabaseSchema[]): Promise<DumpedObjects> {
  const { progress, uploads } = run;
  const { compression, statementSize, objectSize } = run.settings;
  const tasks = planTables(run, schemas);
  progress.tablesTotal = tasks.length;
  progress.phase = "dumping";

  const dataParts = new Map<string, DataPart[]>();
  let nextTask = 0;
  const worker = async (session: MySQLSession): Promise<void> => {
    for (;;) {
      run.throwIfAborted();
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
          run.report();
        },
      });
      dataParts.set(taskId(task.dbIndex, task.tableIndex), parts);
      progress.tablesDone += 1;
      progress.storedBytes += parts.reduce((n, p) => n + p.size, 0);
      run.report();
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
        run.warnings.push(...rendered.warnings);
        const post = await writeObject(uploads.open(postDataKey(folder, compression)), rendered.statements);
        postDataObjects.push({ ...post, kind: "post-data", database: schema.name });
      }
    }
  };

  // Promise.all fails at the first error; runBackup then drops every
  // connection, so nothing keeps running behind the failure.
  run.running.push(writeSchemaObjects(), ...source.dumpers.map((s) => worker(s)));
  await Promise.all(run.running);
  run.throwIfAborted();
  const dumpMs = Math.round(performance.now() - source.dumpStart);
  progress.phase = "finishing";
  run.report(true);
  await run.close(...source.dumpers);
  return { schemaObjects, postDataObjects, dataParts, dumpMs };
}

/**
 * The manifest, objects in restore order: all schema objects, then all data,
 * then post-data (so views, routines and triggers of one database may refer
 * to another).
 */
function buildManifest(run: BackupRun, source: SnapshotSource, schemas: readonly DatabaseSchema[], dumped: DumpedObjects): BackupManifest {
  const dataObjects: ManifestObject[] = [];
  schemas.forEach((schema, dbIndex) => {
    for (const [tableIndex, table] of schema.tables.entries()) {
      for (const p of dumped.dataParts.get(taskId(dbIndex, tableIndex)) ?? []) {
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
  const objects = [...dumped.schemaObjects, ...dataObjects, ...dumped.postDataObjects].map((o) => ({
    key: o.key,
    kind: o.kind,
    database: o.database,
    ...(o.table === undefined ? {} : { table: o.table, part: o.part, rows: o.rows }),
    size: o.size,
    uncompressedSize: o.uncompressedSize,
    sha256: o.sha256,
  }));
  return {
    format: manifestFormat,
    formatVersion: manifestFormatVersion,
    createdAt: source.snapshot.at.toISOString(),
    completedAt: new Date().toISOString(),
    server: { version: source.version, flavor: source.flavor },
    position: source.snapshot.position,
    compression: run.settings.compression,
    databases: source.databases,
    objects,
    totals: {
      objects: objects.length,
      size: objects.reduce((n, o) => n + o.size, 0),
      uncompressedSize: objects.reduce((n, o) => n + o.uncompressedSize, 0),
      rows: objects.reduce((n, o) => n + (o.rows ?? 0), 0),
    },
  };
}

/** Phase 5: manifest.json, written last: its presence means "complete". Returns its SHA-256. */
async function writeManifest(run: BackupRun, manifest: BackupManifest): Promise<string> {
  run.throwIfAborted();
  const manifestBytes = serializeManifest(manifest);
  await run.store.bucket.putBytes(run.store.key(manifestFileName), manifestBytes, "application/json", run.signal);
  return createHash("sha256").update(manifestBytes).digest("hex");
}

/** Phase 6: the last progress report, the warnings logged, and the result. */
function finish(
  run: BackupRun,
  done: { startedAt: Date; t0: number; source: SnapshotSource; manifest: BackupManifest; manifestSha256: string; dumpMs: number },
): BackupResult {
  const { store, progress, log, warnings } = run;
  const { manifest, source } = done;
  const totals = manifest.totals;
  progress.phase = "done";
  progress.storedBytes = totals.size;
  run.report(true);
  for (const w of warnings) log?.warn(w);
  log?.info("backup completed", { location: store.url, objects: totals.objects, rows: totals.rows, bytes: totals.size });
  return {
    location: { bucket: store.bucket.bucket, prefix: store.prefix, manifestKey: store.key(manifestFileName), url: store.url },
    manifest,
    manifestSha256: done.manifestSha256,
    server: { version: source.version, flavor: source.flavor },
    position: source.snapshot.position,
    databases: source.databases,
    objects: totals.objects,
    rows: totals.rows,
    size: totals.size,
    uncompressedSize: totals.uncompressedSize,
    startedAt: done.startedAt,
    snapshotAt: source.snapshot.at,
    completedAt: new Date(manifest.completedAt),
    durations: { lockMs: source.snapshot.lockedMs, dumpMs: done.dumpMs, totalMs: Math.round(performance.now() - done.t0) },
    warnings,
  };
}
