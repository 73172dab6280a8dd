// When a primary that does not answer counts as lost. One signal is not
// enough — a restart, a network blip or a busy operator all look like an
// unreachable server for a moment — so two are needed:
//
//   the operator has not reached it for failover.detectionSeconds, and
//   something else agrees: its pod is gone or not Ready, its container is not
//   running, or no replica's I/O thread is connected to it;
//   never while a rollout is under way (status.rollout): the operator
//   restarts pods itself then, and waits for them at its health gate.
//
// Pure: controllers/failover.ts observes and acts.

export interface DetectionInput {
  now: Date;
  /** Since when the operator has not reached the primary; undefined: it answered. */
  unreachableSince: Date | undefined;
  detectionSeconds: number;
  /** The second signals observed, in words ("its pod is not Ready"). */
  signals: string[];
  /** The rollout step in progress (status.rollout), if any. */
  rollout: { pod: string } | undefined;
  primary: string;
  /** Why the primary does not answer (its member's message). */
  error: string;
}

export type Detection =
  | { kind: "healthy" }
  /** Not (yet) lost: looked at again soon. */
  | { kind: "suspect"; message: string }
  | { kind: "lost"; message: string };

export function detectPrimaryLoss(input: DetectionInput): Detection {
  const { unreachableSince, primary } = input;
  if (!unreachableSince) return { kind: "healthy" };
  if (input.rollout) return { kind: "suspect", message: `${primary} does not answer (${input.error}) during a rollout (restarting ${input.rollout.pod}): not failed over, the rollout's health gate watches it` };
  const seconds = Math.floor((input.now.getTime() - unreachableSince.getTime()) / 1000);
  if (seconds < input.detectionSeconds) return { kind: "suspect", message: `${primary} has not answered for ${seconds} s (${input.error}); lost after ${input.detectionSeconds} s with a second signal` };
  if (input.signals.length === 0) {
    return { kind: "suspect", message: `${primary} has not answered for ${seconds} s (${input.error}), but its pod is Ready and replicas are still connected to it: not counted as lost` };
  }
  return { kind: "lost", message: `${primary} has not answered for ${seconds} s (${input.error}) and ${input.signals.join(", ")}` };
}
