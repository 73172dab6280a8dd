// The errors of the whole package: the backup engine, the restore and the
// storage layer all throw a BackupError. It carries a CamelCase `reason` the
// Kubernetes side can put into a condition as is, and a message written for
// the user; neither ever contains a password or key. It lives at the package
// root, not in engine/, so that storage/ never imports engine/ (checked by
// the lint, eslint.config.js). It is a ReconcileError of core, never terminal
// for the controller: `retryable` is about running the operation again, not
// about reconciling the object again.
import { ReconcileError } from "@stateward/core";

/** Why a backup, restore or storage operation failed. */
export type BackupFailureReason =
  /** The options themselves are wrong (e.g. an invalid database name). */
  | "InvalidOptions"
  /** The S3 endpoint could not be reached (DNS, connection refused, TLS, timeout). */
  | "StorageUnreachable"
  /** S3 refused the credentials or the request (403). */
  | "StorageAccessDenied"
  /** The bucket does not exist. */
  | "BucketNotFound"
  /** Any other S3 failure. */
  | "StorageError"
  /** A complete backup (a manifest) already exists at the location. */
  | "BackupExists"
  /** No manifest at the location: not a backup, or an incomplete one. */
  | "ManifestNotFound"
  /** The manifest is not one this version understands. */
  | "InvalidManifest"
  /** An object listed in the manifest (or a dump file) is missing. */
  | "ObjectNotFound"
  /** A stored object's SHA-256 or size differs from the manifest's. */
  | "ChecksumMismatch"
  /** The MySQL server could not be reached. */
  | "DatabaseUnreachable"
  /** MySQL refused the login or a privilege the operation needs. */
  | "DatabaseAccessDenied"
  /** A requested database does not exist on the server (or in the backup). */
  | "DatabaseNotFound"
  /** The connection to MySQL broke mid-operation (server down, killed, network). */
  | "ConnectionLost"
  /** A table changed its definition while it was being dumped. */
  | "SchemaChanged"
  /** The global read lock could not be taken within the lock wait timeout. */
  | "LockTimeout"
  /** A row is too large to be formatted by the server (max_allowed_packet). */
  | "RowTooLarge"
  /** A statement of the backup failed while it was applied. */
  | "StatementFailed"
  /** Any other MySQL error. */
  | "DatabaseError"
  /** The operation was cancelled through its AbortSignal. */
  | "Aborted"
  /** A binlog stream skipped a transaction: the archive would have a hole. */
  | "GtidGap"
  /** A binlog stream sent a transaction that is archived already (a diverged server). */
  | "GtidDuplicate"
  /** The server cannot stream its binary log from the archive's position (binlog off, purged, not MariaDB). */
  | "BinlogUnavailable"
  /**
   * The archive holds transactions the server it must stream from (the primary now) does not have: a
   * failover lost them after they were archived. The archive and the server's history part there.
   */
  | "ArchiveDiverged"
  /** A binlog stream broke the format (a checksum, a transaction without its end). */
  | "InvalidBinlog"
  /** A binlog archive's index.json cannot be read. */
  | "InvalidArchiveIndex"
  /** The server a binlog stream follows is not the primary any more (a switchover): the stream moves to the new one. */
  | "PrimaryChanged"
  /** A point-in-time replay needs a transaction the binlog archive does not hold (it starts after the backup, or has a hole). */
  | "ArchiveGap"
  /** The recovery point is past what the binlog archive holds so far. */
  | "PointNotArchived"
  /** Point-in-time restore: no Completed backup the archive covers was taken before the point. */
  | "NoBackupBeforePoint"
  /** Point-in-time restore: the point is later than now. */
  | "PointInFuture"
  /** A transaction of a point-in-time replay failed on the target server. */
  | "ReplayFailed"
  /** Point-in-time restore of some databases only: the replay holds a statement logged without a default database, which it cannot attribute. */
  | "UnattributedStatement";

export interface BackupErrorOptions {
  /**
   * Whether running the same operation again, unchanged, may succeed (a
   * network blip, a server restart). Defaults to false.
   */
  retryable?: boolean;
  cause?: unknown;
}

/** The one error type the engine, the restore and the storage layer throw. */
export class BackupError extends ReconcileError {
  override name = "BackupError";
  declare readonly reason: BackupFailureReason;
  readonly retryable: boolean;

  constructor(reason: BackupFailureReason, message: string, options: BackupErrorOptions = {}) {
    super(reason, message, { cause: options.cause });
    this.retryable = options.retryable ?? false;
  }
}

export function isBackupError(err: unknown): err is BackupError {
  return err instanceof BackupError;
}
