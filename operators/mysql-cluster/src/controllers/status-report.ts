// Step 8 of a reconcile, the part that decides: what the cluster's status
// says, from what this reconcile observed — phase, counts, the Ready,
// Available and Replicating conditions, and how soon to look again. Pure: the
// reconciler writes it (writeStatus, which skips an unchanged status).
import type { ConditionUpdate } from "@stateward/core";
import type { Flavor } from "@stateward/mysql";
import { CONVERGING_REQUEUE_MS, STEADY_REQUEUE_MS, type MemberStatus, type MySQLClusterStatus } from "../api.ts";
import { ordinalOf, podName, selectorString } from "../resources/names.ts";
import { STORAGE_CONDITION } from "./volumes.ts";

type Condition = Omit<ConditionUpdate, "observedGeneration">;
type Phase = NonNullable<MySQLClusterStatus["phase"]>;

/** What the rollout step contributes to the status. */
export interface RolloutOutcome {
  fields: Partial<MySQLClusterStatus>;
  condition: Condition;
  /** A rollout step is under way (phase Upgrading). */
  rolling: boolean;
  requeueAfter?: number;
}

/** What a reconcile observed, as the status report needs it. */
export interface ClusterFacts {
  /** The cluster's name. */
  name: string;
  /** spec.replicas. */
  desired: number;
  /** The phase in status before this reconcile. */
  previousPhase: MySQLClusterStatus["phase"];
  /** Each server that has a pod, by ordinal — and a primary whose pod is gone, while its last position is on record. */
  members: MemberStatus[];
  /** The servers that have a pod (status.replicas); all the members when not given. */
  withPods?: number;
  /** The primary's server, when connected. */
  primaryServer?: { flavor: Flavor; version: string };
  rollout: RolloutOutcome;
  /** Conditions of other steps (StorageResized, Seeding); undefined: nothing to say. */
  extra: (Condition | undefined)[];
}

export interface StatusReport {
  phase: Phase;
  fields: Partial<MySQLClusterStatus>;
  /** The Ready condition. */
  ready: Omit<ConditionUpdate, "type" | "observedGeneration">;
  others: Condition[];
  /** The Ready condition's message (also the Running Event's). */
  message: string;
  requeueAfter: number;
}

/** The phase while no primary is writable: a cluster that ran is Degraded, one that never did is still Provisioning. */
export function phaseWithoutPrimary(previous: MySQLClusterStatus["phase"]): Phase {
  return previous === "Running" || previous === "Degraded" ? "Degraded" : "Provisioning";
}

export function statusReport(facts: ClusterFacts): StatusReport {
  const { name, desired, members, rollout } = facts;
  const ready = members.filter((s) => s.ready).length;
  const primary = members.find((s) => s.role === "primary");
  const replicas = members.filter((s) => s.role === "replica");
  const phase: Phase =
    rollout.rolling && primary?.ready && members.length === desired
      ? "Upgrading"
      : ready === desired && members.length === desired
        ? "Running"
        : !primary?.ready
          ? phaseWithoutPrimary(facts.previousPhase)
          : members.length !== desired
            ? "Scaling"
            : "Degraded";
  const notReady = members.filter((s) => !s.ready).map((s) => `${s.name}: ${s.message ?? "not ready"}`);
  const missing = desired - members.length;
  const message =
    phase === "Running"
      ? `${ready}/${desired} servers ready; ${podName(name, ordinalOf(name, primary?.name ?? "") ?? 0)} is the primary`
      : [...notReady, ...(missing > 0 ? [`${missing} server(s) not created yet`] : [])].join("; ") || "converging";
  const others: Condition[] = [
    primary?.ready
      ? { type: "Available", status: "True", reason: "PrimaryWritable", message: `${primary.name} accepts writes` }
      : { type: "Available", status: "False", reason: "PrimaryUnavailable", message: primary ? `${primary.name}: ${primary.message ?? "not writable"}` : "the primary pod does not exist yet" },
    replicas.length === 0
      ? { type: "Replicating", status: "True", reason: "NoReplicas", message: "the cluster has no replicas" }
      : replicas.every((r) => r.ioThread && r.sqlThread)
        ? { type: "Replicating", status: "True", reason: "ReplicationRunning", message: `${replicas.length} replica(s) replicating` }
        : { type: "Replicating", status: "False", reason: "ReplicationStopped", message: replicas.filter((r) => !(r.ioThread && r.sqlThread)).map((r) => `${r.name}: ${r.message ?? "not replicating"}`).join("; ") },
    rollout.condition,
    ...facts.extra.filter((c) => c !== undefined),
  ];
  // Volumes growing are looked at often; a refused expansion only at the steady pace (the StorageClass may be fixed meanwhile).
  const resizing = facts.extra.some((c) => c?.type === STORAGE_CONDITION && c.reason === "Expanding");
  return {
    phase,
    fields: {
      phase,
      replicas: facts.withPods ?? members.length,
      readyReplicas: ready,
      ready: `${ready}/${desired}`,
      selector: selectorString(name),
      ...(primary ? { currentPrimary: primary.name } : {}),
      ...(facts.primaryServer ? { flavor: facts.primaryServer.flavor, serverVersion: facts.primaryServer.version } : {}),
      members,
      ...rollout.fields,
    },
    ready: phase === "Running" ? { status: "True", reason: "Running", message } : { status: "False", reason: phase, message },
    others,
    message,
    requeueAfter: Math.min(rollout.requeueAfter ?? STEADY_REQUEUE_MS, phase === "Running" && !resizing ? STEADY_REQUEUE_MS : CONVERGING_REQUEUE_MS),
  };
}
