// Streams one object into S3: bytes written here are compressed, hashed
// (SHA-256 of the stored, compressed bytes) and uploaded in multipart chunks
// as they come, so memory stays bounded whatever the object's size.
import { settledWithin } from "@stateward/core";
import { Upload } from "@aws-sdk/lib-storage";
import { createHash, type Hash } from "node:crypto";
import { once } from "node:events";
import { Transform, pipeline, type TransformCallback } from "node:stream";
import { BackupError } from "../errors.ts";
import { createCompressor, type Compression } from "./compression.ts";
import { describeLocation, type BackupStore } from "./s3.ts";

/** What was stored: the facts the manifest records about an object. */
export interface StoredObject {
  /** Key relative to the backup's folder. */
  key: string;
  /** Stored (compressed) bytes. */
  size: number;
  /** Bytes before compression. */
  uncompressedSize: number;
  /** Hex SHA-256 of the stored bytes. */
  sha256: string;
}

export interface UploadTuning {
  /**
   * Bytes per multipart part. Defaults to 8 MiB: S3's minimum is 5 MiB, and
   * each in-flight part is held in memory once.
   */
  partSize?: number;
  /**
   * Parts of one object uploaded at once. Defaults to 2, so one part is sent
   * while the next fills; memory per object is about (queueSize + 1) × partSize.
   */
  queueSize?: number;
}

export interface ObjectUploadOptions extends UploadTuning {
  compression: Compression;
  /** Compression level; defaults per compression (see defaultCompressionLevel). */
  level?: number;
  contentType?: string;
}

export const defaultPartSize = 8 * 1024 * 1024;
export const defaultQueueSize = 2;

/** Passes bytes through while hashing and counting them. */
class DigestStream extends Transform {
  private readonly hash: Hash = createHash("sha256");
  bytes = 0;
  digest: string | undefined;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    this.digest = this.hash.digest("hex");
    callback();
  }
}

type Outcome = { ok: true } | { ok: false; error: unknown };

/**
 * One object being written. `write` follows the Writable contract (false
 * means wait for `drained()`); `finish` completes it; `abort` discards it,
 * including its multipart upload on S3.
 */
export class ObjectUpload {
  readonly key: string;
  private readonly store: BackupStore;
  private readonly compressor: Transform;
  private readonly digest: DigestStream;
  private readonly upload: Upload;
  private readonly outcome: Promise<Outcome>;
  private uncompressed = 0;
  private failure: BackupError | undefined;
  private state: "open" | "finishing" | "done" | "aborted" = "open";
  private stored = false;

  constructor(store: BackupStore, key: string, options: ObjectUploadOptions) {
    this.store = store;
    this.key = key;
    this.compressor = createCompressor(options.compression, options.level);
    this.digest = new DigestStream();
    // Errors surface through the upload (its body stream fails); this
    // callback only has to exist so pipeline does not throw them globally.
    pipeline(this.compressor, this.digest, () => undefined);
    this.upload = new Upload({
      client: store.bucket.client,
      params: {
        Bucket: store.bucket.bucket,
        Key: store.key(key),
        Body: this.digest,
        ContentType: options.contentType ?? "application/octet-stream",
      },
      partSize: options.partSize ?? defaultPartSize,
      queueSize: options.queueSize ?? defaultQueueSize,
      leavePartsOnError: false,
    });
    this.outcome = this.upload.done().then(
      (): Outcome => {
        this.stored = true;
        return { ok: true };
      },
      (error: unknown): Outcome => {
        this.failure ??= store.bucket.fail(error, `upload ${describeLocation(store.bucket.bucket, store.key(key))}`);
        // Nothing reads the body any more: release what is buffered.
        this.compressor.destroy();
        return { ok: false, error };
      },
    );
  }

  /** Uncompressed bytes written so far. */
  get bytesWritten(): number {
    return this.uncompressed;
  }

  /** Writes uncompressed bytes; false means "wait for drained()". */
  write(chunk: Buffer): boolean {
    this.check();
    if (this.state !== "open") throw new Error(`object ${this.key} is no longer open for writing`);
    this.uncompressed += chunk.length;
    return this.compressor.write(chunk);
  }

  /** Resolves when more may be written; rejects if the upload failed meanwhile. */
  async drained(): Promise<void> {
    this.check();
    if (!this.compressor.writableNeedDrain) return;
    // Neither side rejects: a failed upload is reported by check() below.
    const drain = once(this.compressor, "drain").then(
      () => undefined,
      () => undefined,
    );
    await Promise.race([drain, this.outcome]);
    this.check();
  }

  private check(): void {
    if (this.failure) throw this.failure;
  }

  /** Ends the object and waits until S3 has all of it. */
  async finish(): Promise<StoredObject> {
    this.check();
    this.state = "finishing";
    this.compressor.end();
    const outcome = await this.outcome;
    if (!outcome.ok) throw this.failure ?? new Error("upload failed");
    this.state = "done";
    const sha256 = this.digest.digest;
    if (sha256 === undefined) throw new Error(`object ${this.key}: upload completed before its body ended`);
    return { key: this.key, size: this.digest.bytes, uncompressedSize: this.uncompressed, sha256 };
  }

  /**
   * Discards the object. Failing its body stream makes the uploader stop and
   * send AbortMultipartUpload before `upload.done()` settles, so when this
   * returns no incomplete upload is left behind (unlike `upload.abort()`,
   * which settles at once and aborts on S3 later, in the background). A
   * request hanging past `graceMs` is abandoned with `upload.abort()`; the
   * engine then sweeps the folder's incomplete uploads as a last resort.
   * An object that was already complete is not deleted here.
   */
  async abort(reason: Error, graceMs = 30_000): Promise<void> {
    if (this.state === "done" || this.state === "aborted") return;
    this.state = "aborted";
    this.failure ??= new BackupError("Aborted", `upload of ${this.key} was aborted: ${reason.message}`);
    this.compressor.destroy(reason);
    this.digest.destroy(reason);
    if (!(await settledWithin(this.outcome, graceMs))) await this.upload.abort();
  }

  /** True once S3 holds the complete object (even if it was aborted afterwards). */
  get completed(): boolean {
    return this.stored;
  }
}
