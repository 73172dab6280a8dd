// Reading a backup's objects straight from S3, hashing them on the way: no
// temporary file, so a restore needs no local disk whatever the object sizes.
// The hash can only be checked once the last byte went through, so what is
// read is applied where a failure costs nothing (a staging database), or
// verified in a pass of its own before anything is applied (InPlace mode).
import { createHash } from "node:crypto";
import { pipeline as pipe, Transform, Writable, type Readable, type TransformCallback } from "node:stream";
import { pipeline } from "node:stream/promises";
import { messageOf } from "@stateward/core";
import { BackupError } from "../errors.ts";
import { createDecompressor, type Compression } from "../storage/compression.ts";
import type { ManifestObject } from "../storage/manifest.ts";
import { describeLocation, type BackupStore } from "../storage/s3.ts";

/** Counts and hashes what passes through. */
export class Sha256Stream extends Transform {
  readonly hash = createHash("sha256");
  bytes = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    callback(null, chunk);
  }
}

/**
 * A zlib/zstd error: bytes that are not what they claim to be. (Bytes that miss the checksum S3 stored with
 * the object come out of `openRead` as a ChecksumMismatch already.)
 */
export function corrupt(err: unknown, what: string): BackupError | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code === "string" && (code.startsWith("Z_") || code.startsWith("ERR_ZSTD") || code === "ERR_ZLIB_INITIALIZATION_FAILED")) {
    return new BackupError("ChecksumMismatch", `${what} is corrupt: ${messageOf(err)}`, { cause: err });
  }
  return undefined;
}

async function openObject(store: BackupStore, object: ManifestObject, signal: AbortSignal | undefined): Promise<Readable> {
  try {
    return await store.bucket.openRead(store.key(object.key), signal);
  } catch (err) {
    if (err instanceof BackupError && err.reason === "ObjectNotFound") {
      throw new BackupError("ObjectNotFound", `object ${object.key} listed in the manifest of ${store.url} is missing`, { cause: err });
    }
    throw err;
  }
}

function checkDigest(store: BackupStore, object: ManifestObject, digest: Sha256Stream, consequence: string): void {
  const sha256 = digest.hash.digest("hex");
  if (sha256 !== object.sha256 || digest.bytes !== object.size) {
    throw new BackupError(
      "ChecksumMismatch",
      `object ${object.key} of ${store.url} is corrupt: ${digest.bytes} bytes with SHA-256 ${sha256}, but the manifest says ${object.size} bytes with SHA-256 ${object.sha256}; ${consequence}`,
    );
  }
}

export interface VerifiedObject {
  /** The object's SQL, decompressed. Read it to the end (or destroy it). */
  sql: Readable;
  /**
   * Resolves with the stored size once the last byte was read and size and
   * SHA-256 matched the manifest; rejects otherwise.
   */
  verified: Promise<number>;
}

/**
 * Streams an object's SQL from S3. `consequence` completes the message of a
 * checksum mismatch (what happened to what was read).
 */
export async function streamObject(
  store: BackupStore,
  object: ManifestObject,
  compression: Compression,
  signal: AbortSignal | undefined,
  consequence: string,
): Promise<VerifiedObject> {
  const body = await openObject(store, object, signal);
  const digest = new Sha256Stream();
  const sql = createDecompressor(compression);
  const key = store.key(object.key);
  const verified = new Promise<number>((resolve, reject) => {
    pipe(body, digest, sql, (err) => {
      if (err) {
        reject(corrupt(err, `object ${object.key} of ${store.url}`) ?? store.bucket.fail(err, `download ${describeLocation(store.bucket.bucket, key)}`));
        return;
      }
      try {
        checkDigest(store, object, digest, consequence);
        resolve(digest.bytes);
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
  });
  // Whoever reads `sql` sees the failure; this keeps it from being unhandled meanwhile.
  verified.catch(() => undefined);
  return { sql, verified };
}

/**
 * Downloads an object whole, hashing it, and checks its size and SHA-256 against the manifest. `sink` is
 * called once per download and gives what each chunk is handed to (an error stops the download). Nothing of
 * the object was applied yet, so a download whose bytes missed the checksum S3 stored with the object —
 * damaged on the way, not in the bucket — is made again (BucketClient.rereadDamaged). A SHA-256 that misses
 * the manifest's is not: those bytes passed S3's check, so they are what the bucket holds.
 */
async function downloadChecked(
  store: BackupStore,
  object: ManifestObject,
  signal: AbortSignal | undefined,
  consequence: string,
  sink: () => (chunk: Buffer, bytesSoFar: number) => Error | null,
): Promise<number> {
  const key = store.key(object.key);
  const digest = await store.bucket.rereadDamaged(key, signal, async () => {
    const body = await openObject(store, object, signal);
    const digest = new Sha256Stream();
    const take = sink();
    const out = new Writable({ write: (chunk: Buffer, _encoding, callback) => callback(take(chunk, digest.bytes)) });
    try {
      await pipeline(body, digest, out, ...(signal ? [{ signal }] : []));
    } catch (err) {
      throw store.bucket.fail(err, `download ${describeLocation(store.bucket.bucket, key)}`);
    }
    return digest;
  });
  checkDigest(store, object, digest, consequence);
  return digest.bytes;
}

/** Downloads an object without keeping it, to check size and SHA-256 (InPlace mode's first pass). */
export async function verifyObject(store: BackupStore, object: ManifestObject, signal: AbortSignal | undefined): Promise<number> {
  return downloadChecked(store, object, signal, "nothing was applied", () => () => null);
}

/** Reads an object into memory, verified (post-data objects, which the staged restore applies only after the swap). */
export async function readObject(store: BackupStore, object: ManifestObject, signal: AbortSignal | undefined, maxBytes: number): Promise<Buffer> {
  if (object.size > maxBytes) {
    throw new BackupError(
      "InvalidOptions",
      `object ${object.key} of ${store.url} holds ${object.size} bytes of routines, views, triggers and events; a staged restore keeps these objects in memory until after the swap, and has room for ${maxBytes} more bytes of them. Restore with mode InPlace; nothing was changed`,
    );
  }
  let chunks: Buffer[] = [];
  await downloadChecked(store, object, signal, "nothing was changed", () => {
    chunks = []; // a download made again starts over
    return (chunk, bytesSoFar) => {
      chunks.push(chunk);
      return bytesSoFar > maxBytes ? new BackupError("ChecksumMismatch", `object ${object.key} of ${store.url} is larger than the manifest says`) : null;
    };
  });
  return Buffer.concat(chunks);
}

/** `source` decompressed; an error on either side fails the result, so a reader sees it. */
export function decompress(source: Readable, compression: Compression): Readable {
  const out = createDecompressor(compression);
  pipe(source, out, () => undefined);
  return out;
}
