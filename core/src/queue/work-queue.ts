// The queue between event handlers and reconcile workers, with client-go's
// workqueue semantics. Controllers are level-based: a key only says "look at
// this object again", so adding a key that is already waiting changes nothing,
// and the guarantees that matter are that a key is never reconciled by two
// workers at once and that a change seen during a reconcile is never lost.
import type { RateLimiter } from "./rate-limiter.ts";
import { ExponentialFailureRateLimiter } from "./rate-limiter.ts";
import { DelayHeap, type DelayedKey } from "./delay-heap.ts";
import { Fifo } from "./fifo.ts";

export interface QueueMetrics {
  /** Called with the new depth, the number of keys waiting as `len()` counts them, whenever it changes (workqueue_depth). */
  depth(n: number): void;
  /** A key was added; adds of a key that is already waiting are not counted (workqueue_adds_total). */
  added(): void;
  /** A rate-limited re-add (workqueue_retries_total). */
  retried(): void;
  /** Seconds a key waited between add and get (workqueue_queue_duration_seconds). */
  queueLatency(seconds: number): void;
  /** Seconds between get and done (workqueue_work_duration_seconds). */
  workDuration(seconds: number): void;
}

export interface WorkQueueOptions {
  /** Names the queue in metrics and logs, usually after its controller. No default. */
  name: string;
  /**
   * Backoff for `addRateLimited`. Defaults to an ExponentialFailureRateLimiter
   * with client-go's per-key values (5 ms doubling up to 1000 s); unlike
   * client-go's DefaultControllerRateLimiter there is no overall token bucket.
   */
  rateLimiter?: RateLimiter;
  /** Receives the queue's measurements. Defaults to discarding them. */
  metrics?: QueueMetrics;
  /**
   * Clock in milliseconds, for latencies and for when delayed keys are due.
   * Defaults to `performance.now()`: it is monotonic, so a wall-clock
   * adjustment neither distorts the durations nor fires delayed adds early.
   */
  now?: () => number;
}

const NO_METRICS: QueueMetrics = {
  depth: () => undefined,
  added: () => undefined,
  retried: () => undefined,
  queueLatency: () => undefined,
  workDuration: () => undefined,
};

// setTimeout fires after 1 ms when asked for more than this, with a warning.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A work queue of object keys ("namespace/name") with client-go's semantics:
 * de-duplicated, FIFO, one worker per key at a time, delayed and rate-limited
 * re-adds.
 *
 * Shutting down, by either method, stops handing out keys at once: `get()`
 * resolves `undefined`, adds are ignored, delayed keys are discarded and keys
 * still waiting are dropped rather than processed. A controller re-lists
 * every object when it starts again (on this process or on the next leader),
 * so nothing dropped here is lost, whereas working through a backlog would
 * hold up the shutdown, and with it the leader hand-over, for work that is
 * redone anyway. `shutDownWithDrain` additionally waits for the keys already
 * handed out, so that no reconcile is cut off half-way.
 */
export class WorkQueue {
  readonly name: string;
  readonly #rateLimiter: RateLimiter;
  readonly #metrics: QueueMetrics;
  readonly #now: () => number;

  /** Keys waiting to be handed out; each is also in #dirty. */
  readonly #queue = new Fifo<string>();
  /** Keys that need processing: waiting, or added again while being processed. */
  readonly #dirty = new Set<string>();
  /** Keys handed out and not yet done, with the time they were handed out. */
  readonly #processing = new Map<string, number>();
  /** When each dirty key was first added, for the queue latency. */
  readonly #addedAt = new Map<string, number>();
  /** Callers of get() waiting for a key, in call order. */
  readonly #getters = new Fifo<(key: string | undefined) => void>();

  readonly #delayed = new Map<string, DelayedKey>();
  readonly #delayHeap = new DelayHeap();
  #delaySeq = 0;
  #timer: NodeJS.Timeout | undefined;
  /** The time #timer was set to fire at; the heap's earliest key is due no earlier. */
  #timerDueAt = 0;

  #shuttingDown = false;
  readonly #drainWaiters = new Set<() => void>();

  constructor(options: WorkQueueOptions) {
    this.name = options.name;
    this.#rateLimiter = options.rateLimiter ?? new ExponentialFailureRateLimiter();
    this.#metrics = options.metrics ?? NO_METRICS;
    this.#now = options.now ?? (() => performance.now());
  }

  /**
   * Queues the key unless it is already waiting. A key that is being
   * processed is queued again when its worker calls `done`, so the change
   * that triggered this add is seen by a reconcile that starts after it.
   */
  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#dirty.add(key);
    this.#addedAt.set(key, this.#now());
    this.#metrics.added();
    if (this.#processing.has(key)) return;
    this.#enqueue(key);
  }

  /**
   * The next key, in the order keys were queued; waits while none is
   * waiting. Resolves `undefined` once the queue is shutting down, which is
   * a worker's signal to stop. The caller must call `done(key)` when it has
   * finished with the key.
   */
  get(): Promise<string | undefined> {
    if (this.#shuttingDown) return Promise.resolve(undefined);
    const key = this.#queue.shift();
    if (key === undefined) {
      return new Promise((resolve) => this.#getters.push(resolve));
    }
    this.#metrics.depth(this.#queue.length);
    return Promise.resolve(this.#handOut(key));
  }

  /** The next `n` keys `get` will hand out, in order, without taking them (for reading ahead). */
  upcoming(n: number): string[] {
    return this.#shuttingDown ? [] : this.#queue.peek(n);
  }

  /** Ends the processing of a key handed out by `get`; queues it again if it was added meanwhile. */
  done(key: string): void {
    const startedAt = this.#processing.get(key);
    if (startedAt === undefined) return;
    this.#processing.delete(key);
    this.#metrics.workDuration((this.#now() - startedAt) / 1000);
    // Shutting down clears #dirty, so nothing is re-queued then.
    if (this.#dirty.has(key)) this.#enqueue(key);
    if (this.#processing.size === 0) {
      for (const drained of this.#drainWaiters) drained();
      this.#drainWaiters.clear();
    }
  }

  /**
   * Adds the key after `delayMs` (a reconcile's `requeueAfter`). If the key is
   * already waiting for a delay, the earlier of the two times is kept, as in
   * client-go's delaying queue: a later request never postpones a sooner one.
   * A delay of 0 or less adds at once. The delayed add does not replace an
   * immediate `add`: both happen, and the usual de-duplication applies.
   */
  addAfter(key: string, delayMs: number): void {
    if (Number.isNaN(delayMs)) throw new RangeError(`addAfter(${key}): delayMs is NaN`);
    if (this.#shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const readyAt = this.#now() + delayMs;
    const existing = this.#delayed.get(key);
    if (existing !== undefined) {
      if (existing.readyAt <= readyAt) return;
      existing.readyAt = readyAt;
      this.#delayHeap.movedEarlier(existing);
    } else {
      const entry: DelayedKey = { key, readyAt, seq: this.#delaySeq++, index: -1 };
      this.#delayed.set(key, entry);
      this.#delayHeap.push(entry);
    }
    this.#armTimer();
  }

  /** Adds the key after the rate limiter's delay for it: the retry of a failed reconcile. */
  addRateLimited(key: string): void {
    // Checked here as well so that a shut-down queue does not count a failure.
    if (this.#shuttingDown) return;
    const delayMs = this.#rateLimiter.when(key);
    this.#metrics.retried();
    this.addAfter(key, delayMs);
  }

  /** Resets the key's backoff, after a reconcile that succeeded. */
  forget(key: string): void {
    this.#rateLimiter.forget(key);
  }

  /** How many rate-limited retries the key has had since it was last forgotten. */
  numRequeues(key: string): number {
    return this.#rateLimiter.numRequeues(key);
  }

  /** Keys waiting to be handed out; keys being processed or waiting for a delay are not counted. */
  len(): number {
    return this.#queue.length;
  }

  /**
   * Stops handing out keys at once: waiting `get()` calls resolve
   * `undefined`, later adds are ignored, delayed keys and their timer are
   * discarded, and keys still waiting are dropped. Keys already handed out
   * may still be passed to `done`.
   */
  shutDown(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;

    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#delayed.clear();
    this.#delayHeap.clear();

    const dropped = this.#queue.length;
    this.#queue.clear();
    this.#dirty.clear();
    this.#addedAt.clear();
    if (dropped > 0) this.#metrics.depth(0);

    for (let resolve = this.#getters.shift(); resolve !== undefined; resolve = this.#getters.shift()) {
      resolve(undefined);
    }
  }

  /**
   * Shuts down as `shutDown` does, then waits until every key that had been
   * handed out is `done`, or until `timeoutMs` has passed (Infinity, or
   * anything beyond setTimeout's 24.8 days, waits without a deadline). Keys that were waiting but not yet handed out are
   * not processed. Resolves true if the in-flight keys finished, false if the
   * deadline came first.
   */
  shutDownWithDrain(timeoutMs: number): Promise<boolean> {
    if (Number.isNaN(timeoutMs) || timeoutMs < 0) {
      throw new RangeError(`shutDownWithDrain: timeoutMs must be >= 0, got ${timeoutMs}`);
    }
    this.shutDown();
    if (this.#processing.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      let deadline: NodeJS.Timeout | undefined;
      const drained = (): void => {
        clearTimeout(deadline);
        resolve(true);
      };
      if (timeoutMs <= MAX_TIMER_MS) {
        deadline = setTimeout(() => {
          this.#drainWaiters.delete(drained);
          resolve(false);
        }, timeoutMs);
      }
      this.#drainWaiters.add(drained);
    });
  }

  isShuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Seconds that the keys now being processed have spent in processing so far, summed (workqueue_unfinished_work_seconds). */
  unfinishedWorkSeconds(): number {
    const now = this.#now();
    let total = 0;
    for (const startedAt of this.#processing.values()) total += now - startedAt;
    return total / 1000;
  }

  /** Seconds the longest-running key now being processed has been in processing (workqueue_longest_running_processor_seconds). */
  longestRunningProcessorSeconds(): number {
    const now = this.#now();
    let longest = 0;
    for (const startedAt of this.#processing.values()) longest = Math.max(longest, now - startedAt);
    return longest / 1000;
  }

  /** Gives a key that needs processing to a waiting worker, or queues it. */
  #enqueue(key: string): void {
    const getter = this.#getters.shift();
    if (getter !== undefined) {
      getter(this.#handOut(key));
      return;
    }
    this.#queue.push(key);
    this.#metrics.depth(this.#queue.length);
  }

  /**
   * Moves a key into processing. This happens synchronously, before the
   * worker's promise settles, so an add that comes in between already finds
   * the key in processing and no second worker can be given it.
   */
  #handOut(key: string): string {
    const now = this.#now();
    this.#dirty.delete(key);
    this.#processing.set(key, now);
    const addedAt = this.#addedAt.get(key);
    this.#addedAt.delete(key);
    if (addedAt !== undefined) this.#metrics.queueLatency((now - addedAt) / 1000);
    return key;
  }

  /** Makes the single delay timer fire when the earliest delayed key is due. */
  #armTimer(): void {
    const next = this.#delayHeap.peek();
    if (next === undefined) return;
    if (this.#timer !== undefined && this.#timerDueAt <= next.readyAt) return;
    clearTimeout(this.#timer);
    const now = this.#now();
    const delay = Math.min(Math.max(Math.ceil(next.readyAt - now), 0), MAX_TIMER_MS);
    this.#timerDueAt = now + delay;
    this.#timer = setTimeout(() => this.#onTimer(), delay);
  }

  #onTimer(): void {
    this.#timer = undefined;
    // The timer is the authority on the time it was set for: even if the
    // clock reads slightly earlier when it fires, that key is due, so a timer
    // never fires without progress.
    const now = Math.max(this.#now(), this.#timerDueAt);
    for (let next = this.#delayHeap.peek(); next !== undefined && next.readyAt <= now; next = this.#delayHeap.peek()) {
      this.#delayHeap.pop();
      this.#delayed.delete(next.key);
      this.add(next.key);
    }
    this.#armTimer();
  }
}
