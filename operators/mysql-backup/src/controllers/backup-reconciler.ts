// MySQLBackup: a one-shot operation (operation-reconciler.ts has the
// lifecycle it shares with MySQLRestore). A run dumps the instance's databases
// into its S3 folder (engine/). An interrupted run's partial upload is
// removed — also when the MySQLBackup is deleted while a manager that is gone
// left it Running, so every backup holds a finalizer until its run ends;
// deletionPolicy Delete keeps it after that, to delete the folder the backup
// completed when the MySQLBackup is deleted.
import type { ReconcileContext } from "@stateward/core";
import type { MySQLInstance } from "@stateward/mysql";
import { MySQLBackupKind, type MySQLBackup } from "../api.ts";
import { runBackup } from "../engine/index.ts";
import { deleteBackup, describeLocation, removePartialBackup } from "../storage/index.ts";
import { engineConnection } from "./connection.ts";
import { describeFailure, stopReason } from "./failures.ts";
import { RunMetrics } from "./metrics.ts";
import { OperationReconciler, type PreparedRun } from "./operation-reconciler.ts";
import type { OperationDeps } from "./operation.ts";
import { backupFolder, resolveS3 } from "./s3-settings.ts";

export const BACKUP_FINALIZER = "stateward.io/delete-stored-backup";

export type BackupReconcilerDeps = OperationDeps;

/** Where a completed backup is stored: status.storage, recorded when it completed, else (a release that did not record it) spec.storage. */
export function completedStorage(backup: MySQLBackup): NonNullable<NonNullable<MySQLBackup["status"]>["storage"]> {
  const s3 = backup.spec.storage.s3;
  return backup.status?.storage ?? {
    bucket: s3.bucket,
    prefix: backupFolder(s3.prefix, backup.metadata.namespace ?? "", backup.metadata.name ?? ""),
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: s3.forcePathStyle,
  };
}

/** "s3://<bucket>/<prefix>/ at <endpoint>", for messages. */
export function describeStorage(stored: { bucket: string; prefix: string; endpoint?: string }): string {
  return `${describeLocation(stored.bucket, stored.prefix)}/${stored.endpoint ? ` at ${stored.endpoint}` : ""}`;
}

/** Deletion failures that retrying will not fix: the finalizer is released with a Warning instead. */
const permanentDeleteFailures = new Set(["SecretNotFound", "SecretKeyMissing", "SecretValueNotText", "StorageAccessDenied", "BucketNotFound"]);

export class BackupReconciler extends OperationReconciler<MySQLBackup> {
  protected readonly noun = "backup";
  protected readonly resource = MySQLBackupKind.resource;
  protected readonly finalizer = BACKUP_FINALIZER;
  protected readonly retryAdvice = "Create a new MySQLBackup to retry.";
  protected readonly metrics = new RunMetrics(this.d.metrics, "mysqlbackup", "uncompressedBytes");

  /**
   * deletionPolicy Delete: always (the folder goes with the MySQLBackup). Retain: until the run has ended — a
   * run whose manager died leaves a partial upload that only a finalizer lets the next manager remove when the
   * MySQLBackup is deleted before it was marked Interrupted; a finished Retain backup has nothing to clean up.
   */
  protected holdsFinalizer(backup: MySQLBackup): boolean {
    if ((backup.spec.deletionPolicy ?? "Retain") === "Delete") return true;
    const phase = backup.status?.phase;
    return phase !== "Completed" && phase !== "Failed";
  }

  protected async prepare(backup: MySQLBackup, instance: MySQLInstance, _key: string, ctx: ReconcileContext): Promise<PreparedRun> {
    const ns = backup.metadata.namespace ?? "";
    const settings = await this.d.connector.connectionSettings(instance);
    const s3 = await resolveS3(ns, backup.spec.storage.s3, this.d.secrets);
    const prefix = backupFolder(backup.spec.storage.s3.prefix, ns, backup.metadata.name ?? "");
    const location = `s3://${s3.bucket}/${prefix}/`;
    return {
      status: { location },
      message: `Backing up to ${location}`,
      started: `Backup of MySQLInstance ${instance.metadata.name} to ${location} started`,
      run: async (signal) => {
        const result = await runBackup({
          source: await engineConnection(settings),
          storage: { ...s3, prefix },
          databases: backup.spec.databases,
          compression: backup.spec.compression ?? "gzip",
          signal,
          logger: ctx.log,
        });
        const pos = result.position;
        return {
          status: {
            durationSeconds: Math.round(result.durations.totalMs / 1000),
            location: result.location.url,
            storage: { bucket: result.location.bucket, prefix: result.location.prefix, ...(s3.endpoint ? { endpoint: s3.endpoint } : {}), region: s3.region, forcePathStyle: s3.forcePathStyle },
            serverVersion: result.server.version,
            objects: result.objects,
            compressedBytes: result.size,
            uncompressedBytes: result.uncompressedSize,
            // A restore from this backup refuses a manifest that changed since.
            manifestSha256: result.manifestSha256,
            // What a point-in-time restore compares its point with to choose a backup.
            snapshotTime: result.manifest.createdAt,
            ...(pos ? { position: pos } : {}),
          },
          message: `Backup completed: ${result.objects} objects, ${result.size} bytes at ${result.location.url}`,
          event: `Backup completed in ${Math.round(result.durations.totalMs / 1000)} s: ${result.objects} objects, ${result.size} bytes at ${result.location.url}`,
          warnings: result.warnings.map((message) => ({ reason: "BackupWarning", message })),
        };
      },
      failed: (err, signal) => {
        const f = describeFailure(err, signal.aborted ? stopReason(signal, "the manager is shutting down or the backup was deleted") : undefined);
        return {
          reason: f.reason,
          message: `Backup failed: ${f.message}. Nothing was reported complete; create a new MySQLBackup to retry.`,
          event: `Backup failed: ${f.message}`,
        };
      },
    };
  }

  protected async finalize(backup: MySQLBackup, wasRunning: boolean, ctx: ReconcileContext): Promise<void> {
    if (!wasRunning && backup.status?.phase === "Running") {
      // Left Running by a manager that is gone, and deleted before this one marked it Interrupted: what that
      // run stored goes, as for a backup deleted while it runs here (an unfinished backup is not one to keep).
      const cleaned = await this.cleanUpInterrupted(backup, ctx);
      await this.d.events.record(backup, "Warning", "Deleted", `The MySQLBackup was deleted while a manager that is gone was running it. ${cleaned}`);
      return;
    }
    if ((backup.spec.deletionPolicy ?? "Retain") === "Delete") await this.deleteStored(backup, ctx);
  }

  /**
   * deletionPolicy Delete: removes the folder this backup completed, at the
   * location recorded when it completed (status.storage) — never a folder it
   * did not write (a run that failed with BackupExists points at another
   * backup's). When the objects cannot be deleted for a reason retrying will
   * not fix (the credentials Secret is gone, as namespace deletion removes it
   * first; access denied; no bucket), the finalizer is released anyway with
   * a Warning naming what was left, so the deletion (and the namespace's)
   * never hangs. A passing failure (S3 unreachable) is retried with backoff.
   */
  private async deleteStored(backup: MySQLBackup, ctx: ReconcileContext): Promise<void> {
    const ns = backup.metadata.namespace ?? "";
    const name = backup.metadata.name ?? "";
    if (backup.status?.phase !== "Completed") return;
    const stored = completedStorage(backup);
    const where = describeStorage(stored);
    try {
      const s3 = await resolveS3(ns, backup.spec.storage.s3, this.d.secrets);
      const deleted = await deleteBackup({
        ...s3,
        bucket: stored.bucket,
        prefix: stored.prefix,
        endpoint: stored.endpoint,
        region: stored.region ?? s3.region,
        forcePathStyle: stored.forcePathStyle ?? s3.forcePathStyle,
      });
      ctx.log.info("stored backup deleted", { location: where, objects: deleted.deletedObjects, abortedUploads: deleted.abortedUploads });
      await this.d.events.record(backup, "Normal", "StoredObjectsDeleted", `Deleted the stored backup at ${where} (${deleted.deletedObjects} objects)`);
    } catch (err) {
      const f = describeFailure(err);
      if (!permanentDeleteFailures.has(f.reason)) throw err;
      const message = `Could not delete the stored backup of MySQLBackup ${ns}/${name} at ${where}: ${f.message}. Its objects were left in the bucket; delete them there if they are not wanted.`;
      ctx.log.warn("stored backup left behind", { location: where, reason: f.reason, message: f.message });
      // In a namespace being deleted no Event can be created any more; it then goes on the Namespace (Events in "default").
      if (!(await this.d.events.record(backup, "Warning", "StoredBackupLeftBehind", message))) {
        await this.d.events.record({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } }, "Warning", "StoredBackupLeftBehind", message);
      }
    }
  }

  /**
   * An interrupted run's partial upload is removed: it has no manifest, but it takes space. Only its own
   * folder's objects and uploads (removePartialBackup): not those of a backup whose name begins with this
   * one's, and not a complete backup the folder holds.
   */
  protected async cleanUpInterrupted(backup: MySQLBackup, ctx: ReconcileContext): Promise<string> {
    const ns = backup.metadata.namespace ?? "";
    const name = backup.metadata.name ?? "";
    ctx.log.info("removing the partial upload of an interrupted backup", { startedBy: backup.status?.startedBy });
    const folder = backupFolder(backup.spec.storage.s3.prefix, ns, name);
    try {
      const s3 = await resolveS3(ns, backup.spec.storage.s3, this.d.secrets);
      const removed = await removePartialBackup({ ...s3, prefix: folder });
      if (removed === undefined) {
        return "Its folder holds a complete backup (a manifest.json: an earlier backup of this name, or this one's, written just before its manager stopped); nothing in it was deleted.";
      }
      return `Its partial upload was removed (${removed.deletedObjects} objects deleted, ${removed.abortedUploads} incomplete multipart uploads aborted).`;
    } catch (err) {
      const f = describeFailure(err);
      ctx.log.warn("could not clean up an interrupted backup", { err: f.message });
      // Whether the folder holds a manifest is not known here: the cleanup may have failed before looking.
      return `What it stored in s3://${backup.spec.storage.s3.bucket}/${folder}/ could not be looked at or removed (${f.message}); the next backup of this name clears a partial upload there, or delete it by hand.`;
    }
  }
}
