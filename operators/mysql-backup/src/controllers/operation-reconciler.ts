// The lifecycle MySQLBackup and MySQLRestore share: both are one-shot
// operations. The reconcile decides and records; the operation itself runs as
// a background task (minutes long, it must not hold a controller worker),
// bounded per manager by the operation slots.
//
//   (new) --waiting: Pending--> --slot free--> Running --done--> Completed
//                                                      \--failed / interrupted--> Failed
//
// An operation found Running without a task in this process was interrupted
// (the manager restarted or crashed): what it left is removed and it is
// marked Failed (Interrupted), never left Running forever and never reported
// Completed. Started by another manager (status.startedBy), it may still be
// writing — a leader that lost its Lease a moment ago — so this waits out the
// leadership fence first: nothing is removed while it is still being written.
// A manager that loses leadership aborts its operations and writes nothing
// more: the new leader owns the object from then on.
//
// Each kind (backup-reconciler.ts, restore-reconciler.ts) says only what is
// its own: what a run needs and does, what its messages say, what an
// interrupted run left, and what its finalizer guards.
import {
  LeadershipLostError,
  ReconcileError,
  addFinalizer,
  hasFinalizer,
  isBeingDeleted,
  isNotFound,
  removeFinalizer,
  type KubeObject,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type ResourceType,
  type Result,
} from "@stateward/core";
import { MySQLInstanceKind, type MySQLInstance } from "@stateward/mysql";
import { describeFailure } from "./failures.ts";
import type { RunMetrics } from "./metrics.ts";
import { now, recordPending, takeOverWaitMs, type OperationDeps } from "./operation.ts";
import { writeRunStatus, type RunStatus } from "./run-status.ts";

/** What every operation's object has: the instance it runs against and a run status. */
export type OperationObject = KubeObject & { spec: { instanceRef: { name: string } }; status?: RunStatus };

/**
 * Thrown by `prepare` when the operation cannot start yet for a reason that
 * goes away by itself (its backup is not Completed yet): recorded as Pending,
 * and the reconcile ends without an error. What ends the wait must wake the
 * controller (a watch), as nothing polls.
 */
export class NotReady extends ReconcileError {
  override name = "NotReady";
  /** Polled when nothing watched ends the wait (an archive catching up): the reconcile is requeued after this long. */
  readonly retryAfterMs: number | undefined;

  constructor(reason: string, message: string, retryAfterMs?: number) {
    super(reason, message);
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * Thrown by `prepare` when the operation can never run as specified (a
 * point-in-time restore to a point no backup precedes): recorded as Failed
 * with a Warning Event, and not retried.
 */
export class Refused extends ReconcileError {
  override name = "Refused";
}

/** A run about to start: what it needs was read (Secrets, its source), so a missing piece is reported before anything starts. */
export interface PreparedRun {
  /** Status fields written with phase Running (where it writes, what it reads). */
  status: Partial<RunStatus>;
  /** The Ready condition's message while it runs. */
  message: string;
  /** The Normal `Started` Event. */
  started: string;
  /** The operation itself, in the background task. */
  run(signal: AbortSignal): Promise<CompletedRun>;
  /** What a failed run's status and Event say; `deleted` when the object's deletion aborted it. */
  failed(err: unknown, signal: AbortSignal, deleted: boolean): FailedRun;
}

export interface CompletedRun {
  /** Status fields written with phase Completed. */
  status: Partial<RunStatus>;
  /** The Ready condition's message. */
  message: string;
  /** The Normal `Completed` Event. */
  event: string;
  /** Warning Events that did not fail the run. */
  warnings?: { reason: string; message: string }[];
}

export interface FailedRun {
  /** The Ready condition's and the Warning Event's reason. */
  reason: string;
  /** The Ready condition's message. */
  message: string;
  /** The Warning Event's message. */
  event: string;
}

export abstract class OperationReconciler<T extends OperationObject> implements Reconciler {
  protected readonly d: OperationDeps;
  /** Keys of operations being aborted because their object is being deleted. */
  private readonly deleting = new Set<string>();

  /** "backup" or "restore": in task keys, log lines and messages. */
  protected abstract readonly noun: string;
  protected abstract readonly resource: ResourceType;
  protected abstract readonly finalizer: string;
  /** Ends the Interrupted message: what the user does to run it again. */
  protected abstract readonly retryAdvice: string;
  /** Duration and throughput of a Completed run, from its status. */
  protected abstract readonly metrics: RunMetrics;
  constructor(deps: OperationDeps) {
    this.d = deps;
  }

  /** Whether the object should carry the finalizer now (added before a run starts; once finished, added or removed to match). */
  protected abstract holdsFinalizer(obj: T): boolean;
  /** Reads what the run needs; throws NotReady to wait for it, anything else to fail the reconcile with backoff. */
  protected abstract prepare(obj: T, instance: MySQLInstance, key: string, ctx: ReconcileContext): Promise<PreparedRun>;
  /** Removes what a run interrupted by a manager that is gone left behind; a sentence for the Interrupted message. */
  protected abstract cleanUpInterrupted(obj: T, ctx: ReconcileContext): Promise<string>;
  /**
   * The work the finalizer guards, on deletion. A task of this manager was
   * aborted (and wrote its status) before; `wasRunning` says whether there
   * was one. The finalizer is removed afterwards.
   */
  protected abstract finalize(obj: T, wasRunning: boolean, ctx: ReconcileContext): Promise<void>;

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const ns = req.namespace ?? "";
    const key = `${this.noun}/${ns}/${req.name}`;
    const found = this.d.cache.get<T>(this.resource, ns, req.name);
    if (!found) {
      // Deleted while it carried no finalizer (a finished Retain backup, a restore past its cleanup): a run
      // still going is stopped — never left to finish unseen.
      await this.d.tasks.cancel(key);
      this.metrics.forget({ namespace: ns, name: req.name });
      return undefined;
    }
    if (isBeingDeleted(found)) return this.delete(found, key, ctx);
    const phase = found.status?.phase;
    if (phase === "Completed" || phase === "Failed") {
      // Exported from the status on every pass: a restarted manager exports what an earlier one recorded.
      if (phase === "Completed") this.metrics.completed(found);
      // The finalizer follows what the finished run still needs: a backup's deletionPolicy can be changed
      // after it completed (to Delete: its folder then goes with it, so the finalizer is added).
      if (this.holdsFinalizer(found)) await addFinalizer(this.d.client, this.resource, found, this.finalizer);
      else await removeFinalizer(this.d.client, this.resource, found, this.finalizer);
      return undefined;
    }
    if (phase === "Running") {
      if (this.d.tasks.isRunning(key)) return undefined;
      const fenceMs = this.untilPreviousManagerStopped(found, ctx);
      if (fenceMs > 0) return { requeueAfter: fenceMs };
      await this.markInterrupted(found, ctx);
      return undefined;
    }

    const obj = this.holdsFinalizer(found) ? await addFinalizer(this.d.client, this.resource, found, this.finalizer) : found;
    const instance = this.d.cache.get<MySQLInstance>(MySQLInstanceKind.resource, ns, obj.spec.instanceRef.name);
    if (!instance) {
      await recordPending(this.d.client, this.resource, obj, "InstanceNotFound", `MySQLInstance ${obj.spec.instanceRef.name} not found in namespace ${ns}`);
      return { requeueAfter: 30_000 };
    }
    if (!this.d.slots.tryAcquire(key)) {
      await recordPending(this.d.client, this.resource, obj, "WaitingForSlot", `Waiting: ${this.d.slots.limit} backups and restores already run in this manager`);
      return { requeueAfter: 5_000 };
    }
    let started = false;
    try {
      const prepared = await this.prepare(obj, instance, key, ctx);
      await writeRunStatus(this.d.client, this.resource, ns, req.name, { phase: "Running", startTime: now(), startedBy: this.d.identity, ...prepared.status }, {
        status: "False", reason: "Running", message: prepared.message,
      });
      await this.d.events.record(obj, "Normal", "Started", prepared.started);
      started = this.d.tasks.start(key, `${this.noun} ${ns}/${req.name}`, (signal) => this.runTask(obj, key, prepared, signal, ctx),
        (err) => ctx.log.error(`${this.noun} task failed unexpectedly`, { err }));
      return undefined;
    } catch (err) {
      if (err instanceof Refused) {
        await writeRunStatus(this.d.client, this.resource, ns, req.name, { phase: "Failed", completionTime: now() }, { status: "False", reason: err.reason, message: err.message });
        await this.d.events.record(obj, "Warning", err.reason, err.message);
        return undefined;
      }
      const f = err instanceof NotReady ? { reason: err.reason, message: err.message } : describeFailure(err);
      await recordPending(this.d.client, this.resource, obj, f.reason, f.message);
      await this.d.events.record(obj, "Warning", f.reason, f.message);
      if (err instanceof NotReady) return err.retryAfterMs === undefined ? undefined : { requeueAfter: err.retryAfterMs };
      // The original error is not attached as `cause`: driver errors can carry SQL text; the message is the cleaned description.
      // eslint-disable-next-line preserve-caught-error
      throw new Error(f.message);
    } finally {
      if (!started) this.d.slots.release(key);
    }
  }

  /** The background task: runs the operation and records how it ended. */
  private async runTask(obj: T, key: string, prepared: PreparedRun, signal: AbortSignal, ctx: ReconcileContext): Promise<void> {
    const ns = obj.metadata.namespace ?? "";
    const name = obj.metadata.name ?? "";
    try {
      const done = await prepared.run(signal);
      await writeRunStatus(this.d.client, this.resource, ns, name, { phase: "Completed", completionTime: now(), ...done.status }, {
        status: "True", reason: "Completed", message: done.message,
      });
      await this.d.events.record(obj, "Normal", "Completed", done.event);
      for (const w of done.warnings ?? []) await this.d.events.record(obj, "Warning", w.reason, w.message);
    } catch (err) {
      if (signal.reason instanceof LeadershipLostError) {
        // Not the leader any more: the new leader marks the run Interrupted once this manager has certainly stopped.
        ctx.log.warn(`${this.noun} stopped: this manager lost leadership`, { [this.noun]: `${ns}/${name}` });
        return;
      }
      const f = prepared.failed(err, signal, this.deleting.has(key));
      await writeRunStatus(this.d.client, this.resource, ns, name, { phase: "Failed", completionTime: now() }, { status: "False", reason: f.reason, message: f.message });
      await this.d.events.record(obj, "Warning", f.reason, f.event);
    } finally {
      this.d.slots.release(key);
    }
  }

  /**
   * Deletion: a task of this manager is aborted (it records how it ended),
   * then the kind's finalizer work runs and the finalizer goes.
   */
  private async delete(obj: T, key: string, ctx: ReconcileContext): Promise<Result | undefined> {
    const wasRunning = this.d.tasks.isRunning(key);
    this.deleting.add(key);
    try {
      await this.d.tasks.cancel(key);
    } finally {
      this.deleting.delete(key);
    }
    if (!hasFinalizer(obj, this.finalizer)) return undefined;
    if (!wasRunning && obj.status?.phase === "Running") {
      // Left Running by another manager: what it stored is removed only once that manager has certainly
      // stopped, as when it is marked Interrupted — a paused one may still write when it resumes.
      const fenceMs = this.untilPreviousManagerStopped(obj, ctx);
      if (fenceMs > 0) return { requeueAfter: fenceMs };
    }
    await this.finalize(obj, wasRunning, ctx);
    // The task wrote the status meanwhile: the finalizer is removed from the current object.
    let live: T;
    try {
      live = await this.d.client.get<T>(this.resource, obj.metadata.namespace ?? "", obj.metadata.name ?? "");
    } catch (err) {
      // Released already (by an earlier pass over a stale cached copy): nothing left to do.
      if (isNotFound(err)) return undefined;
      throw err;
    }
    await removeFinalizer(this.d.client, this.resource, live, this.finalizer);
    return undefined;
  }

  /**
   * Milliseconds until the manager that left `obj` Running has certainly stopped acting (0: now, or it was
   * this one): the new leader waits a lease duration after taking over (core/src/leader) before touching
   * what that run was writing.
   */
  private untilPreviousManagerStopped(obj: T, ctx: ReconcileContext): number {
    const fenceMs = takeOverWaitMs(this.d, obj.status);
    if (fenceMs > 0) {
      ctx.log.info(`${this.noun} left Running by another manager; waiting until that manager has certainly stopped`, {
        startedBy: obj.status?.startedBy, waitMs: fenceMs,
      });
    }
    return fenceMs;
  }

  /** A run left Running by a manager that is certainly gone: what it left is removed, and it is Failed (Interrupted). */
  private async markInterrupted(obj: T, ctx: ReconcileContext): Promise<void> {
    const startedBy = obj.status?.startedBy;
    const by = typeof startedBy === "string" && startedBy ? ` (${startedBy})` : "";
    const message = `The manager running this ${this.noun}${by} stopped before it finished. ${await this.cleanUpInterrupted(obj, ctx)} ${this.retryAdvice}`;
    await writeRunStatus(this.d.client, this.resource, obj.metadata.namespace ?? "", obj.metadata.name ?? "", { phase: "Failed", completionTime: now() }, {
      status: "False", reason: "Interrupted", message,
    });
    await this.d.events.record(obj, "Warning", "Interrupted", message);
  }
}
