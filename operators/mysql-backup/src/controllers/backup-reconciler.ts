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
import {
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
import { describeFailure } from "./failures.ts";
import { now, recordPending, type OperationDeps } from "./operation.ts";
import { writeRunStatus } from "./run-status.ts";
import { backupFolder, resolveS3 } from "./s3-settings.ts";

export const BACKUP_FINALIZER = "stateward.io/delete-stored-backup";
const RT = MySQLBackupKind.resource;

export type BackupReconcilerDeps = OperationDeps;


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
      if ((backup.spec.deletionPolicy ?? "Retain") === "Delete" && backup.status?.location) {
        const s3 = await resolveS3(ns, backup.spec.storage.s3, this.d.secrets);
        const prefix = backupFolder(backup.spec.storage.s3.prefix, ns, req.name);
        const deleted = await deleteBackup({ ...s3, prefix });
        ctx.log.info("stored backup deleted", { objects: deleted.deletedObjects, abortedUploads: deleted.abortedUploads });
        await this.d.events.record(backup, "Normal", "StoredObjectsDeleted", `Deleted the stored backup at ${backup.status.location}`);
      }
      await removeFinalizer(this.d.client, RT, backup, BACKUP_FINALIZER);
      return undefined;
    }

    const phase = backup.status?.phase;
    if (phase === "Completed" || phase === "Failed") return undefined;
    if (phase === "Running") {
      if (this.d.tasks.isRunning(key)) return undefined;
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
          const f = describeFailure(err, signal.aborted ? "the manager is shutting down or the backup was deleted" : undefined);
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


  private async markInterrupted(backup: MySQLBackup, ctx: ReconcileContext): Promise<void> {
    const ns = backup.metadata.namespace ?? "";
    const name = backup.metadata.name ?? "";
    let cleaned: string;
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
