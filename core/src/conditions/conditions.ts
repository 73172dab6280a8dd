// Standard Kubernetes conditions (metav1.Condition), as operators write them
// into status: transition time changes only when the status does, and each
// condition records the generation it was computed for.
import { kubeTime } from "../client/index.ts";

export type ConditionStatus = "True" | "False" | "Unknown";

export interface Condition {
  type: string;
  status: ConditionStatus;
  /** CamelCase, machine-readable. */
  reason: string;
  /** Human-readable; a user should be able to act on it. */
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export type ConditionUpdate = Omit<Condition, "lastTransitionTime">;

/**
 * Returns a new condition list with `update` set. lastTransitionTime is kept
 * when the status did not change, so re-writing the same condition is a no-op
 * and a converged object produces no status writes.
 */
export function setCondition(conditions: readonly Condition[] | undefined, update: ConditionUpdate, now: Date = new Date()): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === update.type);
  const existing = i >= 0 ? list[i] : undefined;
  const next: Condition = {
    type: update.type,
    status: update.status,
    reason: update.reason,
    message: update.message,
    lastTransitionTime:
      existing && existing.status === update.status ? existing.lastTransitionTime : kubeTime(now),
    ...(update.observedGeneration !== undefined ? { observedGeneration: update.observedGeneration } : {}),
  };
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
}

export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === "True";
}
