// MySQLRestore: like a backup, a one-shot operation run as a background task
// (operation-reconciler.ts has the lifecycle they share). The source is a
// Completed MySQLBackup (its location and storage settings, and the manifest
// checksum it recorded) or an S3 location given directly: a backup folder or
// a single dump file. A restore whose backup is not Completed yet waits for it
// as Pending; the MySQLBackup watch (restore-index.ts) wakes it when the
// backup changes.
//
// A finalizer is held while the restore may run: deleting a running restore
// aborts it, drops its staging databases, says in an Event what state the
// target was left in, and only then lets the object go. A restore found
// Running without a task in this process (its manager was killed) is marked
// Interrupted, and its staging databases are dropped the same way.
import { rm } from "node:fs/promises";
import type { ReconcileContext } from "@stateward/core";
import { MySQLInstanceKind, type MySQLInstance } from "@stateward/mysql";
import { MySQLRestoreKind, type MySQLRestore } from "../api.ts";
import { cleanUpRestore, keptReplaced, locateRestoreSource, replacedTablesPlace, runRestore, stagingDatabasesPattern, type RestoreSource, type StagingLeftovers } from "../restore/index.ts";
import { downloadDirectory } from "../restore/point-in-time.ts";
import { engineConnection } from "./connection.ts";
import { describeFailure, restoreFailed } from "./failures.ts";
import { RunMetrics } from "./metrics.ts";
import { NotReady, OperationReconciler, type PreparedRun } from "./operation-reconciler.ts";
import { preparePointInTime } from "./point-in-time.ts";
import { backupSource, completedBackup } from "./restore-source.ts";
import type { OperationDeps } from "./operation.ts";
import { resolveS3 } from "./s3-settings.ts";

export const RESTORE_FINALIZER = "stateward.io/restore-cleanup";

/** A run's id, which its staging names come from: the uid, so that a later cleanup finds what a killed run left. */
export function restoreRunId(restore: MySQLRestore): string {
  return restore.metadata.uid ?? `restore/${restore.metadata.namespace ?? ""}/${restore.metadata.name ?? ""}`;
}

/** What an interrupted in-place restore left, whether or not the server could be asked. */
const APPLIED_IN_PLACE = "It was applying to the target in place, so the target may hold part of the data.";

export type RestoreReconcilerDeps = OperationDeps;

export class RestoreReconciler extends OperationReconciler<MySQLRestore> {
  protected readonly noun = "restore";
  protected readonly resource = MySQLRestoreKind.resource;
  protected readonly finalizer = RESTORE_FINALIZER;
  protected readonly retryAdvice = "Create a new MySQLRestore to restore again.";
  protected readonly metrics = new RunMetrics(this.d.metrics, "mysqlrestore", "bytes");

  /** Held from before the restore can start until it finished: nothing of it can be left on the server then. */
  protected holdsFinalizer(restore: MySQLRestore): boolean {
    const phase = restore.status?.phase;
    return phase !== "Completed" && phase !== "Failed";
  }

  protected async prepare(restore: MySQLRestore, instance: MySQLInstance, _key: string, ctx: ReconcileContext): Promise<PreparedRun> {
    const ns = restore.metadata.namespace ?? "";
    if (restore.spec.pointInTime) return preparePointInTime(this.d, restore, restore.spec.pointInTime, instance, restoreRunId(restore), ctx);
    const { source, description } = await this.source(restore, ns);
    const settings = await this.d.connector.connectionSettings(instance);
    // A dump file has no manifest to stage by: it is applied in place.
    const mode = "backup" in source ? (restore.spec.mode ?? "Staged") : "InPlace";
    return {
      status: { source: description, mode },
      message: `Restoring ${description} into MySQLInstance ${instance.metadata.name}`,
      started: `Restore of ${description} into MySQLInstance ${instance.metadata.name} started`,
      run: async (signal) => {
        const result = await runRestore({
          target: await engineConnection(settings),
          source,
          databases: restore.spec.databases,
          mode,
          runId: restoreRunId(restore),
          signal,
          logger: ctx.log,
        });
        return {
          status: { durationSeconds: Math.round(result.durations.totalMs / 1000), objects: result.objects, bytes: result.bytes },
          message: `Restored ${result.objects} objects (${result.databases.join(", ")}) from ${result.location}`,
          event: `Restore completed in ${Math.round(result.durations.totalMs / 1000)} s: ${result.objects} objects from ${result.location}`,
        };
      },
      failed: (err, signal, deleted) => restoreFailed(err, signal, deleted, mode),
    };
  }

  /**
   * Deletion: a running restore was aborted (its task dropped the staging
   * databases and recorded what state the target is in); a run killed
   * earlier may have left staging databases, which are dropped here, with a
   * Warning naming what was left when the server cannot be reached.
   */
  protected async finalize(restore: MySQLRestore, wasRunning: boolean, ctx: ReconcileContext): Promise<void> {
    if (wasRunning || restore.status?.phase !== "Running") return;
    const cleaned = await this.cleanUpInterrupted(restore, ctx);
    await this.d.events.record(restore, "Warning", "Deleted", `The MySQLRestore was deleted while a manager that is gone was running it. ${cleaned}`);
  }

  /** Drops what a killed run of `restore` left on its target; returns a sentence saying what state the target is in. */
  protected async cleanUpInterrupted(restore: MySQLRestore, ctx: ReconcileContext): Promise<string> {
    const ns = restore.metadata.namespace ?? "";
    const runId = restoreRunId(restore);
    const staging = stagingDatabasesPattern(runId);
    const instance = this.d.cache.get<MySQLInstance>(MySQLInstanceKind.resource, ns, restore.spec.instanceRef.name);
    // A killed manager's downloads are gone with its pod; one restarted in place finds them here (the server not needed).
    if (restore.spec.pointInTime) await rm(downloadDirectory(runId), { recursive: true, force: true }).catch(() => undefined);
    let found: StagingLeftovers;
    try {
      if (!instance) throw new Error(`MySQLInstance ${restore.spec.instanceRef.name} not found`);
      found = await cleanUpRestore(await engineConnection(await this.d.connector.connectionSettings(instance)), runId);
    } catch (err) {
      const f = describeFailure(err);
      ctx.log.warn("could not drop a restore's staging databases", { err: f.message });
      await this.d.events.record(restore, "Warning", "CleanupFailed", `Could not drop this restore's staging databases (${staging}) from the target: ${f.message}. Drop them by hand.`);
      return `Its staging databases (${staging}) could not be dropped: ${f.message}.${unknownTargetState(restore, runId)}`;
    }
    if (restore.status?.mode === "InPlace") return APPLIED_IN_PLACE;
    if (found.replacedTables.length > 0) {
      return `It was stopped after swapping the restored tables in: the tables are restored, but views, routines, triggers or events of the backup may be missing. ${keptReplaced(found, runId)}.`;
    }
    const dropped = found.stagingDatabases.length > 0 ? `its staging databases (${found.stagingDatabases.join(", ")}) were dropped` : "it had left no staging database";
    if (restore.spec.pointInTime) {
      // Past the swap nothing is left to tell it by: it may have been replaying.
      if (found.stagingDatabases.length === 0) {
        return "It had left no staging database: it stopped either before changing the target or after restoring the backup, while replaying the archived transactions (the target then holds the backup plus part of them).";
      }
    }
    return `It stopped before changing the target, which was left untouched; ${dropped}.`;
  }

  private async source(restore: MySQLRestore, ns: string): Promise<{ source: RestoreSource; description: string }> {
    const ref = restore.spec.source?.backupRef;
    if (ref) return backupSource(this.d, completedBackup(this.d, ns, ref.name), ns);
    const s3spec = restore.spec.source?.s3;
    if (!s3spec) throw new NotReady("InvalidSource", "spec.source has neither backupRef nor s3");
    const s3 = await resolveS3(ns, s3spec, this.d.secrets);
    const source = await locateRestoreSource({ ...s3, path: s3spec.path });
    return { source, description: `s3://${s3.bucket}/${s3spec.path}` };
  }

}

/**
 * What may have become of the target, told when the server could not be asked. A staged run keeps the tables
 * its swap replaced until the backup is wholly restored, then drops them (a point-in-time restore goes on to
 * replay the archived transactions).
 */
function unknownTargetState(restore: MySQLRestore, runId: string): string {
  if (restore.status?.mode === "InPlace") return ` ${APPLIED_IN_PLACE}`;
  const swapped = " If it stopped after swapping the restored tables in";
  if (!restore.spec.pointInTime) return `${swapped}, before its end, ${replacedTablesPlace(runId)}.`;
  return `${swapped}, before the backup was wholly restored, ${replacedTablesPlace(runId)}; if it stopped while replaying the archived transactions, the replaced tables were dropped already and the target holds the backup plus part of the transactions.`;
}
