// Public surface of the work queue; the FIFO and delay heap stay internal.
//
// QueueMetrics is declared in work-queue.ts but not re-exported here: the
// metrics module exports a structurally identical QueueMetrics, and core's
// index re-exports both folders with `export *`, where two different
// declarations of one name are a compile error. Passing
// `Metrics.queueMetrics()` to a WorkQueue still type-checks the two against
// each other, so they cannot drift apart unnoticed.
export { WorkQueue } from "./work-queue.ts";
export type { WorkQueueOptions } from "./work-queue.ts";
export { ExponentialFailureRateLimiter } from "./rate-limiter.ts";
export type { RateLimiter, ExponentialFailureRateLimiterOptions } from "./rate-limiter.ts";
