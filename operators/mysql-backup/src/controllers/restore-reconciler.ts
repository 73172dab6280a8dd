// MySQLRestore: like a backup, a one-shot operation run as a background task.
// The source is a Completed MySQLBackup (its location and storage settings,
// and the manifest checksum it recorded) or an S3 location given directly: a
// backup folder or a single dump file.
//
// A finalizer is held while the restore may run: deleting a running restore
// aborts it, drops its staging databases, says in an Event what state the
// target was left in, and only then lets the object go. A restore found
// Running without a task in this process (its manager was killed) is marked
// Interrupted, and its staging databases are dropped the same way.
import {
  addFinalizer,
  hasFinalizer,
  isBeingDeleted,
  isNotFound,
  LeadershipLostError,
  removeFinalizer,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
} from "@stateward/core";
import { MySQLInstanceKind, type MySQLInstance } from "@stateward/mysql";
import { MySQLBackupKind, MySQLRestoreKind, type MySQLBackup, type MySQLRestore } from "../api.ts";
import { cleanUpRestore, leftTargetUntouched, locateRestoreSource, runRestore, stagingDatabaseName, type RestoreSource, type StagingLeftovers } from "../restore/index.ts";
import { engineConnection } from "./connection.ts";
import { describeFailure } from "./failures.ts";
import { now, recordPending, takeOverWaitMs, type OperationDeps } from "./operation.ts";
import { writeRunStatus } from "./run-status.ts";
import { backupFolder, resolveS3 } from "./s3-settings.ts";

export const RESTORE_FINALIZER = "stateward.io/restore-cleanup";
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

  /** Keys of restores being deleted: their task, aborted, says so in its own words. */
  private readonly deleting = new Set<string>();

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const ns = req.namespace ?? "";
    const key = `restore/${ns}/${req.name}`;
    const found = this.d.cache.get<MySQLRestore>(RT, ns, req.name);
    if (!found) {
      await this.d.tasks.cancel(key);
      return undefined;
    }
    if (isBeingDeleted(found)) {
      await this.finalize(found, key, ctx);
      return undefined;
    }
    const phase = found.status?.phase;
    if (phase === "Completed" || phase === "Failed") {
      // Nothing of it can be left on the server once it finished.
      await removeFinalizer(this.d.client, RT, found, RESTORE_FINALIZER);
      return undefined;
    }
    if (phase === "Running") {
      if (this.d.tasks.isRunning(key)) return undefined;
      const fenceMs = takeOverWaitMs(this.d, found.status);
      if (fenceMs > 0) {
        // Its staging databases are dropped below: not while the other manager may still write them.
        ctx.log.info("restore left Running by another manager; waiting until that manager has certainly stopped", {
          startedBy: found.status?.startedBy, waitMs: fenceMs,
        });
        return { requeueAfter: fenceMs };
      }
      const by = found.status?.startedBy ? ` (${found.status.startedBy})` : "";
      const message = `The manager running this restore${by} stopped before it finished. ${await this.cleanUp(found, ctx)} Create a new MySQLRestore to restore again.`;
      await writeRunStatus(this.d.client, RT, ns, req.name, { phase: "Failed", completionTime: now() }, { status: "False", reason: "Interrupted", message });
      await this.d.events.record(found, "Warning", "Interrupted", message);
      return undefined;
    }
    // Held from before the restore can start until it finished (or its leftovers were dropped).
    const restore = await addFinalizer(this.d.client, RT, found, RESTORE_FINALIZER);

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
      // A dump file has no manifest to stage by: it is applied in place.
      const mode = "backup" in source ? (restore.spec.mode ?? "Staged") : "InPlace";
      await writeRunStatus(this.d.client, RT, ns, req.name, { phase: "Running", startTime: now(), startedBy: this.d.identity, source: description, mode }, {
        status: "False", reason: "Running", message: `Restoring ${description} into MySQLInstance ${instance.metadata.name}`,
      });
      await this.d.events.record(restore, "Normal", "Started", `Restore of ${description} into MySQLInstance ${instance.metadata.name} started`);
      started = this.d.tasks.start(key, `restore ${ns}/${req.name}`, async (signal) => {
        try {
          const result = await runRestore({
            target: await engineConnection(settings),
            source,
            databases: restore.spec.databases,
            mode,
            // Staging names come from the uid: a later cleanup finds what a killed run left.
            runId: restore.metadata.uid ?? key,
            signal,
            logger: ctx.log,
          });
          await writeRunStatus(this.d.client, RT, ns, req.name, {
            phase: "Completed",
            completionTime: now(),
            durationSeconds: Math.round(result.durations.totalMs / 1000),
            objects: result.objects,
            bytes: result.bytes,
          }, { status: "True", reason: "Completed", message: `Restored ${result.objects} objects (${result.databases.join(", ")}) from ${result.location}` });
          await this.d.events.record(restore, "Normal", "Completed", `Restore completed in ${Math.round(result.durations.totalMs / 1000)} s: ${result.objects} objects from ${result.location}`);
        } catch (err) {
          if (signal.reason instanceof LeadershipLostError) {
            // Not the leader any more: the new leader marks the run Interrupted once this manager has certainly stopped.
            ctx.log.warn("restore stopped: this manager lost leadership", { restore: `${ns}/${req.name}` });
            return;
          }
          const deleted = this.deleting.has(key);
          const f = describeFailure(err, signal.aborted ? (deleted ? "the MySQLRestore was deleted" : "the manager is shutting down") : undefined);
          const reason = deleted ? "Deleted" : f.reason;
          const message = `Restore failed: ${f.message}. ${targetState(err, mode)}`.trim();
          await writeRunStatus(this.d.client, RT, ns, req.name, { phase: "Failed", completionTime: now() }, { status: "False", reason, message });
          await this.d.events.record(restore, "Warning", reason, message);
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

  /**
   * Deletion: a running restore is aborted (its task drops the staging
   * databases and records what state the target is in); a run killed
   * earlier may have left staging databases, which are dropped here. The
   * finalizer goes once that is done, or with a Warning naming what was
   * left when the server cannot be reached.
   */
  private async finalize(restore: MySQLRestore, key: string, ctx: ReconcileContext): Promise<void> {
    if (!hasFinalizer(restore, RESTORE_FINALIZER)) {
      await this.d.tasks.cancel(key);
      return;
    }
    if (this.d.tasks.isRunning(key)) {
      this.deleting.add(key);
      try {
        await this.d.tasks.cancel(key);
      } finally {
        this.deleting.delete(key);
      }
    } else if (restore.status?.phase === "Running") {
      const cleaned = await this.cleanUp(restore, ctx);
      await this.d.events.record(restore, "Warning", "Deleted", `The MySQLRestore was deleted while a manager that is gone was running it. ${cleaned}`);
    }
    // The task wrote the status meanwhile: the finalizer is removed from the current object.
    let live: MySQLRestore;
    try {
      live = await this.d.client.get<MySQLRestore>(RT, restore.metadata.namespace ?? "", restore.metadata.name ?? "");
    } catch (err) {
      // Released already (by an earlier pass over a stale cached copy): nothing left to do.
      if (isNotFound(err)) return;
      throw err;
    }
    await removeFinalizer(this.d.client, RT, live, RESTORE_FINALIZER);
  }

  /** Drops what a killed run of `restore` left on its target; returns a sentence saying what state the target is in. */
  private async cleanUp(restore: MySQLRestore, ctx: ReconcileContext): Promise<string> {
    const ns = restore.metadata.namespace ?? "";
    const runId = restore.metadata.uid ?? `restore/${ns}/${restore.metadata.name ?? ""}`;
    const staging = stagingDatabaseName(runId, 0).replace(/_1$/, "_*");
    const instance = this.d.cache.get<MySQLInstance>(MySQLInstanceKind.resource, ns, restore.spec.instanceRef.name);
    let found: StagingLeftovers;
    try {
      if (!instance) throw new Error(`MySQLInstance ${restore.spec.instanceRef.name} not found`);
      found = await cleanUpRestore(await engineConnection(await this.d.connector.connectionSettings(instance)), runId);
    } catch (err) {
      const f = describeFailure(err);
      ctx.log.warn("could not drop a restore's staging databases", { err: f.message });
      await this.d.events.record(restore, "Warning", "CleanupFailed", `Could not drop this restore's staging databases (${staging}) from the target: ${f.message}. Drop them by hand.`);
      return `Its staging databases (${staging}) could not be dropped: ${f.message}.`;
    }
    if (restore.status?.mode === "InPlace") return "It was applying to the target in place, so the target may hold part of the data.";
    if (found.replacedTables.length > 0) {
      return `It was stopped after swapping the restored tables in: the tables are restored, but views, routines, triggers or events of the backup may be missing; ${found.replacedTables.length} replaced tables and ${found.stagingDatabases.length} staging databases were dropped.`;
    }
    const dropped = found.stagingDatabases.length > 0 ? `its staging databases (${found.stagingDatabases.join(", ")}) were dropped` : "it had left no staging database";
    return `It stopped before changing the target, which was left untouched; ${dropped}.`;
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
      // The manifest's checksum recorded at completion: a manifest changed since is refused.
      const manifestSha256 = backup.status.manifestSha256;
      return {
        source: { backup: { ...s3, prefix }, ...(manifestSha256 ? { manifestSha256 } : {}) },
        description: backup.status.location ?? `s3://${s3.bucket}/${prefix}/`,
      };
    }
    const s3spec = restore.spec.source.s3;
    if (!s3spec) throw new NotReady("InvalidSource", "spec.source has neither backupRef nor s3");
    const s3 = await resolveS3(ns, s3spec, this.d.secrets);
    const source = await locateRestoreSource({ ...s3, path: s3spec.path });
    return { source, description: `s3://${s3.bucket}/${s3spec.path}` };
  }

}

/** What a failed restore left the target as: a sentence for its status and Event. */
function targetState(err: unknown, mode: "Staged" | "InPlace"): string {
  if (leftTargetUntouched(err)) return "The target was left untouched: nothing was swapped in, and the staging databases were dropped.";
  if (mode === "InPlace") return "The target may hold part of the data (it was applied in place).";
  return "";
}
