// The uploads of one backup run: each object is compressed and uploaded
// while it is written (object-upload.ts); all are tracked so a failed run
// can abort them and delete what they wrote (discard).
import { settledWithin, type Logger } from "@stateward/core";
import { BackupError } from "../errors.ts";
import type { Compression } from "../storage/compression.ts";
import { manifestFileName } from "../storage/manifest.ts";
import { ObjectUpload, type StoredObject, type UploadTuning } from "../storage/object-upload.ts";
import type { BackupStore } from "../storage/s3.ts";

const contentTypes: Readonly<Record<Compression, string>> = { gzip: "application/gzip", zstd: "application/zstd", none: "application/sql" };

/** Every upload of a run, so a failure can abort and delete all of them. */
export class Uploads {
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

export async function writeObject(upload: ObjectUpload, statements: readonly string[]): Promise<StoredObject> {
  for (const s of statements) {
    if (!upload.write(Buffer.from(s, "utf8"))) await upload.drained();
  }
  return upload.finish();
}

/**
 * Leaves nothing of a failed backup behind: its manifest first (S3 may have
 * stored one whose PUT the backup saw fail: a lost answer, an abort in
 * flight; left, it would make the folder look complete with its objects
 * gone), uploads aborted, objects written so far deleted, and any multipart
 * upload still open in the folder aborted (one a hung request started late).
 * Failures here are logged, not thrown: the backup's own error is what the
 * user needs to see.
 */
export async function discard(store: BackupStore, uploads: Uploads, running: Promise<unknown>[], reason: Error, log: Logger | undefined): Promise<void> {
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
    await settledWithin(Promise.allSettled(running), 10_000);
    // Anything uploaded means the folder was claimed (claimFolder): a manifest in it is this run's.
    // Deleted before the objects, so that the folder never looks complete with objects missing
    // (and after the local aborts above, which must happen even when S3 does not answer).
    await store.bucket.deleteKeys([store.key(manifestFileName)]);
    await store.bucket.deleteKeys(uploads.keys());
    await store.bucket.abortIncompleteUploads(store.folder, (key) => store.owns(key));
  } catch (err) {
    log?.warn("could not clean up the failed backup's objects; deleteBackup removes them", { location: store.url, err });
  }
}
