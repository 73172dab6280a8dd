// Seeding runs as a background task, not inside a reconcile: a copy takes as
// long as the data needs, and a worker held that long would stop other
// clusters from converging. Per replica, at most one seed runs; after a
// failure the next attempt waits, exponentially longer each time (capped),
// so a seed that cannot succeed does not lock the primary and copy
// everything again on every reconcile. Each failure is an Event; the
// cluster's `Seeding` condition says what runs or waits.
import type { BackgroundTasks, ConditionUpdate } from "@stateward/core";
import type { SeedResult } from "../replication/seed.ts";

/** The first retry after a failed seed waits this long; each further one twice as long. */
export const SEED_BACKOFF_BASE_MS = 5_000;
/** The longest wait between two seeds of one replica. */
export const SEED_BACKOFF_MAX_MS = 300_000;

export function seedBackoffMs(failures: number): number {
  if (failures <= 0) return 0;
  return Math.min(SEED_BACKOFF_BASE_MS * 2 ** Math.min(failures - 1, 30), SEED_BACKOFF_MAX_MS);
}

/** What a replica that needs seeding is doing. */
export type SeedView =
  | { kind: "running"; pod: string; since: Date }
  | { kind: "backoff"; pod: string; failures: number; lastError: string; busy: boolean; nextAttempt: Date };

interface Entry {
  pod: string;
  running: boolean;
  since: Date;
  failures: number;
  lastError: string;
  busy: boolean;
  nextAttemptMs: number;
}

export interface SeedCallbacks {
  succeeded(result: SeedResult): Promise<void>;
  /** `busy`: the primary could not be locked without holding up writers (not a fault, tried again later). */
  failed(message: string, busy: boolean, failures: number, retryInMs: number): Promise<void>;
}

export class ReplicaSeeding {
  private readonly tasks: BackgroundTasks;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();

  constructor(tasks: BackgroundTasks, now: () => number = Date.now) {
    this.tasks = tasks;
    this.now = now;
  }

  private static key(namespace: string, cluster: string, pod: string): string {
    return `mysqlcluster-seed/${namespace}/${cluster}/${pod}`;
  }

  /** The seed of a replica, when one runs. */
  running(namespace: string, cluster: string, pod: string): Extract<SeedView, { kind: "running" }> | undefined {
    const entry = this.entries.get(ReplicaSeeding.key(namespace, cluster, pod));
    return entry?.running ? { kind: "running", pod, since: entry.since } : undefined;
  }

  /**
   * A replica needs seeding: starts `seed` in the background unless one runs
   * or the back-off after the last failure has not passed. Returns what the
   * replica is doing now.
   */
  ensure(
    namespace: string,
    cluster: string,
    pod: string,
    seed: (signal: AbortSignal) => Promise<SeedResult>,
    describeError: (err: unknown) => { message: string; busy: boolean },
    callbacks: SeedCallbacks,
  ): SeedView {
    const key = ReplicaSeeding.key(namespace, cluster, pod);
    const entry = this.entries.get(key);
    if (entry?.running) return { kind: "running", pod, since: entry.since };
    if (entry && this.now() < entry.nextAttemptMs) {
      return { kind: "backoff", pod, failures: entry.failures, lastError: entry.lastError, busy: entry.busy, nextAttempt: new Date(entry.nextAttemptMs) };
    }
    const current: Entry = entry ?? { pod, running: true, since: new Date(this.now()), failures: 0, lastError: "", busy: false, nextAttemptMs: 0 };
    current.running = true;
    current.since = new Date(this.now());
    this.entries.set(key, current);
    const started = this.tasks.start(
      key,
      `seed ${namespace}/${pod}`,
      async (signal) => {
        let result: SeedResult;
        try {
          result = await seed(signal);
        } catch (err) {
          const { message, busy } = describeError(err);
          current.running = false;
          current.failures++;
          current.lastError = message;
          current.busy = busy;
          const wait = seedBackoffMs(current.failures);
          current.nextAttemptMs = this.now() + wait;
          await callbacks.failed(message, busy, current.failures, wait);
          return;
        }
        this.entries.delete(key);
        await callbacks.succeeded(result);
      },
      () => {
        // A callback that failed (an Event not recorded): the seed's own outcome is kept above.
        current.running = false;
      },
    );
    if (!started) {
      // The manager is stopping (or a task of this key is still finishing).
      current.running = false;
      return { kind: "backoff", pod, failures: current.failures, lastError: current.lastError || "the manager is stopping", busy: current.busy, nextAttempt: new Date(this.now()) };
    }
    return { kind: "running", pod, since: current.since };
  }

  /** The cluster is gone: its seeds stop, their state is forgotten. */
  async forget(namespace: string, cluster: string): Promise<void> {
    const prefix = `mysqlcluster-seed/${namespace}/${cluster}/`;
    for (const key of [...this.entries.keys()].filter((k) => k.startsWith(prefix))) {
      await this.tasks.cancel(key);
      this.entries.delete(key);
    }
  }
}

/**
 * The `Seeding` condition from what the replicas that need seeding are doing
 * in this reconcile; undefined when there is nothing to say (no seed now and
 * none before).
 */
export function seedingCondition(views: SeedView[], previous: { status: string } | undefined): Omit<ConditionUpdate, "observedGeneration"> | undefined {
  const running = views.filter((v) => v.kind === "running");
  const waiting = views.filter((v) => v.kind === "backoff");
  if (running.length > 0) {
    return { type: "Seeding", status: "True", reason: "Copying", message: `copying the primary's data into ${running.map((v) => v.pod).join(", ")}` };
  }
  if (waiting.length > 0) {
    return {
      type: "Seeding",
      status: "True",
      reason: "BackingOff",
      message: waiting
        .map((v) => (v.kind === "backoff" ? `${v.pod}: attempt ${v.failures} ${v.busy ? "put off" : "failed"}: ${v.lastError}; next attempt at ${v.nextAttempt.toISOString()}` : ""))
        .join("; "),
    };
  }
  if (previous?.status === "True") return { type: "Seeding", status: "False", reason: "Complete", message: "no replica needs seeding" };
  return undefined;
}
