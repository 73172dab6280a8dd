// Which server is the primary when status names none — a cluster re-created
// on retained volumes, restored without status: chosen from the servers'
// histories (replication/primary-selection.ts decides), never assumed to be
// ordinal 0; and, while none can be chosen, nothing is made writable.
import { builtin, findCondition, readyStatus, writeStatus, type ReconcileContext, type Result } from "@stateward/core";
import type { Flavor } from "@stateward/mysql";
import { CONVERGING_REQUEUE_MS, MySQLClusterKind, STEADY_REQUEUE_MS, type MySQLCluster } from "../api.ts";
import { connectMember } from "../replication/members.ts";
import { choosePrimary, type Candidate, type Selection } from "../replication/primary-selection.ts";
import { readReplica, readServer } from "../replication/server.ts";
import { podName, selectorString } from "../resources/names.ts";
import type { ClusterReconcilerDeps } from "./deps.ts";
import { setMemberReadyGate, type Pod } from "./pods.ts";
import { memberError } from "./problems.ts";
import { phaseWithoutPrimary } from "./status-report.ts";

/**
 * The primary when status names none: spec.primary when set, else the server
 * whose history contains every other's. Ordinals up to `members`; one with
 * neither pod nor volume never held data.
 */
export async function selectPrimary(d: Pick<ClusterReconcilerDeps, "client" | "connector">, cluster: MySQLCluster, pods: Map<number, Pod>, members: number, flavor: Flavor): Promise<Selection> {
  const name = cluster.metadata.name ?? "";
  const ns = cluster.metadata.namespace ?? "";
  if (cluster.spec.primary !== undefined) return { kind: "chosen", ordinal: cluster.spec.primary, why: "spec.primary names it" };
  const candidates: Candidate[] = [];
  // The volumes of the cluster's servers (a list: the operator may list claims, not get them one by one).
  const claims = new Set((await d.client.list(builtin.persistentVolumeClaim, { namespace: ns, labelSelector: selectorString(name) })).items.map((c) => c.metadata.name ?? ""));
  for (let ordinal = 0; ordinal < Math.max(members, 1); ordinal++) {
    const pod = pods.get(ordinal);
    if (!pod) {
      const claimed = claims.has(`data-${podName(name, ordinal)}`);
      candidates.push(claimed ? { ordinal, kind: "unreachable", why: "its volume exists but its pod does not yet" } : { ordinal, kind: "absent" });
      continue;
    }
    try {
      const conn = await connectMember(d.connector, cluster, ordinal, pod.metadata.uid ?? "");
      const state = await readServer(conn);
      const replica = await readReplica(conn);
      candidates.push({ ordinal, kind: "reachable", history: state.history, replica: replica.configured });
    } catch (err) {
      candidates.push({ ordinal, kind: "unreachable", why: memberError(err) });
    }
  }
  return choosePrimary(flavor, candidates, (o) => podName(name, o));
}

/**
 * No primary can be chosen yet: nothing is made writable. Pods whose server
 * answers get the readiness gate (and no role label, so no Service selects
 * them): with OrderedReady the StatefulSet creates the next pod only once
 * this one is Ready, and every server must answer before they are compared.
 */
export async function awaitPrimary(
  d: Pick<ClusterReconcilerDeps, "client" | "connector" | "events" | "clock">,
  cluster: MySQLCluster,
  pods: Map<number, Pod>,
  selection: Extract<Selection, { kind: "unknown" }>,
  ctx: ReconcileContext,
): Promise<Result> {
  for (const [ordinal, pod] of pods) {
    const answers = await connectMember(d.connector, cluster, ordinal, pod.metadata.uid ?? "").then(
      () => true,
      (err: unknown) => (memberError(err), false),
    );
    await setMemberReadyGate(d, pod, answers, "AwaitingPrimary", selection.message);
  }
  const previous = findCondition(cluster.status?.conditions, "Available");
  // Diverged servers need the user; servers still starting do not (and say so in the condition only).
  if (selection.reason === "Diverged" && previous?.message !== selection.message) {
    ctx.log.info("no primary can be chosen", { reason: selection.reason });
    await d.events.record(cluster, "Warning", "PrimaryUnknown", selection.message);
  }
  await writeStatus(d.client, MySQLClusterKind.resource, cluster, readyStatus({ phase: phaseWithoutPrimary(cluster.status?.phase) }, { status: "False", reason: "PrimaryUnknown", message: selection.message }, [
    { type: "Available", status: "False", reason: "PrimaryUnknown", message: selection.message },
  ]));
  return { requeueAfter: selection.reason === "Diverged" ? STEADY_REQUEUE_MS : CONVERGING_REQUEUE_MS };
}
