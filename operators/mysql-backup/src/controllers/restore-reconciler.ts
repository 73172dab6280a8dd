// MySQLRestore: like a backup, a one-shot operation run as a background task.
// The source is a Completed MySQLBackup (its location and storage settings)
// or an S3 location given directly: a backup folder or a single dump file.
import {
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
} from "@stateward/core";
import { MySQLInstanceKind, type MySQLInstance } from "@stateward/mysql";
import { MySQLBackupKind, MySQLRestoreKind, type MySQLBackup, type MySQLRestore } from "../api.ts";
import { locateRestoreSource, runRestore, type RestoreSource } from "../restore/index.ts";
import { engineConnection } from "./connection.ts";
import { describeFailure } from "./failures.ts";
import { now, recordPending, type OperationDeps } from "./operation.ts";
import { writeRunStatus } from "./run-status.ts";
import { backupFolder, resolveS3 } from "./s3-settings.ts";

const RT = MySQLRestoreKind.resource;

export type RestoreReconcilerDeps = OperationDeps;


class NotReady extends Error {
  readonly reason: string;
  constructor(reason: string, message: string) {
    super(message);
    this.reason = reason;
  }
}

export class RestoreReconciler implements Reconciler {
  private readonly d: RestoreReconcilerDeps;

  constructor(deps: RestoreReconcilerDeps) {
    this.d = deps;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const ns = req.namespace ?? "";
    const restore = this.d.cache.get<MySQLRestore>(RT, ns, req.name);
    if (!restore || restore.metadata.deletionTimestamp) {
      await this.d.tasks.cancel(`restore/${ns}/${req.name}`);
      return undefined;
    }
    const key = `restore/${ns}/${req.name}`;
    const phase = restore.status?.phase;
    if (phase === "Completed" || phase === "Failed") return undefined;
    if (phase === "Running") {
      if (this.d.tasks.isRunning(key)) return undefined;
      const message = `The manager running this restore${restore.status?.startedBy ? ` (${restore.status.startedBy})` : ""} stopped before it finished; the target may hold part of the data. Create a new MySQLRestore to restore again.`;
      await writeRunStatus(this.d.client, RT, ns, req.name, { phase: "Failed", completionTime: now() }, { status: "False", reason: "Interrupted", message });
      await this.d.events.record(restore, "Warning", "Interrupted", message);
      return undefined;
    }

    const instance = this.d.cache.get<MySQLInstance>(MySQLInstanceKind.resource, ns, restore.spec.instanceRef.name);
    if (!instance) {
      await recordPending(this.d.client, RT, restore, "InstanceNotFound", `MySQLInstance ${restore.spec.instanceRef.name} not found in namespace ${ns}`);
      return { requeueAfter: 30_000 };
    }
    if (!this.d.slots.tryAcquire(key)) {
      await recordPending(this.d.client, RT, restore, "WaitingForSlot", `Waiting: ${this.d.slots.limit} backups and restores already run in this manager`);
      return { requeueAfter: 5_000 };
    }
    let started = false;
    try {
      const { source, description } = await this.source(restore, ns);
      const settings = await this.d.connector.connectionSettings(instance);
      await writeRunStatus(this.d.client, RT, ns, req.name, { phase: "Running", startTime: now(), startedBy: this.d.identity, source: description }, {
        status: "False", reason: "Running", message: `Restoring ${description} into MySQLInstance ${instance.metadata.name}`,
      });
      await this.d.events.record(restore, "Normal", "Started", `Restore of ${description} into MySQLInstance ${instance.metadata.name} started`);
      started = this.d.tasks.start(key, `restore ${ns}/${req.name}`, async (signal) => {
        try {
          const result = await runRestore({ target: await engineConnection(settings), source, databases: restore.spec.databases, signal, logger: ctx.log });
          await writeRunStatus(this.d.client, RT, ns, req.name, {
            phase: "Completed",
            completionTime: now(),
            durationSeconds: Math.round(result.durations.totalMs / 1000),
            objects: result.objects,
            bytes: result.bytes,
          }, { status: "True", reason: "Completed", message: `Restored ${result.objects} objects (${result.databases.join(", ")}) from ${result.location}` });
          await this.d.events.record(restore, "Normal", "Completed", `Restore completed in ${Math.round(result.durations.totalMs / 1000)} s: ${result.objects} objects from ${result.location}`);
        } catch (err) {
          const f = describeFailure(err, signal.aborted ? "the manager is shutting down or the restore was deleted" : undefined);
          await writeRunStatus(this.d.client, RT, ns, req.name, { phase: "Failed", completionTime: now() }, { status: "False", reason: f.reason, message: `Restore failed: ${f.message}` });
          await this.d.events.record(restore, "Warning", f.reason, `Restore failed: ${f.message}`);
        } finally {
          this.d.slots.release(key);
        }
      }, (err) => ctx.log.error("restore task failed unexpectedly", { err }));
      return undefined;
    } catch (err) {
      const f = err instanceof NotReady ? { reason: err.reason, message: err.message } : describeFailure(err);
      await recordPending(this.d.client, RT, restore, f.reason, f.message);
      await this.d.events.record(restore, "Warning", f.reason, f.message);
      if (err instanceof NotReady) return { requeueAfter: 15_000 };
      // The original error is not attached as `cause`: driver errors can carry SQL text; the message is the cleaned description.
      // eslint-disable-next-line preserve-caught-error
      throw new Error(f.message);
    } finally {
      if (!started) this.d.slots.release(key);
    }
  }

  private async source(restore: MySQLRestore, ns: string): Promise<{ source: RestoreSource; description: string }> {
    const ref = restore.spec.source.backupRef;
    if (ref) {
      const backup = this.d.cache.get<MySQLBackup>(MySQLBackupKind.resource, ns, ref.name);
      if (!backup) throw new NotReady("BackupNotFound", `MySQLBackup ${ref.name} not found in namespace ${ns}`);
      if (backup.status?.phase !== "Completed") {
        throw new NotReady("BackupNotCompleted", `MySQLBackup ${ref.name} is ${backup.status?.phase ?? "Pending"}, not Completed; the restore waits for it`);
      }
      const s3 = await resolveS3(ns, backup.spec.storage.s3, this.d.secrets);
      const prefix = backupFolder(backup.spec.storage.s3.prefix, ns, ref.name);
      return { source: { backup: { ...s3, prefix } }, description: backup.status.location ?? `s3://${s3.bucket}/${prefix}/` };
    }
    const s3spec = restore.spec.source.s3;
    if (!s3spec) throw new NotReady("InvalidSource", "spec.source has neither backupRef nor s3");
    const s3 = await resolveS3(ns, s3spec, this.d.secrets);
    const source = await locateRestoreSource({ ...s3, path: s3spec.path });
    return { source, description: `s3://${s3.bucket}/${s3spec.path}` };
  }

}
