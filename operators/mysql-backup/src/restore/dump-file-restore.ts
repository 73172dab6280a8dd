// restoreDumpFile: one plain mysqldump / mariadb-dump file (see restore.ts)
// streamed from S3, decompressed if gzip or zstd (by its magic bytes), and
// applied in order on one connection, in place.
import { pipeline as pipe, Readable } from "node:stream";
import { MySQLSession } from "../engine/connection.ts";
import { abortedError, throwIfAborted } from "../engine/errors.ts";
import { BackupError } from "../errors.ts";
import { quoteIdentifier, validateIdentifier } from "../engine/sql.ts";
import { detectCompression, type Compression } from "../storage/compression.ts";
import { BucketClient, describeLocation, type S3ObjectLocation } from "../storage/s3.ts";
import { applySql } from "./apply.ts";
import { DatabaseFilter } from "./dump-file.ts";
import type { RestoreOptions, RestoreProgress, RestoreResult } from "./restore.ts";
import { corrupt, decompress, Sha256Stream } from "./verified-object.ts";

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

export async function restoreDumpFile(options: RestoreOptions, location: S3ObjectLocation): Promise<RestoreResult> {
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
