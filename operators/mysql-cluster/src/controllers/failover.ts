// A lost primary replaced (issue: automatic failover without losing
// acknowledged writes). Runs when the primary on record does not answer:
//
//   detect    failover-detection.ts decides from how long it has not answered
//             (remembered here, in memory: a restarted manager starts counting
//             again, which only delays a failover) and a second signal;
//   report    Manual policy, or no candidate that keeps every acknowledged
//             write: the FailoverNeeded condition and a Warning Event;
//   promote   the candidate (replication/candidate.ts) applies what it
//             received (bounded), stops replicating, and is recorded in status
//             before anything else (recorded-decisions.ts); the role labels
//             move (the primary Service, and with it the published
//             MySQLInstance, follows). The next reconcile makes it writable
//             (members.ts: semi-sync on first), points the other replicas at
//             it, and a returning old primary rejoins as a replica unless it
//             holds transactions the new primary lacks.
//
// Fencing is by construction: every server starts read-only (my.cnf) and only
// the member in status.currentPrimary is made writable.
import { builtin, findCondition, isForbidden, isNotFound, kubeTime, messageOf, resourceType, type Clock, type ConditionUpdate, type KubeObject, type ReconcileContext } from "@stateward/core";
import type { Flavor } from "@stateward/mysql";
import { DEFAULT_ALLOW_DATA_LOSS, DEFAULT_DETECTION_SECONDS, DEFAULT_FAILOVER_POLICY, DEFAULT_REPLICAS, type MySQLCluster, type MySQLClusterStatus } from "../api.ts";
import { chooseCandidate, promotionSafety, receivedOf, type ReplicaProgress } from "../replication/candidate.ts";
import { appliedUpTo, boundedWait } from "../replication/catch-up.ts";
import { connectMember } from "../replication/members.ts";
import { readReplica, readServer, stopReplica } from "../replication/server.ts";
import { ROLE_LABEL, podName } from "../resources/names.ts";
import type { ClusterReconcilerDeps } from "./deps.ts";
import { semiSyncWasActive } from "./durability.ts";
import { detectPrimaryLoss, secondSignals, type NodeView } from "./failover-detection.ts";
import { clusterPods, type Pod } from "./pods.ts";
import { ignoreNotFound, memberError } from "./problems.ts";
import { DECISION_RECHECK_MS, type RecordedDecisions } from "./recorded-decisions.ts";

export const FAILOVER_NEEDED_CONDITION = "FailoverNeeded";
export const FAILED_OVER_CONDITION = "FailedOver";
/** How long the candidate may take to apply what it received before FailoverNeeded (CandidateApplying) says it is slow. */
const APPLY_RELAY_LOG_MS = 30_000;
/** While the candidate applies its relay log, it is looked at this often: not waited for in the worker. */
const APPLY_RECHECK_MS = 200;
/** Nodes are cluster-scoped, read by name (get only), never cached. */
const NODE = resourceType("v1", "Node", "nodes", false);
/** While the primary does not answer, the cluster is looked at this often: detection is counted in seconds. */
const SUSPECT_REQUEUE_MS = 1_000;

type Update = Omit<ConditionUpdate, "observedGeneration">;
type Deps = Pick<ClusterReconcilerDeps, "client" | "cache" | "connector" | "events" | "clock">;

export interface FailoverInput {
  d: Deps;
  decisions: RecordedDecisions;
  cluster: MySQLCluster;
  pods: Map<number, Pod>;
  primaryOrdinal: number;
  /** Why the primary does not answer; undefined when it does. */
  primaryError: string | undefined;
  flavor: Flavor;
  ctx: ReconcileContext;
}

export interface FailoverOutcome {
  /** The primary moved: the reconcile ends here, the next one starts from the new primary. */
  moved?: boolean;
  /** The candidate is applying its relay log: the reconcile ends here and looks again soon (requeueAfter). */
  promoting?: boolean;
  /** FailoverNeeded, when there is something (new) to say. */
  condition?: Update;
  requeueAfter?: number;
}

/** The FailedOver condition, from status.lastFailover. */
export function failedOverCondition(last: MySQLClusterStatus["lastFailover"]): Update | undefined {
  if (!last) return undefined;
  return { type: FAILED_OVER_CONDITION, status: "True", reason: "PrimaryLost", message: `${last.from} was lost (detected ${last.detectedAt}); ${last.to} was promoted at ${last.promotedAt}${last.position ? ` with ${last.position}` : ""}${last.dataLoss ? `; lost: ${last.dataLoss}` : ""}` };
}

/** Servers kept out of the cluster for holding transactions the primary lacks (see members.ts). */
export function errantCondition(errant: { pod: string; gtids: string[] }[], previous: { status: string } | undefined): Update | undefined {
  if (errant.length > 0) {
    return { type: "ErrantTransactions", status: "True", reason: "NotRejoined", message: errant.map((e) => `${e.pod} holds ${e.gtids.join(", ")}, which the primary lacks: it is not rejoined (read-only); inspect it, then delete its pod and volume to reseed it`).join("; ") };
  }
  return previous?.status === "True" ? { type: "ErrantTransactions", status: "False", reason: "None", message: "every server follows the primary's history" } : undefined;
}

/** How long the primary of each cluster has not answered: the detection clock. */
export class FailoverWatch {
  private readonly clock: Clock;
  private readonly unreachable = new Map<string, { pod: string; since: Date }>();
  /** The candidate being promoted, per cluster, and since when it is waited for (its relay log applied). */
  private readonly applying = new Map<string, { candidate: string; since: Date }>();
  /** The API server refused to let the operator read Nodes (logged once). */
  private nodeReadRefused = false;

  constructor(clock: Clock) {
    this.clock = clock;
  }

  /**
   * The primary's Node, read only while the primary does not answer (one get a second at most):
   * null when it is gone, undefined when it cannot be read — without the permission (a chart
   * installed without the node-reader ClusterRole) the signal is missing, which only delays a
   * failover until another signal agrees; said once in the log.
   */
  private async readNode(f: FailoverInput, nodeName: string | undefined): Promise<NodeView | null | undefined> {
    if (!nodeName) return undefined;
    try {
      return await f.d.client.get<NodeView & KubeObject>(NODE, undefined, nodeName);
    } catch (err) {
      if (isNotFound(err)) return null;
      if (!this.nodeReadRefused) f.ctx.log.info("the primary's node cannot be read: its Ready condition is not used as a signal", { node: nodeName, error: messageOf(err) });
      if (isForbidden(err)) this.nodeReadRefused = true;
      return undefined;
    }
  }

  forget(namespace: string, name: string): void {
    this.unreachable.delete(`${namespace}/${name}`);
    this.applying.delete(`${namespace}/${name}`);
  }

  async check(f: FailoverInput): Promise<FailoverOutcome> {
    const { d, cluster, pods, primaryOrdinal, ctx } = f;
    const name = cluster.metadata.name ?? "";
    const ns = cluster.metadata.namespace ?? "";
    const key = `${ns}/${name}`;
    const primaryName = podName(name, primaryOrdinal);
    const previous = findCondition(cluster.status?.conditions, FAILOVER_NEEDED_CONDITION);
    if (f.primaryError === undefined) {
      this.forget(ns, name);
      return previous?.status === "True" ? { condition: { type: FAILOVER_NEEDED_CONDITION, status: "False", reason: "PrimaryReachable", message: `${primaryName} answers` } } : {};
    }
    // A primary never seen answering (a new cluster's first server still starting) is not lost: it never was there.
    const lastKnownPrimary = cluster.status?.members?.find((m) => m.name === primaryName)?.gtidExecuted;
    if (lastKnownPrimary === undefined) return {};
    const now = this.clock.now();
    const seen = this.unreachable.get(key);
    const since = seen?.pod === primaryName ? seen.since : now;
    this.unreachable.set(key, { pod: primaryName, since });

    const replicas = await observeReplicas(f);
    const detection = detectPrimaryLoss({
      now,
      unreachableSince: since,
      detectionSeconds: cluster.spec.failover?.detectionSeconds ?? DEFAULT_DETECTION_SECONDS,
      signals: secondSignals(
        pods.get(primaryOrdinal),
        await this.readNode(f, pods.get(primaryOrdinal)?.spec?.nodeName),
        replicas.flatMap((r) => (r.kind === "reachable" ? [r.ioRunning] : [])),
      ),
      rollout: rolloutInProgress(cluster),
      primary: primaryName,
      error: f.primaryError,
    });
    if (detection.kind !== "lost") {
      if (detection.kind === "suspect") ctx.log.info("primary does not answer", { pod: primaryName, message: detection.message });
      return { requeueAfter: SUSPECT_REQUEUE_MS };
    }
    const needed = async (reason: string, message: string): Promise<FailoverOutcome> => {
      if (previous?.reason !== reason || previous.status !== "True") {
        ctx.log.info("failover needed", { reason, message });
        await d.events.record(cluster, "Warning", FAILOVER_NEEDED_CONDITION, message);
      }
      return { condition: { type: FAILOVER_NEEDED_CONDITION, status: "True", reason, message }, requeueAfter: SUSPECT_REQUEUE_MS * 5 };
    };
    const policy = cluster.spec.failover?.policy ?? DEFAULT_FAILOVER_POLICY;
    const requested = cluster.spec.primary !== undefined && cluster.spec.primary !== primaryOrdinal ? cluster.spec.primary : undefined;
    if (policy === "Manual" && requested === undefined) {
      return needed("PrimaryLost", `${detection.message}; failover.policy is Manual: set spec.primary to a replica's ordinal to promote it`);
    }
    const progress = replicas.flatMap((r) => (r.kind === "reachable" ? [r.progress] : []));
    const choice = chooseCandidate(f.flavor, progress, requested);
    if (choice.kind === "none") return needed("NoCandidate", `${detection.message}; no replica can be promoted: ${choice.message}`);
    const candidate = choice.replica;
    const safety = promotionSafety(f.flavor, candidate, {
      semiSyncActive: semiSyncWasActive(cluster),
      unreachableReplicas: replicas.flatMap((r) => (r.kind === "unreachable" ? [r.name] : [])),
      lastKnownPrimary,
      oldPrimary: primaryName,
    });
    const allowDataLoss = cluster.spec.failover?.allowDataLoss ?? DEFAULT_ALLOW_DATA_LOSS;
    if (!safety.safe && !allowDataLoss) {
      return needed("NoSafeCandidate", `${detection.message}; promoting ${candidate.name} may lose ${safety.mayLose}. Bring ${primaryName} (or the missing replica) back, or set failover.allowDataLoss: true to promote ${candidate.name} anyway`);
    }
    return this.promote(f, candidate, now, detection.message, safety.safe ? safety.note : `forced by failover.allowDataLoss: may lose ${safety.mayLose}`, safety.mayLose, needed);
  }

  private async promote(
    f: FailoverInput,
    candidate: ReplicaProgress,
    detectedAt: Date,
    why: string,
    loss: string,
    dataLoss: string | undefined,
    needed: (reason: string, message: string) => Promise<FailoverOutcome>,
  ): Promise<FailoverOutcome> {
    const { d, cluster, pods, primaryOrdinal, ctx } = f;
    const name = cluster.metadata.name ?? "";
    const ns = cluster.metadata.namespace ?? "";
    const oldName = podName(name, primaryOrdinal);
    const key = `${ns}/${name}`;
    const conn = await connectMember(d.connector, cluster, candidate.ordinal, pods.get(candidate.ordinal)?.metadata.uid ?? "");
    // Everything it received is applied before it takes writes: the relay log is the last of the old primary.
    // Looked at once per reconcile, never waited for in the worker: a requeue looks again.
    const seen = this.applying.get(key);
    const since = seen?.candidate === candidate.name ? seen.since : detectedAt;
    const { applied, executed } = await appliedUpTo(conn, candidate.received);
    if (!applied) {
      this.applying.set(key, { candidate: candidate.name, since });
      const wait = boundedWait(since, d.clock.now(), APPLY_RELAY_LOG_MS);
      if (wait.kind === "waiting") {
        if (seen?.candidate !== candidate.name) ctx.log.info("failover candidate applying its relay log", { candidate: candidate.name, received: candidate.received, executed });
        return { promoting: true, requeueAfter: Math.min(APPLY_RECHECK_MS, Math.max(wait.leftMs, 1)) };
      }
      return needed("CandidateApplying", `${why}; ${candidate.name} has not applied what it received (${candidate.received}; applied ${executed}) after ${APPLY_RELAY_LOG_MS / 1000} s: promoted once it has`);
    }
    ctx.signal.throwIfAborted();
    // Detected when this candidate's promotion began (the reconciles that waited for its relay log came after).
    const lastFailover = { from: oldName, to: candidate.name, detectedAt: kubeTime(since), promotedAt: kubeTime(d.clock.now()), position: executed, ...(dataLoss ? { dataLoss } : {}) };
    // On record before anything changes on a server or a label: every later reconcile (and a new leader)
    // starts from it; the old primary is never made writable again. Only then is its replication reset:
    // a candidate reset before a decision that failed to land would be a replica no more, and no longer a
    // candidate — the best one left out, or no failover at all. (Stopped here, a later reconcile's
    // preparePrimary stops it.)
    await f.decisions.record(d, cluster, { currentPrimary: candidate.name, lastFailover }, (s) => s.currentPrimary === candidate.name);
    await stopReplica(conn);
    await d.client.patch(builtin.pod, ns, candidate.name, { metadata: { labels: { [ROLE_LABEL]: "primary" } } }).catch(ignoreNotFound);
    await d.client.patch(builtin.pod, ns, oldName, { metadata: { labels: { [ROLE_LABEL]: "replica" } } }).catch(ignoreNotFound);
    this.forget(ns, name);
    ctx.log.info("failed over", { from: oldName, to: candidate.name, position: executed });
    await d.events.record(cluster, "Warning", "FailedOver", `${candidate.name} is the primary (was ${oldName}, lost: ${why}); detected ${lastFailover.detectedAt}, promoted ${lastFailover.promotedAt} at ${executed || "an empty position"}; ${loss}`);
    return { moved: true, requeueAfter: DECISION_RECHECK_MS };
  }
}

type ReplicaView = { kind: "reachable"; name: string; ioRunning: boolean; progress: ReplicaProgress } | { kind: "unreachable"; name: string };

/**
 * Each other server that is set up as a replica: what it received and applied, and whether its I/O
 * thread is connected. A server whose pod is being deleted (evicted from a lost node, it stays
 * Terminating) counts as unreachable, not absent: it may be the replica that acknowledged the last
 * commits, and leaving it out would call a promotion safe once its pod was evicted.
 */
async function observeReplicas(f: FailoverInput): Promise<ReplicaView[]> {
  const name = f.cluster.metadata.name ?? "";
  const out: ReplicaView[] = [];
  const terminating = clusterPods(f.d, f.cluster, "terminating");
  for (const ordinal of [...new Set([...f.pods.keys(), ...terminating.keys()])].sort((a, b) => a - b)) {
    if (ordinal === f.primaryOrdinal) continue;
    const pName = podName(name, ordinal);
    const pod = f.pods.get(ordinal);
    if (!pod) {
      out.push({ kind: "unreachable", name: `${pName} (its pod is being deleted)` });
      continue;
    }
    try {
      const conn = await connectMember(f.d.connector, f.cluster, ordinal, pod.metadata.uid ?? "");
      const replica = await readReplica(conn);
      // A server never set up as a replica (still seeding, just created) has nothing of the primary's to offer.
      if (!replica.configured) continue;
      const state = await readServer(conn);
      out.push({ kind: "reachable", name: pName, ioRunning: replica.ioRunning, progress: { ordinal, name: pName, received: receivedOf(replica.received, state.gtidExecuted), executed: state.gtidExecuted } });
    } catch (err) {
      out.push({ kind: "unreachable", name: `${pName} (${memberError(err)})` });
    }
  }
  return out;
}

/**
 * The rollout step in progress, with the role of the pod it restarted. A step recorded before
 * the role was: only a single server is restarted in place, so a one-server cluster's was the primary's.
 */
function rolloutInProgress(cluster: MySQLCluster): { pod: string; role: "primary" | "replica" } | undefined {
  const step = cluster.status?.rollout;
  if (!step) return undefined;
  return { pod: step.pod, role: step.role ?? ((cluster.spec.replicas ?? DEFAULT_REPLICAS) === 1 ? "primary" : "replica") };
}
