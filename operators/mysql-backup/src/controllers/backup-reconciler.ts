// MySQLBackup: a one-shot operation. The reconcile decides and records; the
// dump itself runs as a background task (minutes long, it must not hold a
// controller worker), bounded per manager by the operation slots.
//
//   (new) --slot free--> Running --engine done--> Completed
//                                 \--engine failed / interrupted--> Failed
//
// A backup found Running without a task in this process was interrupted (the
// manager restarted or crashed): its partial upload is removed and it is
// marked Failed, never left Running forever and never reported Completed.
// Started by another manager (status.startedBy), it may still be uploading —
// a leader that lost its Lease a moment ago — so this waits out the
// leadership fence first: nothing is deleted while it is still being written.
// A manager that loses leadership aborts its backups and writes nothing more:
// the new leader owns the object from then on.
import {
  LeadershipLostError,
  addFinalizer,
  isBeingDeleted,
  removeFinalizer,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
} from "@stateward/core";
import { MySQLInstanceKind, type MySQLInstance } from "@stateward/mysql";
import { MySQLBackupKind, type MySQLBackup } from "../api.ts";
import { runBackup } from "../engine/index.ts";
import { BucketClient, deleteBackup } from "../storage/index.ts";
import { engineConnection } from "./connection.ts";
import { describeFailure, stopReason } from "./failures.ts";
import { now, recordPending, takeOverWaitMs, type OperationDeps } from "./operation.ts";
import { writeRunStatus } from "./run-status.ts";
import { backupFolder, resolveS3 } from "./s3-settings.ts";

export const BACKUP_FINALIZER = "stateward.io/delete-stored-backup";
const RT = MySQLBackupKind.resource;

export type BackupReconcilerDeps = OperationDeps;

/** Deletion failures that retrying will not fix: the finalizer is released with a Warning instead. */
const permanentDeleteFailures = new Set(["SecretNotFound", "SecretKeyMissing", "StorageAccessDenied", "BucketNotFound"]);


export class BackupReconciler implements Reconciler {
  private readonly d: BackupReconcilerDeps;

  constructor(deps: BackupReconcilerDeps) {
    this.d = deps;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const ns = req.namespace ?? "";
    const backup = this.d.cache.get<MySQLBackup>(RT, ns, req.name);
    if (!backup) return undefined;
    const key = `backup/${ns}/${req.name}`;

    if (isBeingDeleted(backup)) {
      await this.d.tasks.cancel(key);
      if ((backup.spec.deletionPolicy ?? "Retain") === "Delete") await this.deleteStored(backup, ctx);
      await removeFinalizer(this.d.client, RT, backup, BACKUP_FINALIZER);
      return undefined;
    }

    const phase = backup.status?.phase;
    if (phase === "Completed" || phase === "Failed") return undefined;
    if (phase === "Running") {
      if (this.d.tasks.isRunning(key)) return undefined;
      const fenceMs = takeOverWaitMs(this.d, backup.status);
      if (fenceMs > 0) {
        ctx.log.info("backup left Running by another manager; waiting until that manager has certainly stopped", {
          startedBy: backup.status?.startedBy, waitMs: fenceMs,
        });
        return { requeueAfter: fenceMs };
      }
      await this.markInterrupted(backup, ctx);
      return undefined;
    }

    let current: MySQLBackup = backup;
    if ((backup.spec.deletionPolicy ?? "Retain") === "Delete") current = await addFinalizer(this.d.client, RT, backup, BACKUP_FINALIZER);

    const instance = this.d.cache.get<MySQLInstance>(MySQLInstanceKind.resource, ns, backup.spec.instanceRef.name);
    if (!instance) {
      await recordPending(this.d.client, RT, current, "InstanceNotFound", `MySQLInstance ${backup.spec.instanceRef.name} not found in namespace ${ns}`);
      return { requeueAfter: 30_000 };
    }
    if (!this.d.slots.tryAcquire(key)) {
      await recordPending(this.d.client, RT, current, "WaitingForSlot", `Waiting: ${this.d.slots.limit} backups and restores already run in this manager`);
      return { requeueAfter: 5_000 };
    }
    let started = false;
    try {
      // Secrets are read now, so a missing one is reported before anything starts.
      const settings = await this.d.connector.connectionSettings(instance);
      const s3 = await resolveS3(ns, backup.spec.storage.s3, this.d.secrets);
      const prefix = backupFolder(backup.spec.storage.s3.prefix, ns, req.name);
      const location = `s3://${s3.bucket}/${prefix}/`;
      await writeRunStatus(this.d.client, RT, ns, req.name, { phase: "Running", startTime: now(), startedBy: this.d.identity, location }, {
        status: "False", reason: "Running", message: `Backing up to ${location}`,
      });
      await this.d.events.record(current, "Normal", "Started", `Backup of MySQLInstance ${instance.metadata.name} to ${location} started`);
      started = this.d.tasks.start(key, `backup ${ns}/${req.name}`, async (signal) => {
        try {
          const result = await runBackup({
            source: await engineConnection(settings),
            storage: { ...s3, prefix },
            databases: backup.spec.databases,
            compression: backup.spec.compression ?? "gzip",
            signal,
            logger: ctx.log,
          });
          const pos = result.position;
          await writeRunStatus(this.d.client, RT, ns, req.name, {
            phase: "Completed",
            completionTime: now(),
            durationSeconds: Math.round(result.durations.totalMs / 1000),
            location: result.location.url,
            storage: { bucket: result.location.bucket, prefix: result.location.prefix, ...(s3.endpoint ? { endpoint: s3.endpoint } : {}), region: s3.region, forcePathStyle: s3.forcePathStyle },
            serverVersion: result.server.version,
            objects: result.objects,
            compressedBytes: result.size,
            uncompressedBytes: result.uncompressedSize,
            // A restore from this backup refuses a manifest that changed since.
            manifestSha256: result.manifestSha256,
            ...(pos ? { position: pos } : {}),
          }, { status: "True", reason: "Completed", message: `Backup completed: ${result.objects} objects, ${result.size} bytes at ${result.location.url}` });
          await this.d.events.record(current, "Normal", "Completed", `Backup completed in ${Math.round(result.durations.totalMs / 1000)} s: ${result.objects} objects, ${result.size} bytes at ${result.location.url}`);
          for (const warning of result.warnings) await this.d.events.record(current, "Warning", "BackupWarning", warning);
        } catch (err) {
          if (signal.reason instanceof LeadershipLostError) {
            // Not the leader any more: the new leader marks the run Interrupted once this manager has certainly stopped.
            ctx.log.warn("backup stopped: this manager lost leadership", { backup: `${ns}/${req.name}` });
            return;
          }
          const f = describeFailure(err, signal.aborted ? stopReason(signal, "the manager is shutting down or the backup was deleted") : undefined);
          await writeRunStatus(this.d.client, RT, ns, req.name, { phase: "Failed", completionTime: now() }, {
            status: "False", reason: f.reason, message: `Backup failed: ${f.message}. Nothing was reported complete; create a new MySQLBackup to retry.`,
          });
          await this.d.events.record(current, "Warning", f.reason, `Backup failed: ${f.message}`);
        } finally {
          this.d.slots.release(key);
        }
      }, (err) => ctx.log.error("backup task failed unexpectedly", { err }));
      return undefined;
    } catch (err) {
      const f = describeFailure(err);
      await recordPending(this.d.client, RT, current, f.reason, f.message);
      await this.d.events.record(current, "Warning", f.reason, f.message);
      // The original error is not attached as `cause`: driver errors can carry SQL text; the message is the cleaned description.
      // eslint-disable-next-line preserve-caught-error
      throw new Error(f.message);
    } finally {
      if (!started) this.d.slots.release(key);
    }
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
    const status = backup.status;
    if (status?.phase !== "Completed") return;
    // Completed by a version that did not record status.storage: spec.storage is where it wrote.
    const stored = status.storage ?? {
      bucket: backup.spec.storage.s3.bucket,
      prefix: backupFolder(backup.spec.storage.s3.prefix, ns, name),
      endpoint: backup.spec.storage.s3.endpoint,
      region: backup.spec.storage.s3.region,
      forcePathStyle: backup.spec.storage.s3.forcePathStyle,
    };
    const where = `s3://${stored.bucket}/${stored.prefix}/${stored.endpoint ? ` at ${stored.endpoint}` : ""}`;
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

  private async markInterrupted(backup: MySQLBackup, ctx: ReconcileContext): Promise<void> {
    const ns = backup.metadata.namespace ?? "";
    const name = backup.metadata.name ?? "";
    let cleaned: string;
    ctx.log.info("removing the partial upload of an interrupted backup", { startedBy: backup.status?.startedBy });
    try {
      const s3 = await resolveS3(ns, backup.spec.storage.s3, this.d.secrets);
      const prefix = backupFolder(backup.spec.storage.s3.prefix, ns, name);
      const aborted = await new BucketClient(s3).abortIncompleteUploads(prefix);
      const deleted = await deleteBackup({ ...s3, prefix }).catch(() => undefined);
      cleaned = ` Its partial upload was removed (${deleted?.deletedObjects ?? 0} objects deleted, ${aborted + (deleted?.abortedUploads ?? 0)} incomplete multipart uploads aborted).`;
    } catch (err) {
      ctx.log.warn("could not clean up an interrupted backup", { err: describeFailure(err).message });
      cleaned = " Its partial upload could not be removed; it has no manifest, so it can never be restored by mistake.";
    }
    const by = backup.status?.startedBy ? ` (${backup.status.startedBy})` : "";
    const message = `The manager running this backup${by} stopped before it finished.${cleaned} Create a new MySQLBackup to retry.`;
    await writeRunStatus(this.d.client, RT, ns, name, { phase: "Failed", completionTime: now() }, { status: "False", reason: "Interrupted", message });
    await this.d.events.record(backup, "Warning", "Interrupted", message);
  }
}
