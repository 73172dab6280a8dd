// Per-key retry delays for the work queue. A reconcile that fails is retried
// later rather than at once, so a key that keeps failing (an unreachable
// database, a missing Secret) backs off instead of spinning a worker, while
// keys that succeed are unaffected.

/** Decides how long a key waits before it is retried. */
export interface RateLimiter {
  /** Milliseconds the key should wait before its next retry; records one more failure. */
  when(key: string): number;
  /** Forgets the key's failures, so its next retry starts again at the shortest delay. */
  forget(key: string): void;
  /** How many failures have been recorded for the key since it was last forgotten. */
  numRequeues(key: string): number;
}

export interface ExponentialFailureRateLimiterOptions {
  /** Delay after the first failure. Defaults to 5 ms, as client-go's DefaultItemBasedRateLimiter. */
  baseDelayMs?: number;
  /** Upper bound of the delay. Defaults to 1000 s (1,000,000 ms), as client-go's DefaultItemBasedRateLimiter. */
  maxDelayMs?: number;
}

const DEFAULT_BASE_DELAY_MS = 5;
const DEFAULT_MAX_DELAY_MS = 1_000_000;

/**
 * Exponential backoff per key: base, 2·base, 4·base, … up to the maximum
 * (client-go's ItemExponentialFailureRateLimiter). Keys back off
 * independently, so one broken object does not slow down the others.
 */
export class ExponentialFailureRateLimiter implements RateLimiter {
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #failures = new Map<string, number>();

  constructor(options: ExponentialFailureRateLimiterOptions = {}) {
    const base = options.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
    const max = options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
    // A negative or NaN delay would silently turn into "retry at once"
    // further down, which is the hot loop backoff exists to prevent.
    if (!Number.isFinite(base) || base < 0) {
      throw new RangeError(`baseDelayMs must be a finite number >= 0, got ${base}`);
    }
    if (!Number.isFinite(max) || max < base) {
      throw new RangeError(`maxDelayMs must be a finite number >= baseDelayMs (${base}), got ${max}`);
    }
    this.#baseDelayMs = base;
    this.#maxDelayMs = max;
  }

  when(key: string): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    // 0 · 2^1024 is NaN, not 0.
    if (this.#baseDelayMs === 0) return 0;
    // 2 ** failures becomes Infinity past 1023 failures rather than wrapping
    // around like an integer would, and min() then yields the cap.
    return Math.min(this.#baseDelayMs * 2 ** failures, this.#maxDelayMs);
  }

  forget(key: string): void {
    this.#failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.#failures.get(key) ?? 0;
  }
}
