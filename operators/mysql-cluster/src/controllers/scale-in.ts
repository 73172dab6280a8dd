// Step 4 of a reconcile, decided: how many servers the StatefulSet keeps when
// spec.replicas asks for fewer than there are. The leaving ordinals (the
// highest) have their replication stopped and reset, then their pods go —
// unless one of them may be needed:
//
//   primary leaving      kept until a switchover moved the primary to a server
//                        that stays (rollout-step.ts, moveOffLeavingPrimary);
//   no primary on record kept: a leaving server may be the one with the newest
//                        writes, and the primary is chosen among all of them
//                        (primary.ts);
//   primary not answering kept until a primary answers (the one on record
//                        again, or the one a failover promoted): under
//                        semi-sync a leaving replica may be the only server
//                        that received the writes the lost primary
//                        acknowledged, and a replica whose replication was
//                        reset is no candidate any more — the failover would
//                        promote a less complete one and call it safe. The
//                        ScaleInHeld condition and a Warning Event say so.
import type { ConditionUpdate } from "@stateward/core";
import { podName } from "../resources/names.ts";

export const SCALE_IN_HELD_CONDITION = "ScaleInHeld";

type Update = Omit<ConditionUpdate, "observedGeneration">;

export interface ScaleInFacts {
  /** The cluster's name. */
  name: string;
  /** The servers there are (the StatefulSet's replicas, or the pods while it is being replaced). */
  current: number;
  /** spec.replicas. */
  desired: number;
  /** The primary on record; undefined when status names none. */
  primaryOrdinal: number | undefined;
  /** Why the primary on record does not answer a statement; undefined when it does. */
  primaryProblem: string | undefined;
}

export interface ScaleInPlan {
  /** The StatefulSet's replicas: ordinals from here on leave now. */
  replicas: number;
  /** The primary is among the leaving ordinals: a switchover to a staying replica comes first. */
  primaryLeaving: boolean;
  /** Why leaving servers are kept while the primary does not answer (the ScaleInHeld condition's message). */
  heldBecause?: string;
}

export function planScaleIn(f: ScaleInFacts): ScaleInPlan {
  const { current, desired, primaryOrdinal } = f;
  const shrinking = current > desired;
  const primaryLeaving = primaryOrdinal !== undefined && desired <= primaryOrdinal && shrinking;
  const primaryAway = primaryOrdinal !== undefined && f.primaryProblem !== undefined && shrinking;
  const keep = primaryLeaving || primaryAway || (primaryOrdinal === undefined && shrinking);
  return {
    replicas: keep ? current : desired,
    primaryLeaving,
    ...(primaryAway
      ? {
          heldBecause:
            `scaling in to ${desired} waits: the primary ${podName(f.name, primaryOrdinal)} does not answer (${f.primaryProblem}); ` +
            `a leaving replica may hold the only copy of writes it acknowledged, so none is removed until a primary answers (it, or one a failover promotes)`,
        }
      : {}),
  };
}

/** The ScaleInHeld condition: True while a scale-in waits for the primary; False once it went on (only after it was True). */
export function scaleInCondition(plan: ScaleInPlan, previous: { status: string } | undefined): Update | undefined {
  if (plan.heldBecause !== undefined) return { type: SCALE_IN_HELD_CONDITION, status: "True", reason: "PrimaryNotAnswering", message: plan.heldBecause };
  return previous?.status === "True" ? { type: SCALE_IN_HELD_CONDITION, status: "False", reason: "PrimaryAnswers", message: "a primary answers: nothing holds a scale-in back" } : undefined;
}
