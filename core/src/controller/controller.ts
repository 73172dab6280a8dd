// A controller: watches feed keys into a work queue; workers take keys and
// call the reconciler; the result decides what happens to the key (forget,
// retry with per-key exponential backoff, requeue after a delay, or — for a
// terminal error — wait for the next change).
import { randomUUID } from "node:crypto";
import type { Cache, InformerEvent } from "../cache/index.ts";
import { objectKey, splitKey, type KubeObject, type ResourceType } from "../client/index.ts";
import type { Logger } from "../log/index.ts";
import type { Metrics } from "../metrics/index.ts";
import { ExponentialFailureRateLimiter, WorkQueue } from "../queue/index.ts";
import type { Predicate } from "./predicates.ts";
import { isTerminal, requestKey, type Reconciler, type Request } from "./reconciler.ts";

export interface ControllerOptions {
  /** Workers reconciling different objects at once. Defaults to 1, as controller-runtime. */
  maxConcurrentReconciles?: number;
  /**
   * The longest wait before a failed reconcile is retried. Defaults to 1000 s (client-go's
   * per-item backoff). Lower it for a kind whose status should follow something outside the
   * cluster that heals by itself (a server coming back): the backoff still grows, up to this.
   */
  maxRetryDelayMs?: number;
}

export type MapFunc<T extends KubeObject = KubeObject> = (obj: T) => Request[];

export interface ControllerDeps {
  cache: Cache;
  logger: Logger;
  metrics: Metrics;
  /** Aborted when the manager stops leading; every reconcile's signal follows it. */
  leadership?: AbortSignal;
}

/** How many queued requests, per worker, the reconciler is told of ahead of their turn. */
const READ_AHEAD_PER_WORKER = 2;

export class Controller {
  readonly name: string;
  private readonly reconciler: Reconciler;
  private readonly deps: ControllerDeps;
  private readonly queue: WorkQueue;
  private readonly maxConcurrent: number;
  private readonly log: Logger;
  private readonly stopper = new AbortController();
  /** Aborted when this controller stops or the manager loses leadership (the reason says which). */
  private readonly signal: AbortSignal;
  private workers: Promise<void>[] = [];
  private unregisterSampler: (() => void) | undefined;

  constructor(name: string, reconciler: Reconciler, deps: ControllerDeps, opts: ControllerOptions = {}) {
    this.name = name;
    this.reconciler = reconciler;
    this.deps = deps;
    this.maxConcurrent = opts.maxConcurrentReconciles ?? 1;
    this.log = deps.logger.child({ controller: name });
    this.queue = new WorkQueue({
      name,
      metrics: deps.metrics.queueMetrics(name),
      ...(opts.maxRetryDelayMs === undefined ? {} : { rateLimiter: new ExponentialFailureRateLimiter({ maxDelayMs: opts.maxRetryDelayMs }) }),
    });
    this.signal = deps.leadership ? AbortSignal.any([this.stopper.signal, deps.leadership]) : this.stopper.signal;
  }

  /** Enqueue keys derived from events of `rt` that pass every predicate (how `rt` is cached is declared apart: see ControllerBuilder). */
  watch<T extends KubeObject>(rt: ResourceType, toRequests: MapFunc<T>, predicates: Predicate<T>[] = []): void {
    this.deps.cache.onEvent<T>(rt, (event: InformerEvent<T>) => {
      if (!predicates.every((p) => p(event))) return;
      const objs = event.type === "update" ? [event.obj, event.old] : [event.obj];
      const keys = new Set<string>();
      for (const obj of objs) for (const req of toRequests(obj)) keys.add(requestKey(req));
      for (const key of keys) this.queue.add(key);
    });
  }

  /** Enqueue a key by hand (e.g. a timer outside Kubernetes). */
  enqueue(req: Request, afterMs = 0): void {
    this.queue.addAfter(requestKey(req), afterMs);
  }

  start(): void {
    if (this.workers.length) return;
    const m = this.deps.metrics.controller(this.name);
    m.setMaxConcurrent(this.maxConcurrent);
    this.unregisterSampler = this.deps.metrics.registerQueueSampler(this.name, () => ({
      unfinishedWorkSeconds: this.queue.unfinishedWorkSeconds(),
      longestRunningProcessorSeconds: this.queue.longestRunningProcessorSeconds(),
    }));
    for (let i = 0; i < this.maxConcurrent; i++) this.workers.push(this.work());
    this.log.info("controller started", { workers: this.maxConcurrent });
  }

  /** Stops taking new keys, lets in-flight reconciles finish (bounded), then returns. */
  async stop(drainTimeoutMs: number, reason?: Error): Promise<void> {
    this.stopper.abort(reason);
    const drained = await this.queue.shutDownWithDrain(drainTimeoutMs);
    if (!drained) this.log.warn("reconciles still running at shutdown deadline", { timeoutMs: drainTimeoutMs });
    else await Promise.all(this.workers);
    this.unregisterSampler?.();
  }

  /** Tells the reconciler (if it reads ahead) of the requests next in the queue; a failure there is only logged. */
  private readAhead(): void {
    if (this.reconciler.readAhead === undefined) return;
    for (const next of this.queue.upcoming(this.maxConcurrent * READ_AHEAD_PER_WORKER)) {
      try {
        this.reconciler.readAhead(splitKey(next));
      } catch (err) {
        this.log.debug("read-ahead failed", { err });
      }
    }
  }

  private async work(): Promise<void> {
    const m = this.deps.metrics.controller(this.name);
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      this.readAhead();
      const req = splitKey(key);
      const reconcileID = randomUUID();
      const log = this.log.child({ namespace: req.namespace, name: req.name, reconcileID });
      const started = performance.now();
      m.activeWorkers(1);
      try {
        const result = await this.reconciler.reconcile(req, { log, signal: this.signal, reconcileID });
        const seconds = (performance.now() - started) / 1000;
        if (result && result.requeueAfter !== undefined && result.requeueAfter > 0) {
          this.queue.forget(key);
          this.queue.addAfter(key, result.requeueAfter);
          m.reconciled("requeue_after", seconds);
        } else {
          this.queue.forget(key);
          m.reconciled("success", seconds);
        }
        // One line per reconcile at debug level (a no-op at the default info): what woke an object, and how often.
        log.debug("reconciled", { ms: Math.round(seconds * 1000), ...(result?.requeueAfter ? { requeueAfterMs: result.requeueAfter } : {}) });
      } catch (err) {
        const seconds = (performance.now() - started) / 1000;
        m.reconciled("error", seconds);
        m.error();
        if (isTerminal(err)) {
          m.terminalError();
          this.queue.forget(key);
          log.error("reconcile failed; not retrying until the object changes", { err });
        } else {
          this.queue.addRateLimited(key);
          log.error("reconcile failed; retrying with backoff", { err, retries: this.queue.numRequeues(key) });
        }
      } finally {
        m.activeWorkers(-1);
        this.queue.done(key);
      }
    }
  }
}

/** Maps an object to its own key. */
export const ownKey: MapFunc = (obj) => [splitKey(objectKey(obj))];

/** Maps an owned object to the key of its controlling owner of kind `owner`. */
export function toOwner(owner: ResourceType): MapFunc {
  return (obj) => {
    const ref = obj.metadata.ownerReferences?.find((r) => r.controller && r.kind === owner.kind && r.apiVersion === owner.apiVersion);
    return ref ? [{ namespace: obj.metadata.namespace, name: ref.name }] : [];
  };
}
