// Point-in-time restore: a full backup, then the archived binary log replayed
// onto it up to a time or a GTID. The order is what makes it safe: the
// archive's index is read, the backup chosen (chooseBackup) and the replay
// planned, every binlog file the plan needs downloaded to a private temporary
// directory and checked against the index (size and SHA-256) — and only then
// is the target touched, first by the ordinary restore (Staged by default:
// the target is swapped to the backup's state at once), then by the replay.
// A missing, corrupt or unplanned piece therefore fails with the target as it
// was. A replay that fails midway leaves the backup plus the transactions
// before the failing one: the error says up to which GTID.
import { createWriteStream } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { messageOf, type Logger } from "@stateward/core";
import { archiveIndexFileName, parseArchiveIndex, type ArchiveIndex, type ArchivedFile } from "../binlog/archive-index.ts";
import { parseGtid, parsePosition } from "../binlog/gtid.ts";
import { findUnattributed, replayBinlog, type RecoveryPoint } from "../binlog/replay.ts";
import { MySQLSession, type MySQLConnectionOptions } from "../engine/connection.ts";
import { BackupError } from "../errors.ts";
import { describeLocation, type BackupStore } from "../storage/s3.ts";
import { markTargetUntouched, noteTarget, unstopped } from "./backup-restore.ts";
import { runRestore, type RestoreMode, type RestoreResult, type RestoreSource } from "./restore.ts";
import { Sha256Stream } from "./verified-object.ts";

/** The index is small (a line per file); anything near this is not an index. */
const MAX_INDEX_BYTES = 64 * 1024 * 1024;

/** Reads and checks the archive's index.json. */
export async function loadArchiveIndex(store: BackupStore, signal?: AbortSignal): Promise<ArchiveIndex> {
  let bytes: Buffer;
  try {
    bytes = await store.bucket.getBytes(store.key(archiveIndexFileName), MAX_INDEX_BYTES, signal);
  } catch (err) {
    if (err instanceof BackupError && err.reason === "ObjectNotFound") {
      throw new BackupError("PointNotArchived", `the binlog archive at ${store.url} has no ${archiveIndexFileName} yet: it has archived nothing so far`, { retryable: true, cause: err });
    }
    throw err;
  }
  return parseArchiveIndex(bytes);
}

/** The point as the user wrote it, for messages and status. */
export function describePoint(point: RecoveryPoint): string {
  return "time" in point ? point.time.toISOString().replace(".000Z", "Z") : `GTID ${point.gtid}`;
}

/** A binlog records whole seconds: a point's fraction is cut off (documented on spec.pointInTime.time). */
export function wholeSecond(at: Date): Date {
  return new Date(Math.floor(at.getTime() / 1000) * 1000);
}

/** Whether every domain the archive starts at is, in `backup`, at or after the archive's start: the archive holds everything after the backup. */
export function archiveCovers(archiveStart: string, backupPosition: string): boolean {
  const backup = parsePosition(backupPosition);
  for (const start of parsePosition(archiveStart).values()) {
    const b = backup.get(start.domain);
    if (!b || b.seq < start.seq) return false;
  }
  return true;
}

/** A Completed backup a point-in-time restore could start from. */
export interface BackupCandidate {
  name: string;
  /** GTID position of its snapshot. */
  position: string;
  /** When its snapshot was taken (or, for a backup that did not record it, when it completed: never earlier than the snapshot). */
  snapshotTime: Date;
}

/**
 * Whether a backup's snapshot precedes the point. A time point covers every
 * transaction logged in its second, so a snapshot within that second is
 * before it too. A GTID point: the backup has not passed it in its domain.
 */
export function snapshotBefore(backup: BackupCandidate, point: RecoveryPoint): boolean {
  if ("time" in point) return backup.snapshotTime.getTime() < wholeSecond(point.time).getTime() + 1000;
  const g = parseGtid(point.gtid);
  const at = parsePosition(backup.position).get(g.domain);
  return (at?.seq ?? 0n) <= g.seq;
}

/**
 * The newest backup the archive covers whose snapshot precedes the point.
 * @throws BackupError NoBackupBeforePoint, saying why each backup was not taken.
 */
export function chooseBackup(backups: readonly BackupCandidate[], index: ArchiveIndex, point: RecoveryPoint, namespace: string): BackupCandidate {
  const covered = backups.filter((b) => archiveCovers(index.startPosition, b.position));
  const fitting = covered.filter((b) => snapshotBefore(b, point)).sort((a, b) => b.snapshotTime.getTime() - a.snapshotTime.getTime());
  const chosen = fitting[0];
  if (chosen) return chosen;
  const later = covered.length;
  const uncovered = backups.length - covered.length;
  throw new BackupError(
    "NoBackupBeforePoint",
    `no Completed MySQLBackup in namespace ${namespace} can start a restore to ${describePoint(point)}: of ${backups.length} with a GTID position, ` +
      `${later} ${later === 1 ? "was" : "were"} taken after the point and ${uncovered} ${uncovered === 1 ? "is" : "are"} older than the archive, which begins after GTID position "${index.startPosition}". ` +
      "Choose a later point, or a backup taken after the archive started and before the point",
  );
}

/** The files of a plan, downloaded into `dir` and checked against the index. Returns their paths, in order. */
export async function downloadArchivedFiles(store: BackupStore, files: readonly ArchivedFile[], dir: string, signal?: AbortSignal): Promise<string[]> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const paths: string[] = [];
  for (const f of files) {
    const path = join(dir, f.key);
    const key = store.key(f.key);
    const digest = new Sha256Stream();
    try {
      const body = await store.bucket.openRead(key, signal);
      await pipeline(body, digest, createWriteStream(path, { mode: 0o600 }), ...(signal ? [{ signal }] : []));
    } catch (err) {
      if (err instanceof BackupError && err.reason === "ObjectNotFound") {
        throw new BackupError("ObjectNotFound", `binlog file ${f.key} listed in the archive's index at ${store.url} is missing`, { cause: err });
      }
      throw store.bucket.fail(err, `download ${describeLocation(store.bucket.bucket, key)}`);
    }
    const sha256 = digest.hash.digest("hex");
    if (sha256 !== f.sha256 || digest.bytes !== f.size) {
      throw new BackupError(
        "ChecksumMismatch",
        `binlog file ${f.key} of the archive at ${store.url} is corrupt: ${digest.bytes} bytes with SHA-256 ${sha256}, but the archive's index says ${f.size} bytes with SHA-256 ${f.sha256}`,
      );
    }
    paths.push(path);
  }
  return paths;
}

export interface PointInTimeOptions {
  target: MySQLConnectionOptions;
  /** The full backup and the GTID position of its snapshot. */
  backup: { source: RestoreSource; position: string; name: string };
  /** The archive's folder and the files the plan needs (planReplay). */
  archive: { store: BackupStore; files: readonly ArchivedFile[] };
  until: RecoveryPoint;
  databases?: string[];
  /**
   * Whether the restore covers every database of the backup: statements the
   * archive logged without a default database are then replayed (the server
   * resolves their qualified names); otherwise a plan holding one is refused
   * (UnattributedStatement) before the target is touched.
   */
  allDatabases: boolean;
  mode: RestoreMode;
  /** Names the staging databases and the download directory. */
  runId: string;
  signal?: AbortSignal;
  logger?: Logger;
}

export interface PointInTimeResult {
  restore: RestoreResult;
  binlogFiles: number;
  transactions: number;
  lastGtid: string | null;
  lastEventTime: string | null;
}

/** The directory a run downloads into: its own (from the run id), removed afterwards. */
export function downloadDirectory(runId: string): string {
  return join(tmpdir(), `stateward-pitr-${runId.replace(/[^A-Za-z0-9_-]/g, "_")}`);
}

/** A replay that failed after the backup was restored: the message says what the target holds. */
export class ReplayFailed extends BackupError {
  constructor(message: string, cause: unknown) {
    super("ReplayFailed", message, { cause });
  }
}

/**
 * A replay limited to some of the backup's databases takes a statement by its
 * default database: one logged without any (`DROP TABLE shop.t` from a session
 * that never ran USE) it cannot attribute, and leaving it out would restore a
 * state that never existed. Such a plan is refused before the target is
 * touched, naming the first one.
 */
async function refuseUnattributed(paths: readonly string[], after: string, until: RecoveryPoint, databases: readonly string[]): Promise<void> {
  const found = await findUnattributed(paths, after, until).catch((err: unknown) => {
    throw markTargetUntouched(err instanceof BackupError ? err : new BackupError("InvalidBinlog", messageOf(err), { cause: err }));
  });
  if (!found) return;
  throw markTargetUntouched(
    new BackupError(
      "UnattributedStatement",
      `transaction ${found.gtid} (committed ${found.time}) is a ${found.kind} statement logged without a default database (run without USE, naming its tables as database.table): ` +
        `a replay limited to the databases ${databases.join(", ")} cannot tell which database it changes, and leaving it out would restore a state that never existed. ` +
        "Restore every database of the backup (omit spec.databases), or choose a point before that transaction",
    ),
  );
}

/** Downloads and verifies, restores the backup, replays up to the point; see the file comment. */
export async function restoreToPoint(options: PointInTimeOptions): Promise<PointInTimeResult> {
  const { archive, backup, until, signal, logger } = options;
  const dir = downloadDirectory(options.runId);
  // A run killed earlier may have left its directory: start clean.
  await rm(dir, { recursive: true, force: true });
  try {
    const paths = await downloadArchivedFiles(archive.store, archive.files, dir, signal).catch((err: unknown) => {
      throw markTargetUntouched(err instanceof BackupError ? err : new BackupError("StorageError", messageOf(err), { cause: err }));
    });
    logger?.info("binlog files downloaded and verified", { files: paths.length, archive: archive.store.url });
    if (!options.allDatabases) await refuseUnattributed(paths, backup.position, until, options.databases ?? []);
    const restore = await runRestore({
      target: options.target,
      source: backup.source,
      ...(options.databases ? { databases: options.databases } : {}),
      mode: options.mode,
      runId: options.runId,
      ...(signal ? { signal } : {}),
      ...(logger ? { logger } : {}),
    });
    let progress: { transactions: number; lastGtid: string | null } = { transactions: 0, lastGtid: null };
    // Statements go as their logged bytes, in whatever character set they were written: a binary session (replay.ts).
    const session = await MySQLSession.open(options.target, { charset: "binary" });
    try {
      const replayed = await replayBinlog(session, paths, {
        after: backup.position,
        until,
        // Only what was restored: a database the backup lacks is as the target has it, and replaying onto it would apply its transactions twice.
        databases: restore.databases,
        withoutDatabase: options.allDatabases ? "replay" : "skip",
        ...(signal ? { signal } : {}),
        ...(logger ? { logger } : {}),
        onProgress: (p) => (progress = p),
      });
      return { restore, binlogFiles: paths.length, ...replayed };
    } catch (err) {
      // The replay's own failures say up to which transaction the target holds the archive; anything else (a lost connection) is told here.
      const holds = err instanceof BackupError && err.reason === "ReplayFailed"
        ? ""
        : progress.lastGtid
          ? ` The target holds the backup plus the archived transactions up to ${progress.lastGtid} (${progress.transactions} applied).`
          : " The target holds the backup and none of the archived transactions.";
      const note = `${holds} The backup restored first was MySQLBackup ${backup.name} (GTID position "${backup.position}"); restore again once the cause is fixed`;
      // A stop (the MySQLRestore deleted) replaces the message, not what it says the target holds.
      throw noteTarget(new ReplayFailed(`${unstopped(messageOf(err))}.${note}`, err), note.trim());
    } finally {
      await session.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true }).catch((err: unknown) => logger?.warn("could not remove the binlog download directory", { dir, err: messageOf(err) }));
  }
}
