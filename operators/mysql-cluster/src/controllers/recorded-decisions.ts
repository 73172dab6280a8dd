// Decisions written into status before they are acted on: the primary chosen
// or switched to, the pod a rollout is about to restart. Right after such a
// write the cache may still hold the cluster without it, and a reconcile
// started from that copy would act on what the decision replaced (make the
// old primary writable again, restart a second pod). So each decision is
// remembered until the cache shows it, and a reconcile of the cluster is put
// off meanwhile — not by waiting in the worker: the watch event of the write
// brings the cluster back (a short requeue is the fallback). A decision the
// cache still lacks after DECISION_VISIBLE_WITHIN_MS is let go, and the
// reconcile goes on from the cache.
import { writeStatus, type Clock, type KubeClient } from "@stateward/core";
import { MySQLClusterKind, type MySQLCluster, type MySQLClusterStatus } from "../api.ts";

const RT = MySQLClusterKind.resource;
/** How long the cache may lag behind a decision before reconciles go on without it (a watch event normally takes milliseconds). */
export const DECISION_VISIBLE_WITHIN_MS = 10_000;
/** How soon a put-off reconcile is tried again when no watch event came first. */
export const DECISION_RECHECK_MS = 100;
/** Attempts of the status write when others write the cluster at the same time. */
const WRITE_ATTEMPTS = 6;

interface Pending {
  inCache: (status: MySQLClusterStatus) => boolean;
  untilMs: number;
}

export class RecordedDecisions {
  private readonly clock: Clock;
  private readonly pending = new Map<string, Pending[]>();

  constructor(clock: Clock) {
    this.clock = clock;
  }

  private static key(cluster: MySQLCluster): string {
    return `${cluster.metadata.namespace ?? ""}/${cluster.metadata.name ?? ""}`;
  }

  /**
   * Writes `fields` into the cluster's status from a fresh read (so a stale
   * cache cannot make it fail) and remembers the decision until `inCache`
   * holds for the cached status.
   */
  async record(d: { client: KubeClient }, cluster: MySQLCluster, fields: Partial<MySQLClusterStatus>, inCache: (status: MySQLClusterStatus) => boolean): Promise<void> {
    const ns = cluster.metadata.namespace ?? "";
    const name = cluster.metadata.name ?? "";
    const live = await d.client.get<MySQLCluster>(RT, ns, name);
    await writeStatus(d.client, RT, live, (c) => ({ ...c.status, ...fields }), { attempts: WRITE_ATTEMPTS });
    this.expect(cluster, inCache);
  }

  /** Remembers a decision already written, until the cached status shows it. */
  expect(cluster: MySQLCluster, inCache: (status: MySQLClusterStatus) => boolean): void {
    const key = RecordedDecisions.key(cluster);
    this.pending.set(key, [...(this.pending.get(key) ?? []), { inCache, untilMs: this.clock.now().getTime() + DECISION_VISIBLE_WITHIN_MS }]);
  }

  /** Whether a decision recorded for this cluster is not in `cached` (the cluster as the cache has it) yet, and not given up on: the reconcile must wait. */
  unseen(cached: MySQLCluster): boolean {
    const key = RecordedDecisions.key(cached);
    const pending = this.pending.get(key);
    if (!pending) return false;
    const now = this.clock.now().getTime();
    const status = cached.status ?? {};
    const left = pending.filter((p) => now < p.untilMs && !p.inCache(status));
    if (left.length === 0) this.pending.delete(key);
    else this.pending.set(key, left);
    return left.length > 0;
  }

  /** The cluster is gone. */
  forget(namespace: string, name: string): void {
    this.pending.delete(`${namespace}/${name}`);
  }
}
