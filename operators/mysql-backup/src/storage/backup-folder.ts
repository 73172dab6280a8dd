// Operations on a whole backup folder: read its manifest, delete it.
import { createHash } from "node:crypto";
import { BackupError } from "../errors.ts";
import { manifestFileName, parseManifest, type BackupManifest } from "./manifest.ts";
import { BackupStore, describeLocation, type S3Location } from "./s3.ts";

/** Manifests are a few hundred bytes per object; 64 MiB is far beyond any real one. */
const maxManifestBytes = 64 * 1024 * 1024;

/**
 * Reads and validates the manifest of the backup in `store`; with
 * `expectedSha256` (what runBackup returned as manifestSha256), refuses a
 * manifest that changed since.
 */
export async function loadManifest(store: BackupStore, signal?: AbortSignal, expectedSha256?: string): Promise<BackupManifest> {
  const key = store.key(manifestFileName);
  const where = describeLocation(store.bucket.bucket, key);
  let bytes: Buffer;
  try {
    bytes = await store.bucket.getBytes(key, maxManifestBytes, signal);
  } catch (err) {
    if (err instanceof BackupError && err.reason === "ObjectNotFound") {
      throw new BackupError("ManifestNotFound", `${store.url} has no ${manifestFileName}: it is not a backup, or the backup never completed`, { cause: err });
    }
    throw err;
  }
  if (expectedSha256 !== undefined) {
    const actual = createHash("sha256").update(bytes).digest("hex");
    if (actual !== expectedSha256.toLowerCase()) {
      throw new BackupError("ChecksumMismatch", `${where} changed since the backup was taken: its SHA-256 is ${actual}, expected ${expectedSha256}`);
    }
  }
  return parseManifest(bytes, where);
}

/** The manifest of the backup at `location` (checks the bucket first, for a clear error). */
export async function readBackupManifest(location: S3Location, signal?: AbortSignal): Promise<BackupManifest> {
  const store = new BackupStore(location);
  try {
    await store.bucket.checkBucket(signal);
    return await loadManifest(store, signal);
  } finally {
    store.destroy();
  }
}

export interface DeleteBackupResult {
  /** Objects deleted (the manifest included). */
  deletedObjects: number;
  /** Incomplete multipart uploads aborted (left by a backup that was killed). */
  abortedUploads: number;
}

/**
 * Removes a backup's objects from its folder — the manifest first, so a
 * half-deleted backup is never taken for a complete one — and aborts its
 * multipart uploads left open (a backup killed mid-upload). Only keys of
 * the backup layout are touched (layout.ts): anything else in the folder,
 * such as the backups of a sub-folder, stays.
 */
export async function clearBackupFolder(store: BackupStore, signal?: AbortSignal): Promise<DeleteBackupResult> {
  const abortedUploads = await store.bucket.abortIncompleteUploads(store.folder, (key) => store.owns(key), signal);
  const manifestKey = store.key(manifestFileName);
  const keys = (await store.bucket.listKeys(store.folder, signal)).filter((key) => store.owns(key));
  if (keys.includes(manifestKey)) await store.bucket.deleteKey(manifestKey, signal);
  await store.bucket.deleteKeys(
    keys.filter((k) => k !== manifestKey),
    signal,
  );
  return { deletedObjects: keys.length, abortedUploads };
}

/**
 * Deletes the backup at `location` (see clearBackupFolder). Deleting a backup
 * that is already gone succeeds, so it can be retried.
 */
export async function deleteBackup(location: S3Location, signal?: AbortSignal): Promise<DeleteBackupResult> {
  return inBackupFolder(location, signal, (store) => clearBackupFolder(store, signal));
}

/**
 * Removes what an interrupted backup left at `location` (see clearBackupFolder)
 * — unless the folder holds a manifest: undefined then, and nothing deleted.
 * A backup writes its manifest last and a deletion removes it first, so a folder
 * with one holds a whole backup: an earlier one of this name that the run had
 * not begun to replace (it would have failed with BackupExists), or the run's
 * own, finished just before its manager stopped. Neither is a leftover.
 */
export async function removePartialBackup(location: S3Location, signal?: AbortSignal): Promise<DeleteBackupResult | undefined> {
  return inBackupFolder(location, signal, async (store) =>
    (await store.bucket.exists(store.key(manifestFileName), signal)) ? undefined : clearBackupFolder(store, signal),
  );
}

/** `work` on the backup folder at `location`, once the bucket answers; never on the bucket's root. */
async function inBackupFolder<T>(location: S3Location, signal: AbortSignal | undefined, work: (store: BackupStore) => Promise<T>): Promise<T> {
  const store = new BackupStore(location);
  try {
    if (store.prefix === "") {
      throw new BackupError("InvalidOptions", "refusing to delete a backup whose S3 prefix is empty: that would be the bucket's root");
    }
    await store.bucket.checkBucket(signal);
    return await work(store);
  } finally {
    store.destroy();
  }
}
