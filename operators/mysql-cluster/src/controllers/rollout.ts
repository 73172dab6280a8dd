// The rolling update of a cluster, decided one step at a time from what is
// observed (pure: no I/O, unit-tested). A pod is "updated" when it runs the
// StatefulSet's update revision; the StatefulSet uses OnDelete, so nothing
// restarts unless the operator deletes a pod. The order a careful DBA keeps:
//
//   1. replicas, highest ordinal first (a broken one first of all: restarting
//      it with the new template is its fix), each back Ready — replicating and
//      caught up — before the next is touched; a pod that is not Ready by the
//      health-gate deadline pauses the rollout
//   2. a planned switchover to the most caught-up updated replica
//   3. the old primary, now a replica, restarted last
//
// Nothing is restarted while the primary does not answer: its replicas are
// not Ready then (not replicating), and would look broken; one of them is
// what a failover promotes.
//
// `spec.primary` asks for a switchover at any time; reverting the image makes
// the old revision the update revision again and runs the same sequence.

export interface RolloutMember {
  ordinal: number;
  name: string;
  role: "primary" | "replica";
  ready: boolean;
  /** Runs the update revision. */
  updated: boolean;
  /** Transactions executed, comparable between members (higher is more caught up). */
  progress?: bigint;
}

export interface InProgress {
  /** The pod restarted last. */
  pod: string;
  /** When it was deleted (ISO time). */
  startedAt: string;
  /** What it was when it was deleted; absent in a status written before the role was recorded. */
  role?: "primary" | "replica";
}

export interface RolloutInput {
  members: readonly RolloutMember[];
  /** Pods the spec asks for; a rollout waits while the StatefulSet has fewer or more. */
  desired: number;
  /** The ordinal the user asked to be primary (spec.primary), if any. */
  requestedPrimary?: number;
  inProgress?: InProgress;
  paused: boolean;
  /** The primary on record answers the operator. */
  primaryAnswers: boolean;
  /** Replicas whose seed (a copy of the primary's data) is running. */
  seeding?: readonly string[];
  healthGateSeconds: number;
  now: Date;
}

export type RolloutDecision =
  /** Every pod runs the update revision and the primary is where it should be. */
  | { kind: "complete" }
  /** A step is under way or the cluster is not in a state to take one: look again soon. */
  | { kind: "wait"; message: string }
  /** Stopped until the user acts: the condition's reason and an actionable message. */
  | { kind: "blocked"; reason: "Paused" | "HealthGateFailed" | "PrimaryNotEligible"; message: string; pod?: string }
  | { kind: "restart"; pod: string; ordinal: number; role: "primary" | "replica" }
  | { kind: "switchover"; from: RolloutMember; to: RolloutMember };

export function planRollout(input: RolloutInput): RolloutDecision {
  const { members } = input;
  const primary = members.find((m) => m.role === "primary");
  const outdated = members.filter((m) => !m.updated);
  const wantsSwitchover = input.requestedPrimary !== undefined && primary !== undefined && input.requestedPrimary !== primary.ordinal;
  if (outdated.length === 0 && !wantsSwitchover) return { kind: "complete" };

  // The pod restarted last must come back Ready (and updated) before anything else happens.
  const last = input.inProgress ? members.find((m) => m.name === input.inProgress?.pod) : undefined;
  if (input.inProgress && (!last || !last.ready)) {
    const deadline = new Date(input.inProgress.startedAt).getTime() + input.healthGateSeconds * 1000;
    const stale = last !== undefined && !last.updated;
    if (!stale) {
      if (input.now.getTime() > deadline) {
        return {
          kind: "blocked",
          reason: "HealthGateFailed",
          pod: input.inProgress.pod,
          message: `${input.inProgress.pod} did not become Ready (replicating and caught up) within ${input.healthGateSeconds} s of its restart; the rollout is paused. Fix the cause (kubectl describe pod ${input.inProgress.pod}), or revert the change to roll back`,
        };
      }
      return { kind: "wait", message: `waiting for ${input.inProgress.pod} to come back Ready` };
    }
  }
  if (input.paused) return { kind: "blocked", reason: "Paused", message: "updateStrategy.paused is set: no pod is restarted until it is cleared" };
  if (members.length !== input.desired) return { kind: "wait", message: `waiting for the cluster to have ${input.desired} servers before rolling` };
  if (!input.primaryAnswers) return { kind: "wait", message: `waiting for the primary${primary ? ` ${primary.name}` : ""} to answer: no server is restarted while it does not (a failover may need every replica)` };

  // A broken outdated pod first: the new template is its fix. Not one being seeded: it is not Ready
  // because its copy runs, and a restart would leave a partial copy on its volume. Otherwise
  // everyone else must be Ready.
  const seeding = new Set(input.seeding ?? []);
  const broken = outdated.filter((m) => !m.ready && m.role === "replica" && !seeding.has(m.name)).sort((a, b) => b.ordinal - a.ordinal)[0];
  if (broken) return { kind: "restart", pod: broken.name, ordinal: broken.ordinal, role: broken.role };
  const notReady = members.filter((m) => !m.ready);
  if (notReady.length > 0) {
    const named = notReady.map((m) => (seeding.has(m.name) ? `${m.name} (being seeded)` : m.name));
    return { kind: "wait", message: `waiting for ${named.join(", ")} to be Ready before the next step` };
  }

  const replica = outdated.filter((m) => m.role === "replica").sort((a, b) => b.ordinal - a.ordinal)[0];
  if (replica) return { kind: "restart", pod: replica.name, ordinal: replica.ordinal, role: "replica" };

  if (!primary) return { kind: "wait", message: "waiting for a primary" };
  if (!primary.updated || wantsSwitchover) {
    const candidates = members.filter((m) => m.role === "replica" && m.updated && m.ready);
    const requested = candidates.find((m) => m.ordinal === input.requestedPrimary);
    if (wantsSwitchover && primary.updated && !requested) {
      return { kind: "blocked", reason: "PrimaryNotEligible", message: `spec.primary ${input.requestedPrimary} is not an updated, Ready replica of the cluster; the primary stays ${primary.name}` };
    }
    const to = requested ?? [...candidates].sort((a, b) => compareProgress(b, a) || a.ordinal - b.ordinal)[0];
    if (to) return { kind: "switchover", from: primary, to };
    if (!primary.updated) {
      // A single server has nobody to switch over to: it is restarted in place (a short outage).
      if (members.length === 1) return { kind: "restart", pod: primary.name, ordinal: primary.ordinal, role: "primary" };
      return { kind: "wait", message: "waiting for an updated, Ready replica to switch over to" };
    }
  }
  return { kind: "complete" };
}

function compareProgress(a: RolloutMember, b: RolloutMember): number {
  const x = a.progress ?? 0n;
  const y = b.progress ?? 0n;
  return x > y ? 1 : x < y ? -1 : 0;
}
