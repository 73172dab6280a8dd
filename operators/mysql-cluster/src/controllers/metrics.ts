// The MySQLCluster's per-object metrics (README "Monitoring"), read from the
// cluster's status at the start of each reconcile: every status write brings
// a reconcile (its watch event), so they follow the status within a reconcile,
// and a restarted manager exports the same gauges on its first pass.
//
// The counters (primary changes, failovers) and the time-to-writable histogram
// count what this manager saw change between two statuses, kept in memory: a
// manager that starts after a failover does not count it again, and one
// restarted between a promotion and its next reconcile misses it (the
// FailedOver condition and Event still record it).
import type { Metrics, ObjectCounter, ObjectGauge, ObjectHistogram } from "@stateward/core";
import { findCondition } from "@stateward/core";
import { DEFAULT_MAX_LAG_SECONDS, type MySQLCluster, type MySQLClusterStatus } from "../api.ts";

/** Seconds from a failover's detection to a writable primary: most take seconds, a slow relay-log apply minutes. */
const TIME_TO_WRITABLE_BUCKETS = [1, 2, 5, 10, 20, 30, 60, 120, 300, 600];

type Failover = NonNullable<MySQLClusterStatus["lastFailover"]>;

interface Seen {
  primary: string | undefined;
  promotedAt: string | undefined;
  /** A failover seen promoted whose new primary was not writable yet: its time-to-writable is still to be observed. */
  awaitingWritable?: Failover;
}

export class ClusterMetrics {
  private readonly kind: ReturnType<Metrics["objects"]>;
  private readonly writable: ObjectGauge;
  private readonly maxLag: ObjectGauge;
  private readonly lag: ObjectGauge<"member">;
  private readonly thread: ObjectGauge<"member" | "thread">;
  private readonly primaryChanges: ObjectCounter;
  private readonly failovers: ObjectCounter;
  private readonly timeToWritable: ObjectHistogram;
  private readonly seen = new Map<string, Seen>();

  constructor(metrics: Metrics) {
    const m = (this.kind = metrics.objects("mysqlcluster"));
    this.writable = m.gauge("writable_primary", "1 while the cluster's primary accepts writes (condition Available True), 0 otherwise.");
    this.maxLag = m.gauge("max_lag_seconds", "spec.updateStrategy.maxLagSeconds: the lag up to which a replica counts as caught up.");
    this.lag = m.gauge("replication_lag_seconds", "Seconds each replica is behind the primary, as the server reports it (status.members[].lagSeconds).", ["member"]);
    this.thread = m.gauge("replication_thread_running", "1 while a replica's replication thread runs, 0 when it is stopped; thread is io (receiver) or sql (applier).", ["member", "thread"]);
    this.primaryChanges = m.counter("primary_changes_total", "Times status.currentPrimary changed to another server (switchovers and failovers) while this manager watched.");
    this.failovers = m.counter("failovers_total", "Failovers (a lost primary replaced: status.lastFailover changed) while this manager watched.");
    this.timeToWritable = m.histogram("failover_time_to_writable_seconds", "Per failover: seconds from the primary found lost (lastFailover.detectedAt) to the new primary accepting writes (Available turning True).", TIME_TO_WRITABLE_BUCKETS);
  }

  observe(cluster: MySQLCluster): void {
    const obj = cluster.metadata;
    const key = `${obj.namespace ?? ""}/${obj.name ?? ""}`;
    const status = cluster.status;
    const available = findCondition(status?.conditions, "Available");
    const writable = available?.status === "True";
    this.writable.set(obj, writable ? 1 : 0);
    this.maxLag.set(obj, cluster.spec.updateStrategy?.maxLagSeconds ?? DEFAULT_MAX_LAG_SECONDS);
    // Members come and go (scale-in): only the current ones have series.
    this.lag.clear(obj);
    this.thread.clear(obj);
    for (const member of status?.members ?? []) {
      if (member.role !== "replica") continue;
      if (member.lagSeconds !== undefined) this.lag.set(obj, member.lagSeconds, { member: member.name });
      this.thread.set(obj, member.ioThread ? 1 : 0, { member: member.name, thread: "io" });
      this.thread.set(obj, member.sqlThread ? 1 : 0, { member: member.name, thread: "sql" });
    }
    const failover = status?.lastFailover;
    const previous = this.seen.get(key);
    if (!previous) {
      // At zero from the first pass, so increase() sees the first failover. (Only then: zeroing a histogram resets it.)
      this.primaryChanges.inc(obj, 0);
      this.failovers.inc(obj, 0);
      this.timeToWritable.init(obj);
    }
    const now: Seen = { primary: status?.currentPrimary, promotedAt: failover?.promotedAt, awaitingWritable: previous?.awaitingWritable };
    if (previous) {
      if (previous.primary !== undefined && now.primary !== undefined && now.primary !== previous.primary) this.primaryChanges.inc(obj);
      if (failover && failover.promotedAt !== previous.promotedAt) {
        this.failovers.inc(obj);
        now.awaitingWritable = failover;
      }
    }
    const pending = now.awaitingWritable;
    // Writable since the promotion, not still from before it (a condition not yet rewritten).
    if (pending && writable && available && Date.parse(available.lastTransitionTime ?? "") >= Date.parse(pending.promotedAt)) {
      this.timeToWritable.observe(obj, Math.max(0, (Date.parse(available.lastTransitionTime ?? "") - Date.parse(pending.detectedAt)) / 1000));
      now.awaitingWritable = undefined;
    }
    this.seen.set(key, now);
  }

  forget(namespace: string, name: string): void {
    this.seen.delete(`${namespace}/${name}`);
    this.kind.forget({ namespace, name });
  }
}
