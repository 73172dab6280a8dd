// runRestore: brings a backup (or a plain mysqldump file) back into a server.
//
// From a backup: the manifest is read and validated; then schema objects are
// applied one by one, data objects in parallel (one connection each), and
// post-data objects last, all in manifest order. Every object is downloaded
// to a temporary file while its SHA-256 is computed, and applied only if
// size and hash match the manifest — a corrupted object is refused before a
// single statement of it reaches the server.
//
// From a dump file: streamed, decompressed if gzip or zstd (by its magic
// bytes), applied in order on one connection. It has no checksum to verify.
import type { Logger } from "@stateward/core";
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, rm, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline as pipe, Readable, Transform, type TransformCallback } from "node:stream";
import { pipeline } from "node:stream/promises";
import { MySQLSession, type MySQLConnectionOptions } from "../engine/connection.ts";
import { abortedError, BackupError, messageOf, throwIfAborted } from "../engine/errors.ts";
import { quoteIdentifier, validateIdentifier } from "../engine/sql.ts";
import { loadManifest } from "../storage/backup-folder.ts";
import { createDecompressor, detectCompression, type Compression } from "../storage/compression.ts";
import { manifestFileName, type BackupManifest, type ManifestObject, type ObjectKind } from "../storage/manifest.ts";
import { BackupStore, BucketClient, describeLocation, normalizePrefix, type S3Location, type S3ObjectLocation, type S3Options } from "../storage/s3.ts";
import { applySql } from "./apply.ts";
import { DatabaseFilter } from "./dump-file.ts";

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
  /** Where objects wait, verified, to be applied. Defaults to the OS temporary directory. */
  tempDir?: string;
  signal?: AbortSignal;
  /** Called after each object, and about once a second during long ones. */
  onProgress?: (progress: RestoreProgress) => void;
  logger?: Logger;
}

export interface RestoreProgress {
  phase: ObjectKind | "dump-file" | "done";
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

/** A zlib/zstd error: the bytes are not what they claim to be. */
function corrupt(err: unknown, what: string): BackupError | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code === "string" && (code.startsWith("Z_") || code.startsWith("ERR_ZSTD") || code === "ERR_ZLIB_INITIALIZATION_FAILED")) {
    return new BackupError("ChecksumMismatch", `${what} is corrupt: ${messageOf(err)}`, { cause: err });
  }
  return undefined;
}

/** Counts and hashes what passes through. */
class Sha256Stream extends Transform {
  readonly hash = createHash("sha256");
  bytes = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    callback(null, chunk);
  }
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
  if ("backup" in options.source) return restoreBackup(options, options.source.backup, options.source.manifestSha256, parallelism);
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

/** Runs `work` on `items`, one at a time per session; the first failure stops the rest. */
async function forEachBounded<T>(items: readonly T[], sessions: readonly MySQLSession[], work: (item: T, session: MySQLSession) => Promise<void>): Promise<void> {
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

async function restoreBackup(options: RestoreOptions, location: S3Location, manifestSha256: string | undefined, parallelism: number): Promise<RestoreResult> {
  const startedAt = new Date();
  const t0 = performance.now();
  // Aborted by the caller, or by the first failure: either way every
  // connection is dropped and every download stopped.
  const stopped = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stopped.signal]) : stopped.signal;
  const store = new BackupStore(location);
  const sessions: MySQLSession[] = [];
  const stopAll = (): void => {
    for (const s of sessions) s.destroy();
  };
  signal.addEventListener("abort", stopAll, { once: true });
  let tempDir: string | undefined;
  try {
    throwIfAborted(signal, "the restore");
    await store.bucket.checkBucket(signal);
    const manifest = await loadManifest(store, signal, manifestSha256);
    const databases = options.databases ? [...new Set(options.databases)] : manifest.databases;
    const missing = databases.filter((d) => !manifest.databases.includes(d));
    if (missing.length > 0) {
      throw new BackupError("DatabaseNotFound", `the backup at ${store.url} has no database ${missing.join(", ")} (it has ${manifest.databases.join(", ")})`);
    }
    const objects = manifest.objects.filter((o) => databases.includes(o.database));
    const progress: RestoreProgress = {
      phase: "schema",
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

    tempDir = await mkdtemp(join(options.tempDir ?? tmpdir(), "stateward-restore-"));
    const dataObjects = objects.filter((o) => o.kind === "data");
    const connections = Math.max(1, Math.min(parallelism, dataObjects.length));
    for (let i = 0; i < connections; i++) {
      throwIfAborted(signal, "the restore");
      sessions.push(await MySQLSession.open(options.target, { charset: "binary" }));
    }
    const main = sessions[0] as MySQLSession;
    let storedBytes = 0;
    let sqlBytes = 0;
    let fileNumber = 0;
    const dir = tempDir;

    const restoreObject = async (object: ManifestObject, session: MySQLSession): Promise<void> => {
      throwIfAborted(signal, "the restore");
      const file = join(dir, `${++fileNumber}.part`);
      try {
        storedBytes += await downloadVerified(store, object, file, signal);
        const source = `object ${object.key} of ${store.url}`;
        const decompressed = decompress(createReadStream(file), manifest.compression);
        const applied = await applySql(decompressed, {
          session,
          source,
          signal,
          onApplied: (bytes) => {
            progress.bytesApplied += bytes;
            progress.statements += 1;
            report();
          },
        }).catch((err: unknown) => {
          throw corrupt(err, source) ?? err;
        });
        if (applied.bytes !== object.uncompressedSize) {
          throw new BackupError("ChecksumMismatch", `${source} decompressed to ${applied.bytes} bytes, the manifest says ${object.uncompressedSize}`);
        }
        sqlBytes += applied.bytes;
      } finally {
        await unlink(file).catch(() => undefined);
      }
      progress.objectsDone += 1;
      report(true);
    };

    for (const phase of ["schema", "data", "post-data"] as const) {
      progress.phase = phase;
      const list = objects.filter((o) => o.kind === phase);
      if (phase === "data") {
        // Different tables (and parts of one big table) load side by side.
        await forEachBounded(list, sessions, restoreObject).catch((err: unknown) => {
          stopped.abort();
          throw err;
        });
      } else {
        for (const o of list) await restoreObject(o, main);
      }
    }
    for (const s of sessions) await s.close();
    sessions.length = 0;
    progress.phase = "done";
    report(true);
    const rows = objects.reduce((n, o) => n + (o.rows ?? 0), 0);
    options.logger?.info("restore completed", { location: store.url, objects: objects.length, rows });
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
      startedAt,
      completedAt: new Date(),
      durations: { totalMs: Math.round(performance.now() - t0) },
    };
  } catch (err) {
    stopAll();
    if (options.signal?.aborted) throw abortedError("the restore", options.signal);
    throw err instanceof BackupError ? err : new BackupError("DatabaseError", messageOf(err), { cause: err });
  } finally {
    signal.removeEventListener("abort", stopAll);
    store.destroy();
    if (tempDir) await rm(tempDir, { recursive: true, force: true });
  }
}

/**
 * Downloads an object to `file`, hashing it on the way; fails (and nothing
 * of it is applied) unless size and SHA-256 match the manifest. Returns the size.
 */
async function downloadVerified(store: BackupStore, object: ManifestObject, file: string, signal: AbortSignal | undefined): Promise<number> {
  const key = store.key(object.key);
  let body: Readable;
  try {
    body = await store.bucket.openRead(key, signal);
  } catch (err) {
    if (err instanceof BackupError && err.reason === "ObjectNotFound") {
      throw new BackupError("ObjectNotFound", `object ${object.key} listed in the manifest of ${store.url} is missing`, { cause: err });
    }
    throw err;
  }
  const digest = new Sha256Stream();
  try {
    await pipeline(body, digest, createWriteStream(file), ...(signal ? [{ signal }] : []));
  } catch (err) {
    throw store.bucket.fail(err, `download ${describeLocation(store.bucket.bucket, key)}`);
  }
  const sha256 = digest.hash.digest("hex");
  if (sha256 !== object.sha256 || digest.bytes !== object.size) {
    throw new BackupError(
      "ChecksumMismatch",
      `object ${object.key} of ${store.url} is corrupt: ${digest.bytes} bytes with SHA-256 ${sha256}, but the manifest says ${object.size} bytes with SHA-256 ${object.sha256}; nothing of it was applied`,
    );
  }
  return digest.bytes;
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
