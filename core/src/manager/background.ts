// Long-running work an operator starts from a reconcile but must not run
// inside it (a backup takes minutes; a worker blocked that long would starve
// every other object of the controller). Tasks get an AbortSignal that fires
// when the manager shuts down; the manager waits for them, bounded by its
// graceful-shutdown time, so a task can record why it stopped. When this
// manager loses leadership the signal aborts at once with a
// LeadershipLostError: the task stops and leaves recording to the new leader.
import { settledWithin } from "./bounded-wait.ts";

export interface BackgroundTask {
  name: string;
  startedAt: Date;
}

export class BackgroundTasks {
  private readonly stopper = new AbortController();
  private readonly running = new Map<string, { task: BackgroundTask; done: Promise<void>; cancel: AbortController }>();

  /** Aborted when the manager stops. */
  get signal(): AbortSignal {
    return this.stopper.signal;
  }

  /** Is a task with this key running in this process? */
  isRunning(key: string): boolean {
    return this.running.has(key);
  }

  get size(): number {
    return this.running.size;
  }

  /**
   * Starts `fn` unless a task with the same key runs already (then false).
   * Errors must be handled by `fn`; an escaped error is passed to `onError`.
   */
  start(key: string, name: string, fn: (signal: AbortSignal) => Promise<void>, onError: (err: unknown) => void): boolean {
    if (this.running.has(key) || this.stopper.signal.aborted) return false;
    const task = { name, startedAt: new Date() };
    const cancel = new AbortController();
    const signal = AbortSignal.any([this.stopper.signal, cancel.signal]);
    const done = (async () => {
      try {
        await fn(signal);
      } catch (err) {
        onError(err);
      } finally {
        this.running.delete(key);
      }
    })();
    this.running.set(key, { task, done, cancel });
    return true;
  }

  /** Aborts one task (e.g. its object was deleted) and waits for it to finish. */
  async cancel(key: string): Promise<void> {
    const entry = this.running.get(key);
    if (!entry) return;
    entry.cancel.abort();
    await entry.done;
  }

  /** The tasks running now. */
  list(): BackgroundTask[] {
    return [...this.running.values()].map((r) => r.task);
  }

  /**
   * Aborts every task (with `reason`, e.g. a LeadershipLostError, as the signal's reason) and waits
   * for them, at most `timeoutMs`. Resolves true when all finished.
   */
  async stop(timeoutMs: number, reason?: Error): Promise<boolean> {
    this.stopper.abort(reason);
    return settledWithin(Promise.all([...this.running.values()].map((r) => r.done)), timeoutMs);
  }
}
