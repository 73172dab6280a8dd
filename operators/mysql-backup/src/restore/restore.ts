// runRestore: brings a backup (or a plain mysqldump file) back into a server.
//
// From a backup, after the manifest is read and validated (and, given the
// checksum recorded at backup time, found unchanged), in one of two modes:
//
//   Staged (default)  each restored database is built in a staging database
//                     (staging.ts): schema objects, then data objects in
//                     parallel, streamed from S3 and hashed on the way. Only
//                     when every object matched the manifest and applied are
//                     the staged tables swapped in by one atomic RENAME TABLE;
//                     then the post-data objects (routines, views, triggers,
//                     events, held in memory and verified) are applied to the
//                     target. A missing or corrupt object, a failed statement,
//                     an abort or a killed process before the swap leave the
//                     target as it was. The server needs room for a second
//                     copy of the restored tables meanwhile.
//   InPlace           every object is downloaded and verified first, then
//                     applied to the target as the stock client would. No
//                     extra room, but a failure or a kill mid-apply leaves the
//                     restored tables partly loaded.
//
// Nothing is written to local disk in either mode.
//
// From a dump file: streamed, decompressed if gzip or zstd (by its magic
// bytes), applied in order on one connection, in place. It has no checksum
// to verify; a failure mid-file leaves what was applied so far.
import type { Logger } from "@stateward/core";
import { randomUUID } from "node:crypto";
import { pipeline as pipe, Readable } from "node:stream";
import { MySQLSession, type MySQLConnectionOptions } from "../engine/connection.ts";
import { abortedError, throwIfAborted } from "../engine/errors.ts";
import { BackupError, messageOf } from "../errors.ts";
import { quoteIdentifier, validateIdentifier } from "../engine/sql.ts";
import { loadManifest } from "../storage/backup-folder.ts";
import { createDecompressor, detectCompression, type Compression } from "../storage/compression.ts";
import { manifestFileName, type BackupManifest, type ManifestObject, type ObjectKind } from "../storage/manifest.ts";
import { BackupStore, BucketClient, describeLocation, normalizePrefix, type S3Location, type S3ObjectLocation, type S3Options } from "../storage/s3.ts";
import { applySql } from "./apply.ts";
import { databaseStatement, DatabaseFilter } from "./dump-file.ts";
import { cleanUpRestore, createViewStandIns, dropLeftovers, dropReplaced, planSwap, stagingDatabaseName, SwapUndoFailed, swapIn, type StagingLeftovers } from "./staging.ts";
import type { Statement } from "./statements.ts";
import { corrupt, readObject, Sha256Stream, streamObject, verifyObject } from "./verified-object.ts";

/** Staged: build in staging databases, swap in once all verified; InPlace: verify all, then apply to the target. */
export type RestoreMode = "Staged" | "InPlace";

/**
 * What to restore: a backup folder (with its manifest; `manifestSha256`, as
 * runBackup returned it, makes the restore refuse a manifest changed since),
 * or one plain dump file.
 */
export type RestoreSource = { backup: S3Location; manifestSha256?: string } | { dumpFile: S3ObjectLocation };

export interface RestoreOptions {
  /** The server to restore into. The user needs to create and drop the backup's objects, and SUPER or SET USER to keep their definers. */
  target: MySQLConnectionOptions;
  source: RestoreSource;
  /** Only these databases. Defaults to all of the backup (or dump file). */
  databases?: string[];
  /** Data objects applied at once, each on its own connection. Defaults to 2. */
  parallelism?: number;
  /**
   * Dump files only: the database to apply a dump in that has no
   * `CREATE DATABASE`/`USE` of its own (made without --databases); it is
   * created if missing.
   */
  intoDatabase?: string;
  /** Backups only; see the file comment. Defaults to Staged. */
  mode?: RestoreMode;
  /**
   * Names this restore's staging databases (staging.ts). A restore run
   * again with the same id first drops what an earlier, killed run of it
   * left; so does cleanUpRestore. Defaults to a random id.
   */
  runId?: string;
  signal?: AbortSignal;
  /** Called after each object, and about once a second during long ones. */
  onProgress?: (progress: RestoreProgress) => void;
  logger?: Logger;
}

export interface RestoreProgress {
  /** `verify`: InPlace's first pass; `swap`: Staged's RENAME TABLE. */
  phase: ObjectKind | "verify" | "swap" | "dump-file" | "done";
  objectsTotal: number;
  objectsDone: number;
  /** SQL bytes to apply (backups: from the manifest; dump files: unknown). */
  bytesTotal?: number;
  /** SQL bytes of the statements sent so far (comments and delimiters not counted). */
  bytesApplied: number;
  statements: number;
}

export interface RestoreResult {
  kind: "backup" | "dumpFile";
  /** s3:// URL of the folder or file. */
  location: string;
  databases: string[];
  /** The backup's manifest (backups only). */
  manifest?: BackupManifest;
  objects: number;
  statements: number;
  /** SQL bytes applied. */
  bytes: number;
  /** Bytes downloaded. */
  storedBytes: number;
  /** Rows restored, from the manifest (backups only). */
  rows?: number;
  /** Backups only: how it was restored. */
  mode?: RestoreMode;
  /** Staged: what an earlier, killed run with the same runId had left and this one dropped. */
  leftoversDropped?: StagingLeftovers;
  startedAt: Date;
  completedAt: Date;
  durations: { totalMs: number };
}

const defaultParallelism = 2;

/** `source` decompressed; an error on either side fails the result, so a reader sees it. */
function decompress(source: Readable, compression: Compression): Readable {
  const out = createDecompressor(compression);
  pipe(source, out, () => undefined);
  return out;
}

function validateDatabases(names: readonly string[] | undefined): void {
  for (const db of names ?? []) validateIdentifier(db, "database");
}

/** Restores a backup or a dump file; see the file comment. */
export async function runRestore(options: RestoreOptions): Promise<RestoreResult> {
  validateDatabases(options.databases);
  const parallelism = options.parallelism ?? defaultParallelism;
  if (!Number.isSafeInteger(parallelism) || parallelism < 1 || parallelism > 64) {
    throw new BackupError("InvalidOptions", "parallelism must be an integer between 1 and 64");
  }
  const mode = options.mode ?? "Staged";
  if (mode !== "Staged" && mode !== "InPlace") throw new BackupError("InvalidOptions", `mode must be Staged or InPlace, not ${String(mode)}`);
  if ("backup" in options.source) return restoreBackup(options, options.source.backup, options.source.manifestSha256, parallelism, mode);
  return restoreDumpFile(options, options.source.dumpFile);
}

/**
 * What `path` in a bucket is: a backup folder (it holds a manifest.json, or
 * is one) or a single dump file. For MySQLRestore's `s3.path`.
 */
export async function locateRestoreSource(location: S3Options & { bucket: string; path: string }, signal?: AbortSignal): Promise<RestoreSource> {
  const { path, ...rest } = location;
  const normalized = normalizePrefix(path);
  const bucket = new BucketClient(rest);
  try {
    await bucket.checkBucket(signal);
    const folder = normalized.endsWith(`/${manifestFileName}`) || normalized === manifestFileName ? normalized.slice(0, -manifestFileName.length).replace(/\/$/, "") : normalized;
    const manifestKey = folder === "" ? manifestFileName : `${folder}/${manifestFileName}`;
    if (await bucket.exists(manifestKey, signal)) return { backup: { ...rest, prefix: folder } };
    if (normalized !== "" && (await bucket.exists(normalized, signal))) return { dumpFile: { ...rest, key: normalized } };
    throw new BackupError(
      "ObjectNotFound",
      `nothing to restore at ${describeLocation(rest.bucket, normalized)}: neither a backup folder (no ${manifestFileName}) nor a dump file`,
    );
  } finally {
    bucket.destroy();
  }
}

/** Runs `work` on `items`, one at a time per worker (a session); the first failure stops the rest. */
async function forEachBounded<T, W>(items: readonly T[], sessions: readonly W[], work: (item: T, session: W) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  await Promise.all(
    sessions.map(async (session) => {
      while (!failed) {
        const item = items[next++];
        if (item === undefined) return;
        try {
          await work(item, session);
        } catch (err) {
          failed = true;
          throw err;
        }
      }
    }),
  );
}

/** Errors of restores that failed before anything of the target changed (and dropped what they had staged). */
const untouched = new WeakSet<object>();

/** Whether `err`, thrown by runRestore, means the target was left exactly as it was. */
export function leftTargetUntouched(err: unknown): boolean {
  return typeof err === "object" && err !== null && untouched.has(err);
}

/** Stored bytes of post-data objects (definitions only, all databases together) a staged restore holds in memory until after the swap. */
const maxPostDataBytes = 32 * 1024 * 1024;

/** A BackupError with `more` appended to its message. */
function withNote(err: unknown, more: string): BackupError {
  const e = err instanceof BackupError ? err : new BackupError("DatabaseError", messageOf(err), { cause: err });
  return new BackupError(e.reason, `${e.message.replace(/[.\s]+$/, "")}. ${more}`, { retryable: e.retryable, cause: e.cause });
}

async function restoreBackup(options: RestoreOptions, location: S3Location, manifestSha256: string | undefined, parallelism: number, mode: RestoreMode): Promise<RestoreResult> {
  const startedAt = new Date();
  const t0 = performance.now();
  const runId = options.runId ?? randomUUID();
  // Aborted by the caller, or by the first failure: either way every
  // connection is dropped and every download stopped.
  const stopped = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stopped.signal]) : stopped.signal;
  // Objects are applied while they download: a long statement pauses the
  // download, so the socket must be allowed to stay quiet that long.
  const store = new BackupStore({ ...location, idleTimeoutMs: 0 });
  const sessions: MySQLSession[] = [];
  const stopAll = (): void => {
    for (const s of sessions) s.destroy();
  };
  signal.addEventListener("abort", stopAll, { once: true });
  /** Staged: the target was changed (the swap ran); InPlace: the first statement was sent. */
  let targetChanged = false;
  let stagingCreated = false;
  let cleanupFailed = false;
  try {
    throwIfAborted(signal, "the restore");
    await store.bucket.checkBucket(signal);
    const manifest = await loadManifest(store, signal, manifestSha256);
    const databases = options.databases ? [...new Set(options.databases)] : manifest.databases;
    const missing = databases.filter((d) => !manifest.databases.includes(d));
    if (missing.length > 0) {
      throw new BackupError("DatabaseNotFound", `the backup at ${store.url} has no database ${missing.join(", ")} (it has ${manifest.databases.join(", ")})`);
    }
    for (const d of databases) validateIdentifier(d, "database");
    const objects = manifest.objects.filter((o) => databases.includes(o.database));
    const progress: RestoreProgress = {
      phase: mode === "Staged" ? "schema" : "verify",
      objectsTotal: objects.length,
      objectsDone: 0,
      bytesTotal: objects.reduce((n, o) => n + o.uncompressedSize, 0),
      bytesApplied: 0,
      statements: 0,
    };
    let lastReport = 0;
    const report = (force = false): void => {
      if (!options.onProgress) return;
      const now = performance.now();
      if (!force && now - lastReport < 1000) return;
      lastReport = now;
      options.onProgress({ ...progress });
    };

    const dataObjects = objects.filter((o) => o.kind === "data");
    const connections = Math.max(1, Math.min(parallelism, dataObjects.length));
    for (let i = 0; i < connections; i++) {
      throwIfAborted(signal, "the restore");
      sessions.push(await MySQLSession.open(options.target, { charset: "binary" }));
    }
    const main = sessions[0] as MySQLSession;
    let storedBytes = 0;
    let sqlBytes = 0;

    /** Applies one object as it downloads; fails after its last byte unless size and SHA-256 match. */
    const applyObject = async (object: ManifestObject, session: MySQLSession, rewrite: ((s: Statement) => string | null) | undefined, consequence: string): Promise<void> => {
      throwIfAborted(signal, "the restore");
      const source = `object ${object.key} of ${store.url}`;
      const { sql, verified } = await streamObject(store, object, manifest.compression, signal, consequence);
      let applied: { bytes: number };
      try {
        if (mode === "InPlace") targetChanged = true;
        applied = await applySql(sql, {
          session,
          source,
          signal,
          ...(rewrite ? { rewrite } : {}),
          onApplied: (bytes) => {
            progress.bytesApplied += bytes;
            progress.statements += 1;
            report();
          },
        });
      } catch (err) {
        sql.destroy();
        if (err instanceof BackupError) throw err;
        // The download or the decompression failed: `verified` says which, in its words.
        await verified;
        throw corrupt(err, source) ?? err;
      }
      storedBytes += await verified;
      if (applied.bytes !== object.uncompressedSize) {
        throw new BackupError("ChecksumMismatch", `${source} decompressed to ${applied.bytes} bytes, the manifest says ${object.uncompressedSize}; ${consequence}`);
      }
      sqlBytes += applied.bytes;
      progress.objectsDone += 1;
      report(true);
    };
    const runData = (rewrite: ((s: Statement) => string | null) | undefined, consequence: string): Promise<void> =>
      // Different tables (and parts of one big table) load side by side.
      forEachBounded(dataObjects, sessions, (o, session) => applyObject(o, session, rewrite, consequence)).catch((err: unknown) => {
        stopped.abort();
        throw err;
      });

    let leftoversDropped: StagingLeftovers | undefined;
    if (mode === "InPlace") {
      // Every object checked before the first statement changes the target.
      await forEachBounded(objects, Array.from({ length: parallelism }, (_, i) => i), async (o) => {
        throwIfAborted(signal, "the restore");
        await verifyObject(store, o, signal);
        report();
      }).catch((err: unknown) => {
        stopped.abort();
        throw err;
      });
      const consequence = "the statements before it were applied: the target is partly restored";
      progress.phase = "schema";
      for (const o of objects.filter((x) => x.kind === "schema")) await applyObject(o, main, undefined, consequence);
      progress.phase = "data";
      await runData(undefined, consequence);
      progress.phase = "post-data";
      for (const o of objects.filter((x) => x.kind === "post-data")) await applyObject(o, main, undefined, consequence);
    } else {
      const consequence = "the target was not changed";
      const found = await dropLeftovers(main, runId);
      if (found.stagingDatabases.length + found.replacedTables.length > 0) {
        leftoversDropped = found;
        options.logger?.info("dropped what an earlier, interrupted run of this restore left", { ...found });
      }
      const staging = databases.map((database, i) => ({ database, staging: stagingDatabaseName(runId, i) }));
      const stagingOf = new Map(staging.map((s) => [s.database, s.staging]));
      stagingCreated = true;
      for (const s of staging) await main.query(`CREATE DATABASE ${quoteIdentifier(s.staging)}`, [], `create staging database ${quoteIdentifier(s.staging)}`);
      // Each object names its database (CREATE DATABASE, USE): the staging one is used instead.
      const createStatements = new Map<string, string>();
      const toStaging = (statement: Statement): string | null => {
        const named = databaseStatement(statement);
        if (!named) return statement.sql;
        const into = stagingOf.get(named.database);
        if (into === undefined) {
          throw new BackupError("InvalidManifest", `an object of ${store.url} at line ${statement.line} names database ${quoteIdentifier(named.database)}, which is not one being restored; ${consequence}`);
        }
        if (named.kind === "create") {
          createStatements.set(named.database, statement.sql);
          return null;
        }
        return `USE ${quoteIdentifier(into)}`;
      };
      for (const o of objects.filter((x) => x.kind === "schema")) await applyObject(o, main, toStaging, consequence);
      progress.phase = "data";
      await runData(toStaging, consequence);
      progress.phase = "post-data";
      const postData: { object: ManifestObject; bytes: Buffer }[] = [];
      let budget = maxPostDataBytes;
      for (const o of objects.filter((x) => x.kind === "post-data")) {
        throwIfAborted(signal, "the restore");
        const bytes = await readObject(store, o, signal, budget);
        budget -= bytes.length;
        postData.push({ object: o, bytes });
      }
      // Every object is verified and applied to staging: now the target changes.
      progress.phase = "swap";
      report(true);
      // Trigger definitions are read and written as text: a utf8mb4 session of its own.
      const swapper = await MySQLSession.open(options.target);
      sessions.push(swapper);
      const plan = await planSwap(swapper, runId, staging);
      throwIfAborted(signal, "the restore");
      await main.query("SET NAMES utf8mb4", [], "prepare the swap");
      for (const d of databases) {
        // The backup's own CREATE DATABASE (IF NOT EXISTS, its character set) for a database the target lacks.
        const create = createStatements.get(d) ?? `CREATE DATABASE IF NOT EXISTS ${quoteIdentifier(d)}`;
        await main.execute(create).catch((err: unknown) => {
          throw new BackupError("DatabaseError", `could not create database ${quoteIdentifier(d)}: ${messageOf(err)}; ${consequence}`);
        });
      }
      throwIfAborted(signal, "the restore");
      await swapIn(swapper, plan).catch((err: unknown) => {
        if (err instanceof SwapUndoFailed) targetChanged = true;
        throw err;
      });
      targetChanged = true;
      await createViewStandIns(swapper, staging);
      progress.phase = "post-data";
      for (const { object, bytes } of postData) {
        const source = `object ${object.key} of ${store.url}`;
        const applied = await applySql(decompress(Readable.from([bytes]), manifest.compression), {
          session: main,
          source,
          signal,
          onApplied: (n) => {
            progress.bytesApplied += n;
            progress.statements += 1;
          },
        }).catch((err: unknown) => {
          throw corrupt(err, source) ?? err;
        });
        storedBytes += bytes.length;
        sqlBytes += applied.bytes;
        progress.objectsDone += 1;
        report(true);
      }
      await dropReplaced(swapper, plan);
      await dropLeftovers(main, runId);
      stagingCreated = false;
    }
    for (const s of sessions) await s.close();
    sessions.length = 0;
    progress.phase = "done";
    report(true);
    const rows = objects.reduce((n, o) => n + (o.rows ?? 0), 0);
    options.logger?.info("restore completed", { location: store.url, objects: objects.length, rows, mode });
    return {
      kind: "backup",
      location: store.url,
      databases,
      manifest,
      objects: objects.length,
      statements: progress.statements,
      bytes: sqlBytes,
      storedBytes,
      rows,
      mode,
      ...(leftoversDropped ? { leftoversDropped } : {}),
      startedAt,
      completedAt: new Date(),
      durations: { totalMs: Math.round(performance.now() - t0) },
    };
  } catch (err) {
    stopAll();
    let failure = options.signal?.aborted ? abortedError("the restore", options.signal) : err instanceof BackupError ? err : new BackupError("DatabaseError", messageOf(err), { cause: err });
    if (stagingCreated) {
      // Connections were dropped (the server rolls back what they had open); a fresh one cleans up.
      const dropped = await cleanUpRestore(options.target, runId).catch((e: unknown) => e as Error);
      if (dropped instanceof Error) {
        cleanupFailed = true;
        options.logger?.warn("could not drop the staging databases", { err: messageOf(dropped) });
        failure = withNote(failure, `Its staging databases (stw_restore_*) could not be dropped: ${messageOf(dropped)}`);
      }
    }
    if (mode === "Staged" && targetChanged && failure instanceof SwapUndoFailed) {
      failure = withNote(failure, "The target's tables were not replaced. Restore again");
    } else if (mode === "Staged" && targetChanged) {
      failure = withNote(failure, "The restored tables had been swapped in; views, routines, triggers or events of the backup may be missing. Restore again");
    } else if (!targetChanged && !cleanupFailed) {
      untouched.add(failure);
    }
    throw failure;
  } finally {
    signal.removeEventListener("abort", stopAll);
    store.destroy();
  }
}

/** The first chunk of a stream (to sniff its format), and the whole stream again. */
async function peek(stream: Readable): Promise<{ head: Buffer; all: Readable }> {
  const it = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const first = await it.next();
  const head = first.done ? Buffer.alloc(0) : first.value;
  async function* replay(): AsyncGenerator<Buffer> {
    if (!first.done) yield head;
    for (;;) {
      const r = await it.next();
      if (r.done) return;
      yield r.value;
    }
  }
  return { head, all: Readable.from(replay(), { objectMode: false }) };
}

async function restoreDumpFile(options: RestoreOptions, location: S3ObjectLocation): Promise<RestoreResult> {
  const startedAt = new Date();
  const t0 = performance.now();
  const signal = options.signal;
  if (options.intoDatabase !== undefined) validateIdentifier(options.intoDatabase, "database");
  // The file is applied while it downloads: a long statement pauses the
  // download, so the socket must be allowed to stay quiet that long.
  const bucket = new BucketClient({ ...location, idleTimeoutMs: 0 });
  const url = describeLocation(location.bucket, location.key);
  let session: MySQLSession | undefined;
  const stop = (): void => session?.destroy();
  signal?.addEventListener("abort", stop, { once: true });
  try {
    throwIfAborted(signal, "the restore");
    await bucket.checkBucket(signal);
    const body = await bucket.openRead(location.key, signal).catch((err: unknown) => {
      if (err instanceof BackupError && err.reason === "ObjectNotFound") {
        throw new BackupError("ObjectNotFound", `the dump file ${url} does not exist`, { cause: err });
      }
      throw err;
    });
    const downloaded = new Sha256Stream();
    pipe(body, downloaded, () => undefined);
    const { head, all } = await peek(downloaded);
    const compression: Compression = detectCompression(head);
    session = await MySQLSession.open(options.target, { charset: "binary" });
    if (options.intoDatabase !== undefined) {
      const db = quoteIdentifier(options.intoDatabase);
      await session.execute(`CREATE DATABASE IF NOT EXISTS ${db}`);
      await session.execute(`USE ${db}`);
    }
    const filter = new DatabaseFilter(options.databases);
    const progress: RestoreProgress = { phase: "dump-file", objectsTotal: 1, objectsDone: 0, bytesApplied: 0, statements: 0 };
    let lastReport = 0;
    const applied = await applySql(decompress(all, compression), {
      session,
      source: `the dump file ${url}`,
      ...(signal ? { signal } : {}),
      accept: (s) => filter.accept(s),
      onApplied: (bytes) => {
        progress.bytesApplied += bytes;
        progress.statements += 1;
        const now = performance.now();
        if (options.onProgress && now - lastReport >= 1000) {
          lastReport = now;
          options.onProgress({ ...progress });
        }
      },
    });
    await session.close();
    session = undefined;
    const databases = options.databases ?? (options.intoDatabase !== undefined ? [options.intoDatabase] : filter.seen);
    const absent = (options.databases ?? []).filter((d) => !filter.seen.includes(d));
    if (absent.length > 0) {
      throw new BackupError(
        "DatabaseNotFound",
        `the dump file ${url} has no database ${absent.join(", ")} (it has ${filter.seen.join(", ") || "no CREATE DATABASE or USE at all"}); the others were restored`,
      );
    }
    options.onProgress?.({ ...progress, phase: "done", objectsDone: 1 });
    options.logger?.info("dump file restored", { location: url, statements: progress.statements });
    return {
      kind: "dumpFile",
      location: url,
      databases,
      objects: 1,
      statements: progress.statements,
      bytes: applied.bytes,
      storedBytes: downloaded.bytes,
      startedAt,
      completedAt: new Date(),
      durations: { totalMs: Math.round(performance.now() - t0) },
    };
  } catch (err) {
    session?.destroy();
    if (signal?.aborted) throw abortedError("the restore", signal);
    throw err instanceof BackupError ? err : (corrupt(err, `the dump file ${url}`) ?? bucket.fail(err, `read ${url}`));
  } finally {
    signal?.removeEventListener("abort", stop);
    bucket.destroy();
  }
}
