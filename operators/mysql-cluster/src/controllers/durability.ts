// What the cluster's SemiSync condition says: whether a commit the primary
// acknowledges is on a replica too (the failover's no-loss promise), or why
// not. A fallback to asynchronous replication is never silent: a Warning Event
// when it starts, a Normal one when acknowledgements are back.
import type { Condition, ConditionUpdate, EventRecorder } from "@stateward/core";
import { findCondition } from "@stateward/core";
import { DEFAULT_REPLICATION_MODE, DEFAULT_SEMI_SYNC_TIMEOUT_SECONDS, type MySQLCluster } from "../api.ts";
import { semiSyncApplies, type SemiSyncState, type SemiSyncWish } from "../replication/semi-sync.ts";

export const SEMI_SYNC_CONDITION = "SemiSync";

type Update = Omit<ConditionUpdate, "observedGeneration">;

/** The primary's semi-sync side as the spec and the cluster's size want it. */
export function semiSyncWish(cluster: MySQLCluster, flavor: "MariaDB" | "MySQL", servers: number): SemiSyncWish {
  const replication = cluster.spec.replication ?? {};
  return {
    enabled: semiSyncApplies(replication.mode ?? DEFAULT_REPLICATION_MODE, flavor, servers),
    timeoutMs: (replication.semiSyncTimeoutSeconds ?? DEFAULT_SEMI_SYNC_TIMEOUT_SECONDS) * 1000,
  };
}

/** The SemiSync condition from the spec and the primary's state (undefined: the primary did not answer — nothing new to say). */
export function semiSyncCondition(cluster: MySQLCluster, flavor: "MariaDB" | "MySQL", servers: number, state: SemiSyncState | undefined): Update | undefined {
  const mode = cluster.spec.replication?.mode ?? DEFAULT_REPLICATION_MODE;
  if (mode === "Async") return { type: SEMI_SYNC_CONDITION, status: "False", reason: "Async", message: "replication.mode is Async: commits do not wait for a replica; a failover may lose the last acknowledged writes" };
  if (flavor !== "MariaDB") return { type: SEMI_SYNC_CONDITION, status: "False", reason: "Unsupported", message: "semi-synchronous replication is managed for MariaDB only: this cluster replicates asynchronously" };
  if (servers < 2) return { type: SEMI_SYNC_CONDITION, status: "False", reason: "NoReplicas", message: "a single server has no replica to acknowledge its commits: asynchronous until the cluster has 2 or more servers" };
  if (!state) return undefined;
  if (!state.enabled) return { type: SEMI_SYNC_CONDITION, status: "False", reason: "WaitingForReplica", message: "semi-synchronous replication is turned on at the primary once a replica replicates" };
  if (!state.active) {
    return {
      type: SEMI_SYNC_CONDITION,
      status: "False",
      reason: "FellBackToAsync",
      message: `no replica acknowledged a commit within ${cluster.spec.replication?.semiSyncTimeoutSeconds ?? DEFAULT_SEMI_SYNC_TIMEOUT_SECONDS} s: the primary commits asynchronously (a failover now may lose acknowledged writes) until a replica catches up; ${state.clients} replica(s) connected with acknowledgements on`,
    };
  }
  return { type: SEMI_SYNC_CONDITION, status: "True", reason: "Acknowledged", message: `every commit waits for a replica's acknowledgement; ${state.clients} replica(s) acknowledging` };
}

/** Whether the last status said every acknowledged commit was on a replica. */
export function semiSyncWasActive(cluster: MySQLCluster): boolean {
  return findCondition(cluster.status?.conditions, SEMI_SYNC_CONDITION)?.status === "True";
}

/** The Events of a change of the condition: the fallback and the recovery. */
export async function reportSemiSyncChange(events: EventRecorder, cluster: MySQLCluster, previous: Condition | undefined, next: Update | undefined): Promise<void> {
  if (!next || previous?.reason === next.reason) return;
  if (next.reason === "FellBackToAsync") await events.record(cluster, "Warning", "SemiSyncFellBack", next.message);
  else if (next.reason === "Acknowledged" && previous?.reason === "FellBackToAsync") await events.record(cluster, "Normal", "SemiSyncRestored", next.message);
}
