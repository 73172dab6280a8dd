// MySQLRestore with spec.pointInTime: what is decided before the run starts
// (restore/point-in-time.ts does the run). Everything that can be known
// without downloading is checked here, so a restore that cannot succeed
// never becomes Running:
//
//   - the point is not later than now (PointInFuture, Failed: waiting for the
//     future is not what a restore is for);
//   - the archive exists and its index is readable;
//   - a backup precedes the point and is covered by the archive
//     (NoBackupBeforePoint, Failed: no backup can be taken in the past);
//   - the archive holds everything from the backup to the point (planReplay:
//     ArchiveGap, Failed; PointNotArchived, see below).
//
// PointNotArchived: the archive uploads a file at most
// rotation.maxFileAgeSeconds after its first transaction, so a point a few
// seconds old is usually not archived yet. Failing would make "restore to
// 30 s ago" fail for no fault; waiting forever would hide a stopped archive.
// The restore waits (Pending, polled every few seconds: no watch tells when
// the archive moved) until the point is maxFileAgeSeconds plus a margin old,
// and then fails with what the archive has reached. A time after an idle
// server's last write is reached once the archive records itself current
// after it (index.json currentAt, archive-index.ts).
import { statfs } from "node:fs/promises";
import { tmpdir } from "node:os";
import { messageOf, quantityValue, type ReconcileContext } from "@stateward/core";
import type { MySQLInstance } from "@stateward/mysql";
import { MySQLBackupKind, MySQLBinlogArchiveKind, type MySQLBackup, type MySQLBinlogArchive, type MySQLRestore } from "../api.ts";
import type { ArchiveIndex } from "../binlog/archive-index.ts";
import { planReplay, type RecoveryPoint } from "../binlog/replay.ts";
import { isBackupError } from "../errors.ts";
import { archiveCovers, chooseBackup, describePoint, loadArchiveIndex, restoreToPoint, snapshotBefore, wholeSecond, type BackupCandidate } from "../restore/point-in-time.ts";
import { BackupStore } from "../storage/s3.ts";
import { engineConnection } from "./connection.ts";
import { NotReady, Refused, type PreparedRun } from "./operation-reconciler.ts";
import type { OperationDeps } from "./operation.ts";
import { restoreFailed } from "./failures.ts";
import { backupSource, completedBackup } from "./restore-source.ts";
import { backupFolder, resolveS3 } from "./s3-settings.ts";

type PointInTimeSpec = NonNullable<MySQLRestore["spec"]["pointInTime"]>;

/** Beyond the archive's rotation age, how long a recent point may still be waited for. */
const ARCHIVE_CATCH_UP_MARGIN_MS = 60_000;
/** How often a restore waiting for its archive looks again. */
const ARCHIVE_POLL_MS = 5_000;
/** The archive's default rotation.maxFileAgeSeconds (api.ts). */
const DEFAULT_MAX_FILE_AGE_SECONDS = 60;

function recoveryPoint(spec: PointInTimeSpec): RecoveryPoint {
  if (spec.time !== undefined) return { time: wholeSecond(new Date(spec.time)) };
  return { gtid: spec.gtid ?? "" };
}

/** A Completed backup with a GTID position, as chooseBackup takes it. */
function candidate(backup: MySQLBackup): BackupCandidate | undefined {
  const position = backup.status?.position?.gtid;
  if (backup.status?.phase !== "Completed" || position === undefined) return undefined;
  // A backup that did not record its snapshot time: its completion, never earlier than the snapshot.
  const at = backup.status.snapshotTime ?? backup.status.completionTime;
  if (at === undefined) return undefined;
  return { name: backup.metadata.name ?? "", position, snapshotTime: new Date(at) };
}

/**
 * The backup to start from: spec.source.backupRef, checked, or the newest fitting one. Only a backup of
 * the MySQLInstance the archive streams from: another server's GTID position can look covered by the
 * archive (GTID sequences are per domain, not per server), and its data is not what the archived
 * transactions apply to — restoring it would swap another server's tables into the target.
 */
function pickBackup(d: OperationDeps, restore: MySQLRestore, archive: MySQLBinlogArchive, index: ArchiveIndex, point: RecoveryPoint, ns: string): BackupCandidate {
  const ref = restore.spec.source?.backupRef;
  const archived = archive.spec.instanceRef.name;
  if (!ref) {
    const all = d.cache
      .list<MySQLBackup>(MySQLBackupKind.resource, { namespace: ns })
      .filter((b) => b.spec.instanceRef.name === archived)
      .flatMap((b) => candidate(b) ?? []);
    return chooseBackup(all, index, point, `${ns} of MySQLInstance ${archived}`);
  }
  const named = completedBackup(d, ns, ref.name);
  if (named.spec.instanceRef.name !== archived) {
    throw new Refused(
      "NoBackupBeforePoint",
      `MySQLBackup ${ref.name} is of MySQLInstance ${named.spec.instanceRef.name}, and MySQLBinlogArchive ${archive.metadata.name} archives MySQLInstance ${archived}: the archived transactions apply only to a backup of the server they were written on. Name a backup of ${archived}, or none`,
    );
  }
  const chosen = candidate(named);
  if (!chosen) throw new Refused("NoBackupBeforePoint", `MySQLBackup ${ref.name} recorded no GTID position (binary log off when it was taken): no transaction can be replayed after it`);
  if (!snapshotBefore(chosen, point)) {
    throw new Refused("NoBackupBeforePoint", `MySQLBackup ${ref.name} was taken at ${chosen.snapshotTime.toISOString()} (GTID position "${chosen.position}"), after ${describePoint(point)}; name an earlier backup or none`);
  }
  if (!archiveCovers(index.startPosition, chosen.position)) {
    throw new Refused(
      "NoBackupBeforePoint",
      `MySQLBackup ${ref.name} (GTID position "${chosen.position}") is older than the binlog archive, which begins after "${index.startPosition}": the transactions between them are in no archive. Name a backup taken after the archive started`,
    );
  }
  return chosen;
}

/**
 * The bytes a restore may download into the manager's scratch space (os.tmpdir(), where
 * restore/point-in-time.ts puts the binlog files it replays): what the filesystem has free, and at
 * most STATEWARD_SCRATCH_LIMIT (a quantity: the chart's emptyDir sizeLimit, which the filesystem
 * does not show — a pod that writes past it is evicted, and its successor would start the same
 * download again).
 */
export async function scratchRoom(env: NodeJS.ProcessEnv = process.env): Promise<{ bytes: number; bound: string }> {
  const fs = await statfs(tmpdir());
  const free = fs.bavail * fs.bsize;
  const configured = env.STATEWARD_SCRATCH_LIMIT;
  const limit = configured === undefined || configured === "" ? Number.NaN : quantityValue(configured);
  if (Number.isFinite(limit) && limit < free) return { bytes: limit, bound: `its scratch space limit (STATEWARD_SCRATCH_LIMIT ${configured}: the chart's scratchSizeLimit)` };
  return { bytes: free, bound: `the free space of ${tmpdir()}` };
}

/** Refuses, before anything is downloaded, a plan whose binlog files would not fit in the scratch space. */
async function refuseBeyondScratch(bytes: number, files: number): Promise<void> {
  const room = await scratchRoom();
  if (bytes <= room.bytes) return;
  const size = (n: number) => (n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MiB` : `${Math.ceil(n / 1024)} KiB`);
  throw new Refused(
    "ScratchSpaceTooSmall",
    `the replay needs ${size(bytes)} of archived binlog (${files} files), downloaded and verified in the manager's scratch space before the target is touched, ` +
      `which is more than ${room.bound} allows, ${size(room.bytes)}. Raise the chart's scratchSizeLimit, or restore from a backup closer to the point (fewer files to replay)`,
  );
}

/** Refused or waited for: what planReplay and the index read throw when the archive does not reach the point. */
export function notArchived(err: unknown, archive: MySQLBinlogArchive, point: RecoveryPoint, created: Date, index: ArchiveIndex | undefined): Error {
  const maxAgeMs = (archive.spec.rotation?.maxFileAgeSeconds ?? DEFAULT_MAX_FILE_AGE_SECONDS) * 1000 + ARCHIVE_CATCH_UP_MARGIN_MS;
  const since = "time" in point ? point.time : created;
  const reached = index?.files.at(-1);
  const where = reached ? `it ends at GTID ${reached.lastGtid}, written ${reached.lastEventTime}` : "it holds no transaction yet";
  const message = messageOf(err);
  if (Date.now() - since.getTime() < maxAgeMs) {
    return new NotReady("PointNotArchived", `Waiting for MySQLBinlogArchive ${archive.metadata.name} to archive ${describePoint(point)} (${where}): ${message}`, ARCHIVE_POLL_MS);
  }
  return new Refused(
    "PointNotArchived",
    `MySQLBinlogArchive ${archive.metadata.name} has not archived ${describePoint(point)} (${where}), longer than its rotation lets a transaction wait: ${message}. ` +
      "Check the archive's status (Ready, lagSeconds); if the server wrote nothing after that transaction, restore to its GTID",
  );
}

/**
 * Whether a restore of `restored` (spec.databases) covers every database of a
 * backup of `backedUp` (its spec.databases): no list restores all of it; a
 * list covers a backup of listed databases that it includes. A backup of
 * every database (no list) holds what existed when it ran, which only its
 * manifest tells: a list is then taken as a part.
 */
export function coversBackup(restored: readonly string[] | undefined, backedUp: readonly string[] | undefined): boolean {
  if (!restored) return true;
  return backedUp !== undefined && backedUp.every((db) => restored.includes(db));
}

/** Reads and decides everything before the run; the run downloads, verifies, restores and replays. */
export async function preparePointInTime(d: OperationDeps, restore: MySQLRestore, spec: PointInTimeSpec, instance: MySQLInstance, runId: string, ctx: ReconcileContext): Promise<PreparedRun> {
  const ns = restore.metadata.namespace ?? "";
  if (restore.spec.source?.s3) throw new Refused("InvalidSource", "spec.source.s3 cannot be combined with spec.pointInTime: a point-in-time restore starts from a MySQLBackup");
  const point = recoveryPoint(spec);
  if ("time" in point && point.time.getTime() > Date.now()) {
    throw new Refused("PointInFuture", `spec.pointInTime.time ${describePoint(point)} is later than now; a restore brings back a past state. Give a time in the past`);
  }
  const archive = d.cache.get<MySQLBinlogArchive>(MySQLBinlogArchiveKind.resource, ns, spec.archiveRef.name);
  if (!archive) throw new NotReady("ArchiveNotFound", `MySQLBinlogArchive ${spec.archiveRef.name} not found in namespace ${ns}`, 30_000);
  const s3 = await resolveS3(ns, archive.spec.storage.s3, d.secrets);
  const store = new BackupStore({ ...s3, prefix: backupFolder(archive.spec.storage.s3.prefix, ns, spec.archiveRef.name) });
  const created = new Date(restore.metadata.creationTimestamp ?? Date.now());
  let index: ArchiveIndex | undefined;
  let backup: BackupCandidate;
  let files;
  try {
    index = await loadArchiveIndex(store);
    backup = pickBackup(d, restore, archive, index, point, ns);
    const plan = planReplay(index, backup.position, point);
    files = plan.files;
    await refuseBeyondScratch(plan.bytes, files.length);
  } catch (err) {
    store.destroy();
    if (isBackupError(err) && err.reason === "PointNotArchived") throw notArchived(err, archive, point, created, index);
    if (isBackupError(err) && (err.reason === "NoBackupBeforePoint" || err.reason === "ArchiveGap")) throw new Refused(err.reason, err.message);
    throw err;
  }
  const backupResource = completedBackup(d, ns, backup.name);
  const allDatabases = coversBackup(restore.spec.databases, backupResource.spec.databases);
  const { source, description } = await backupSource(d, backupResource, ns).catch((err: unknown) => {
    store.destroy();
    throw err;
  });
  const settings = await d.connector.connectionSettings(instance);
  const mode = restore.spec.mode ?? "Staged";
  const pointText = describePoint(point);
  const chosen = { backup: backup.name, backupPosition: backup.position, point: pointText };
  return {
    status: { source: description, mode, pointInTime: chosen },
    message: `Restoring MySQLBackup ${backup.name} into MySQLInstance ${instance.metadata.name}, then replaying ${files.length} archived binlog files up to ${pointText}`,
    started: `Point-in-time restore to ${pointText} started: MySQLBackup ${backup.name} (GTID position "${backup.position}"), then ${files.length} binlog files of MySQLBinlogArchive ${spec.archiveRef.name}`,
    run: async (signal) => {
      try {
        const result = await restoreToPoint({
          target: await engineConnection(settings),
          backup: { source, position: backup.position, name: backup.name },
          archive: { store, files },
          until: point,
          ...(restore.spec.databases ? { databases: restore.spec.databases } : {}),
          allDatabases,
          mode,
          runId,
          signal,
          logger: ctx.log,
        });
        const seconds = Math.round(result.restore.durations.totalMs / 1000);
        const last = result.lastGtid ? `, the last ${result.lastGtid}${result.lastEventTime ? ` (${result.lastEventTime})` : ""}` : "";
        return {
          status: {
            durationSeconds: seconds,
            objects: result.restore.objects,
            bytes: result.restore.bytes,
            pointInTime: {
              ...chosen,
              binlogFiles: result.binlogFiles,
              transactions: result.transactions,
              ...(result.lastGtid ? { lastReplayedGtid: result.lastGtid } : {}),
              ...(result.lastEventTime ? { lastReplayedTime: result.lastEventTime } : {}),
            },
          },
          message: `Restored MySQLBackup ${backup.name} and replayed ${result.transactions} transactions up to ${pointText}${last}`,
          event: `Point-in-time restore to ${pointText} completed: MySQLBackup ${backup.name}, then ${result.transactions} transactions from ${result.binlogFiles} binlog files${last}`,
        };
      } finally {
        store.destroy();
      }
    },
    failed: (err, signal, deleted) => restoreFailed(err, signal, deleted, mode),
  };
}
