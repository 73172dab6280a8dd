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
//                     target as it was; one after the swap keeps the
//                     target's replaced tables aside and says where. The
//                     server needs room for a second copy of the restored
//                     tables meanwhile.
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
//
// Here: the options, the result, and the choice between the two; the phases
// of a backup's restore are in backup-restore.ts (Staged's in
// staged-restore.ts), a dump file's in dump-file-restore.ts.
import type { Logger } from "@stateward/core";
import type { MySQLConnectionOptions } from "../engine/connection.ts";
import { BackupError } from "../errors.ts";
import { validateIdentifier } from "../engine/sql.ts";
import { manifestFileName, type BackupManifest, type ObjectKind } from "../storage/manifest.ts";
import { BucketClient, describeLocation, normalizePrefix, type S3Location, type S3ObjectLocation, type S3Options } from "../storage/s3.ts";
import { restoreBackup } from "./backup-restore.ts";
import { restoreDumpFile } from "./dump-file-restore.ts";
import type { StagingLeftovers } from "./staging.ts";

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
   * again with the same id first drops the staging databases an earlier,
   * killed run of it left (so does cleanUpRestore), and refuses, changing
   * nothing, while tables that run's swap replaced are kept. Defaults to a
   * random id.
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
