// When a primary that does not answer counts as lost. One signal is not
// enough — a restart, a network blip or a busy operator all look like an
// unreachable server for a moment — so two are needed:
//
//   the operator has not reached it for failover.detectionSeconds, and
//   something else agrees (secondSignals): its pod is gone or not Ready, its
//   container is not running, its node is not Ready, or no replica's I/O
//   thread is connected to it;
//   never while the rollout's step is the primary's own restart
//   (status.rollout names it with role primary: a single server restarted
//   in place), which the rollout's health gate watches. A rollout
//   restarting a replica, or stopped at its health gate, does not hold a
//   failover back: the primary it lost is not one the rollout took down —
//   not even when the replica it restarted last is the primary by now (a
//   switchover or a failover to it): that pod's restart is long over.
//   (A status written before the role was recorded: failover.ts takes the
//   role from the cluster's size — only a single server is restarted in
//   place.)
//
// Pure: controllers/failover.ts observes and acts.
//
// "Something else" must not be the operator's own view: while the primary
// does not answer, the operator sets its readiness gate False, and a kubelet
// then turns the pod not Ready with reason ReadinessGatesNotReady — that pod
// condition only repeats the first signal and does not count. The node
// controller, which marks a lost node's pods not Ready, leaves a condition
// that is already False as it is, so such a pod shows nothing of its node:
// the Node's own Ready condition is read instead (a cluster-wide get of
// Nodes; without that permission the signal is simply missing).

/** The kubelet's reason for a pod that is not Ready only because a readiness gate is not True. */
export const READINESS_GATES_NOT_READY = "ReadinessGatesNotReady";

export interface PodView {
  status?: { conditions?: { type: string; status: string; reason?: string }[]; containerStatuses?: { state?: { running?: unknown } }[] };
}

export interface NodeView {
  metadata: { name?: string };
  status?: { conditions?: { type: string; status: string; reason?: string }[] };
}

/** What else says the primary is gone, besides the operator not reaching it. `node`: undefined when it could not be read (no permission), null when it does not exist. */
export function secondSignals(pod: PodView | undefined, node: NodeView | null | undefined, replicasIoRunning: boolean[]): string[] {
  const signals: string[] = [];
  if (!pod) signals.push("its pod is gone");
  else {
    const ready = pod.status?.conditions?.find((c) => c.type === "Ready");
    const containers = pod.status?.conditions?.find((c) => c.type === "ContainersReady");
    if (containers?.status === "False") signals.push("its containers are not ready");
    else if (ready?.status === "False" && ready.reason !== READINESS_GATES_NOT_READY) signals.push("its pod is not Ready");
    const container = pod.status?.containerStatuses?.[0];
    if (container && !container.state?.running) signals.push("its container is not running");
  }
  if (node === null) signals.push("its node is gone");
  else if (node) {
    const ready = node.status?.conditions?.find((c) => c.type === "Ready");
    if (ready && ready.status !== "True") signals.push(`its node ${node.metadata.name ?? ""} is not Ready (${ready.status}${ready.reason ? `, ${ready.reason}` : ""})`);
  }
  if (replicasIoRunning.length > 0 && replicasIoRunning.every((io) => !io)) signals.push("no replica is connected to it");
  return signals;
}

export interface DetectionInput {
  now: Date;
  /** Since when the operator has not reached the primary; undefined: it answered. */
  unreachableSince: Date | undefined;
  detectionSeconds: number;
  /** The second signals observed, in words ("its pod is not Ready"). */
  signals: string[];
  /** The rollout step in progress (status.rollout), if any: the pod it restarted last, and what it was then. */
  rollout: { pod: string; role?: "primary" | "replica" } | undefined;
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
  if (input.rollout?.pod === primary && input.rollout.role === "primary") return { kind: "suspect", message: `${primary} does not answer (${input.error}) while the rollout restarts it: not failed over, the rollout's health gate watches it` };
  const seconds = Math.floor((input.now.getTime() - unreachableSince.getTime()) / 1000);
  if (seconds < input.detectionSeconds) return { kind: "suspect", message: `${primary} has not answered for ${seconds} s (${input.error}); lost after ${input.detectionSeconds} s with a second signal` };
  if (input.signals.length === 0) {
    return { kind: "suspect", message: `${primary} has not answered for ${seconds} s (${input.error}), but nothing else says it is gone (its pod, its node and the replicas' connections to it look fine): not counted as lost` };
  }
  return { kind: "lost", message: `${primary} has not answered for ${seconds} s (${input.error}) and ${input.signals.join(", ")}` };
}
