// The S3 side of backups: one client per location, with the options
// S3-compatible stores need (custom endpoint, path-style addressing, a custom
// CA, checksums only when required), and every S3 failure turned into a
// BackupError whose reason says what to fix.
//
// One file of ~400 lines on purpose: it is the one place the S3 client is
// made and called (BucketClient, every request through s3Failure), with
// BackupStore, a few lines, as its view of one backup's folder.
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { Agent } from "node:https";
import { finished, PassThrough, Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { rootCertificates } from "node:tls";
import { messageOf } from "@stateward/core";
import { BackupError } from "../errors.ts";
import { isBackupKey } from "./layout.ts";

/** How to reach an S3-compatible store. */
export interface S3Options {
  /**
   * URL of an S3-compatible endpoint, e.g. "https://minio.storage:9000".
   * Defaults to AWS S3 in `region`.
   */
  endpoint?: string;
  /** Region to sign requests for. Defaults to "us-east-1", which S3-compatible stores accept. */
  region?: string;
  /**
   * Address buckets as `<endpoint>/<bucket>` instead of `<bucket>.<endpoint>`.
   * Defaults to false (AWS's virtual-hosted style); most S3-compatible stores need true.
   */
  forcePathStyle?: boolean;
  /**
   * Static credentials, read by the caller from a Secret. Defaults to the
   * SDK's provider chain (environment, web identity / IRSA, instance metadata).
   */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** PEM CA certificates to trust for an https endpoint, in addition to Node's bundled roots. */
  caBundle?: string;
  /**
   * "WHEN_SUPPORTED" sends a CRC32 checksum with every upload (the SDK's
   * default); "WHEN_REQUIRED" only where the S3 API demands one, for stores
   * that predate flexible checksums. Defaults to "WHEN_SUPPORTED".
   */
  requestChecksumCalculation?: "WHEN_SUPPORTED" | "WHEN_REQUIRED";
  /** Give up connecting to the endpoint after this long. Defaults to 10 000 ms. */
  connectTimeoutMs?: number;
  /**
   * Abort a request whose socket stayed silent this long (0 disables it).
   * Defaults to 120 000 ms: long enough for a slow part upload, short enough
   * that a half-open connection does not hang a backup forever.
   */
  idleTimeoutMs?: number;
}

/** A backup folder: the objects and manifest of one backup live under `prefix`. */
export interface S3Location extends S3Options {
  bucket: string;
  /** Folder inside the bucket, e.g. "backups/prod/nightly-1" (no leading or trailing slash needed). */
  prefix: string;
}

/** One object, e.g. a plain `mariadb-dump` file to restore. */
export interface S3ObjectLocation extends S3Options {
  bucket: string;
  key: string;
}

/** A multipart upload that was started and never completed or aborted. */
export interface IncompleteUpload {
  key: string;
  uploadId: string;
  initiated?: Date;
}

const defaultRegion = "us-east-1";

/** "a//b/" -> "a/b"; refuses ".." segments, which S3 keeps literally but people read as "up". */
export function normalizePrefix(prefix: string): string {
  const parts = prefix.split("/").filter((p) => p !== "");
  if (parts.some((p) => p === "." || p === "..")) {
    throw new BackupError("InvalidOptions", `the S3 prefix "${prefix}" must not contain "." or ".." segments`);
  }
  return parts.join("/");
}

/** `s3://bucket/prefix/`, for messages and status. */
export function describeLocation(bucket: string, key: string): string {
  return `s3://${bucket}/${key}`;
}

/** How many times rereadDamaged reads an object whose bytes do not match its stored checksum before calling it damaged. */
const checksumReadAttempts = 3;
/** The pause between those reads: a rewrite of the object (a running archive's index) is done by then. */
const checksumRereadDelayMs = 200;

/**
 * Whether `err` is the SDK's refusal of a response body that does not match the checksum S3 stored with
 * the object (x-amz-checksum-*, validated on every GetObject by default). The SDK gives it no name or code,
 * only this message.
 */
function isStoredChecksumMismatch(err: unknown): boolean {
  return err instanceof Error && !(err instanceof BackupError) && !("$metadata" in err) && err.message.startsWith("Checksum mismatch");
}

export function createS3Client(options: S3Options): S3Client {
  const agent = new Agent({
    keepAlive: true,
    // Uploads run a few parts per object on a few objects at once; 32 sockets
    // leave room for that without queueing behind the default of 50 idle ones.
    maxSockets: 32,
    ...(options.caBundle ? { ca: [...rootCertificates, options.caBundle] } : {}),
  });
  return new S3Client({
    region: options.region ?? defaultRegion,
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    forcePathStyle: options.forcePathStyle ?? false,
    ...(options.credentials ? { credentials: options.credentials } : {}),
    requestChecksumCalculation: options.requestChecksumCalculation ?? "WHEN_SUPPORTED",
    followRegionRedirects: true,
    requestHandler: {
      httpsAgent: agent,
      connectionTimeout: options.connectTimeoutMs ?? 10_000,
      socketTimeout: options.idleTimeoutMs ?? 120_000,
    },
  });
}

interface S3ErrorShape {
  name?: string;
  code?: string;
  Code?: string;
  $metadata?: { httpStatusCode?: number };
}

function endpointOf(options: S3Options): string {
  return options.endpoint ?? `AWS S3 (${options.region ?? defaultRegion})`;
}

/**
 * Turns an SDK error into a BackupError. `what` completes "could not …",
 * e.g. `read s3://bucket/key`.
 */
export function s3Failure(err: unknown, what: string, options: S3Options & { bucket: string }): BackupError {
  if (err instanceof BackupError) return err;
  const e = (err ?? {}) as S3ErrorShape;
  const status = e.$metadata?.httpStatusCode;
  const code = e.name ?? e.Code ?? "";
  const endpoint = endpointOf(options);
  if (e.name === "AbortError") {
    return new BackupError("Aborted", `could not ${what}: the request was aborted`, { retryable: true, cause: err });
  }
  if (isStoredChecksumMismatch(err)) {
    // Not "unreachable": S3 answered, with bytes that are not what it stored.
    return new BackupError("ChecksumMismatch", `could not ${what}: its bytes do not match the checksum S3 stored with the object (${messageOf(err)})`, { cause: err });
  }
  if (status === undefined) {
    // No HTTP response at all: DNS, refused connection, TLS or a timeout.
    const detail = e.code ?? messageOf(err);
    return new BackupError("StorageUnreachable", `could not ${what}: S3 endpoint ${endpoint} is unreachable (${detail})`, {
      retryable: true,
      cause: err,
    });
  }
  if (code === "NoSuchBucket") {
    return new BackupError("BucketNotFound", `bucket "${options.bucket}" does not exist at ${endpoint}`, { cause: err });
  }
  if (code === "NoSuchKey" || code === "NotFound" || status === 404) {
    return new BackupError("ObjectNotFound", `could not ${what}: no such object`, { cause: err });
  }
  if (status === 403 || status === 401 || code === "InvalidAccessKeyId" || code === "SignatureDoesNotMatch") {
    return new BackupError(
      "StorageAccessDenied",
      `could not ${what}: S3 at ${endpoint} denied access (HTTP ${status}${code && code !== String(status) ? `, ${code}` : ""}); check the access key, the secret key and the bucket's policy`,
      { cause: err },
    );
  }
  return new BackupError("StorageError", `could not ${what}: S3 at ${endpoint} answered HTTP ${status}${code ? ` (${code})` : ""}`, {
    retryable: status >= 500 || status === 429,
    cause: err,
  });
}

/**
 * One S3 client bound to a bucket. Keys passed to it are full object keys;
 * `BackupStore` adds the folder of a backup on top.
 */
export class BucketClient {
  readonly options: S3Options & { bucket: string };
  readonly client: S3Client;

  constructor(options: S3Options & { bucket: string }) {
    if (!options.bucket) throw new BackupError("InvalidOptions", "the S3 bucket name is empty");
    this.options = options;
    this.client = createS3Client(options);
  }

  get bucket(): string {
    return this.options.bucket;
  }

  fail(err: unknown, what: string): BackupError {
    return s3Failure(err, what, this.options);
  }

  /**
   * Fails with StorageUnreachable, StorageAccessDenied or BucketNotFound
   * unless the bucket exists and these credentials may use it. Run before
   * any work, so a misconfigured backup fails in a second, not after a dump.
   */
  async checkBucket(signal?: AbortSignal): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal: signal });
    } catch (err) {
      const failure = this.fail(err, `access bucket "${this.bucket}"`);
      // HEAD responses have no body, so a missing bucket is a bare 404.
      if (failure.reason === "ObjectNotFound") {
        throw new BackupError("BucketNotFound", `bucket "${this.bucket}" does not exist at ${endpointOf(this.options)}`, { cause: err });
      }
      throw failure;
    }
  }

  async exists(key: string, signal?: AbortSignal): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal: signal });
      return true;
    } catch (err) {
      const failure = this.fail(err, `read ${describeLocation(this.bucket, key)}`);
      if (failure.reason === "ObjectNotFound") return false;
      throw failure;
    }
  }

  async putBytes(key: string, body: Buffer, contentType: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType }), {
        abortSignal: signal,
      });
    } catch (err) {
      throw this.fail(err, `write ${describeLocation(this.bucket, key)}`);
    }
  }

  /**
   * The object's bytes; refuses objects over `maxBytes` (meant for manifests and indexes). Bytes that do
   * not match the checksum S3 stored with the object are read again (a read racing a rewrite, or damaged
   * on the way), then refused as ChecksumMismatch naming the object: damaged in the bucket.
   */
  async getBytes(key: string, maxBytes: number, signal?: AbortSignal): Promise<Buffer> {
    return this.rereadDamaged(key, signal, () => this.readWhole(key, maxBytes, signal));
  }

  /**
   * Runs `read` — one whole read of `key` — again when the bytes it got missed the checksum S3 stored with
   * the object: S3 holds the right bytes, they changed on the way (or a rewrite raced the read). After
   * checksumReadAttempts such reads, ChecksumMismatch naming the object; any other failure at once.
   */
  async rereadDamaged<T>(key: string, signal: AbortSignal | undefined, read: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await read();
      } catch (err) {
        const failure = this.fail(err, `read ${describeLocation(this.bucket, key)}`);
        // Only S3's own refusal: a ChecksumMismatch of the caller's (more bytes than the manifest says)
        // would be the same again.
        if (failure.reason !== "ChecksumMismatch" || !isStoredChecksumMismatch(failure.cause)) throw failure;
        if (attempt >= checksumReadAttempts) {
          throw new BackupError("ChecksumMismatch", `${describeLocation(this.bucket, key)} is damaged: read ${attempt} times, its bytes never matched the checksum S3 stored with it (${messageOf(failure.cause)})`, { cause: failure });
        }
        // An abort during the pause fails the next read, as Aborted.
        await sleep(checksumRereadDelayMs, undefined, { signal }).catch(() => undefined);
      }
    }
  }

  private async readWhole(key: string, maxBytes: number, signal?: AbortSignal): Promise<Buffer> {
    const body = await this.openRead(key, signal);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of body) {
      const b = chunk as Buffer;
      size += b.length;
      if (size > maxBytes) {
        body.destroy();
        throw new BackupError("InvalidManifest", `${describeLocation(this.bucket, key)} is larger than ${maxBytes} bytes`);
      }
      chunks.push(b);
    }
    return Buffer.concat(chunks, size);
  }

  /**
   * A stream of the object's bytes, as they arrive. It fails with a BackupError from s3Failure, whether the
   * request fails or the body does later (the connection drops, or the bytes miss the checksum S3 stored
   * with the object, which the SDK checks only at the end): no reader ever sees a raw SDK error.
   */
  async openRead(key: string, signal?: AbortSignal): Promise<Readable> {
    const what = `read ${describeLocation(this.bucket, key)}`;
    let body: Readable;
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal: signal });
      if (!(res.Body instanceof Readable)) throw new Error("the SDK returned no Node stream for the object body");
      body = res.Body;
    } catch (err) {
      throw this.fail(err, what);
    }
    // `pipe`, not `pipeline`: pipeline would destroy `out` with the SDK's error before we could translate it.
    // `finished` also sees a body closed before its end without an error. An abort shows in the body as a
    // dropped connection: it is said to be the abort it is.
    const out = new PassThrough();
    finished(body, (err) => {
      if (err) out.destroy(this.fail(signal?.aborted ? new DOMException("the read was aborted", { name: "AbortError", cause: err }) : err, what));
    });
    out.on("close", () => body.destroy());
    return body.pipe(out);
  }

  /** Every key under `prefix` (which should end with "/"). */
  async listKeys(prefix: string, signal?: AbortSignal): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    try {
      do {
        const page = await this.client.send(
          new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }),
          { abortSignal: signal },
        );
        for (const o of page.Contents ?? []) if (o.Key !== undefined) keys.push(o.Key);
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    } catch (err) {
      throw this.fail(err, `list ${describeLocation(this.bucket, prefix)}`);
    }
    return keys;
  }

  /**
   * Deletes the keys, 1000 per request; falls back to one request per key
   * for stores without multi-object delete (or that refuse its checksum).
   */
  async deleteKeys(keys: readonly string[], signal?: AbortSignal): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000);
      try {
        const res = await this.client.send(
          new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }),
          { abortSignal: signal },
        );
        const failed = res.Errors ?? [];
        if (failed.length > 0) {
          const first = failed[0];
          throw new BackupError(
            "StorageError",
            `could not delete ${failed.length} object(s) under ${describeLocation(this.bucket, "")}, e.g. ${first?.Key ?? "?"}: ${first?.Code ?? "?"}`,
            { retryable: true },
          );
        }
      } catch (err) {
        if (err instanceof BackupError) throw err;
        const failure = this.fail(err, `delete objects in bucket "${this.bucket}"`);
        if (failure.reason !== "StorageError" || failure.retryable) throw failure;
        for (const key of batch) await this.deleteKey(key, signal);
      }
    }
  }

  async deleteKey(key: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal: signal });
    } catch (err) {
      throw this.fail(err, `delete ${describeLocation(this.bucket, key)}`);
    }
  }

  /** Multipart uploads under `prefix` that were neither completed nor aborted. */
  async listIncompleteUploads(prefix: string, signal?: AbortSignal): Promise<IncompleteUpload[]> {
    const uploads: IncompleteUpload[] = [];
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    try {
      for (;;) {
        const page = await this.client.send(
          new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: prefix, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }),
          { abortSignal: signal },
        );
        for (const u of page.Uploads ?? []) {
          if (u.Key !== undefined && u.UploadId !== undefined) {
            uploads.push({ key: u.Key, uploadId: u.UploadId, ...(u.Initiated ? { initiated: u.Initiated } : {}) });
          }
        }
        if (!page.IsTruncated) break;
        keyMarker = page.NextKeyMarker;
        uploadIdMarker = page.NextUploadIdMarker;
      }
    } catch (err) {
      throw this.fail(err, `list multipart uploads under ${describeLocation(this.bucket, prefix)}`);
    }
    return uploads;
  }

  /** Aborts the incomplete multipart uploads under `prefix` whose key `which` accepts; returns how many. */
  async abortIncompleteUploads(prefix: string, which: (key: string) => boolean = () => true, signal?: AbortSignal): Promise<number> {
    const uploads = (await this.listIncompleteUploads(prefix, signal)).filter((u) => which(u.key));
    for (const u of uploads) {
      try {
        await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: u.key, UploadId: u.uploadId }), {
          abortSignal: signal,
        });
      } catch (err) {
        const failure = this.fail(err, `abort the multipart upload of ${describeLocation(this.bucket, u.key)}`);
        // Gone in the meantime (completed or aborted by its own uploader): nothing left to do.
        if (failure.reason !== "ObjectNotFound") throw failure;
      }
    }
    return uploads.length;
  }

  destroy(): void {
    this.client.destroy();
  }

  /**
   * From now on this client writes nothing more: every request that would store
   * data (a PUT, a multipart upload's create, part or complete) fails before it
   * is sent, with `reason`; reads, deletes and aborts still go through, for the
   * cleanup. For a backup told to stop — a manager that lost leadership must not
   * store another byte, and parallel work that has not seen the abort yet would
   * otherwise open new connections (destroy() only closes the current ones).
   */
  refuseWrites(reason: Error): void {
    if (this.writesRefused) return;
    this.writesRefused = true;
    this.client.middlewareStack.add(
      (next, context) => (args) => (STORING_COMMANDS.has(context.commandName ?? "") ? Promise.reject(reason) : next(args)),
      { step: "initialize", name: "statewardRefuseWrites" },
    );
  }

  private writesRefused = false;
}

/** The S3 commands that store data. */
const STORING_COMMANDS = new Set(["PutObjectCommand", "CreateMultipartUploadCommand", "UploadPartCommand", "CompleteMultipartUploadCommand"]);

/** The objects of one backup: keys are relative to the backup's folder. */
export class BackupStore {
  readonly bucket: BucketClient;
  /** The folder, normalized ("" for the bucket's root). */
  readonly prefix: string;

  constructor(location: S3Location, bucket: BucketClient = new BucketClient(location)) {
    this.bucket = bucket;
    this.prefix = normalizePrefix(location.prefix);
  }

  /** The full key of an object of this backup. */
  key(relative: string): string {
    return this.prefix === "" ? relative : `${this.prefix}/${relative}`;
  }

  /** What every key of this backup starts with. */
  get folder(): string {
    return this.prefix === "" ? "" : `${this.prefix}/`;
  }

  /** `s3://bucket/prefix/` */
  get url(): string {
    return describeLocation(this.bucket.bucket, this.folder);
  }

  /** True for a full key that is part of this backup (see layout.ts): the only keys a cleanup touches. */
  owns(key: string): boolean {
    return key.startsWith(this.folder) && isBackupKey(key.slice(this.folder.length));
  }

  destroy(): void {
    this.bucket.destroy();
  }
}
