// What operators may know about this manager's leadership. Everything that
// acts on the cluster or on data outside it (reconciles, background tasks,
// the long work they start) observes `signal`: it aborts, with a
// LeadershipLostError as its reason, the moment this process stops leading,
// so two managers never act at once. Work another manager left Running is
// treated as stopped only after `previousLeaderFenceMs()` — by then that
// manager's renew deadline has long passed, it stopped acting, and its
// requests still in flight (an S3 upload) were aborted.
export interface Leadership {
  /** Aborted when this process stops leading (reason: LeadershipLostError) or the manager shuts down. */
  readonly signal: AbortSignal;
  /**
   * Milliseconds until a previous leader has certainly stopped: a lease duration after this process
   * acquired the Lease, 0 once that has passed or without leader election (a single manager).
   */
  previousLeaderFenceMs(): number;
}
