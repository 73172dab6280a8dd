// The cluster's pods as the reconciler sees them (from the cache, which
// watches the pods the operator's StatefulSet made), and what it writes on
// them: the role label the Services select by, and the readiness-gate
// condition that makes a pod Ready only when its server is.
import { builtin, kubeTime, type KubeObject } from "@stateward/core";
import type { MySQLCluster, MemberStatus } from "../api.ts";
import { connectMember } from "../replication/members.ts";
import { MEMBER_READY_CONDITION, ROLE_LABEL, ordinalOf, podName, selectorLabels } from "../resources/names.ts";
import type { ClusterReconcilerDeps } from "./deps.ts";
import { ignoreNotFound, memberError } from "./problems.ts";
import type { RunningServer } from "./runtime-config.ts";

export interface Pod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string; conditions?: { type: string; status: string; reason?: string; message?: string }[]; containerStatuses?: { state?: { running?: unknown } }[] };
}

export interface StatefulSetObject extends KubeObject {
  status?: { updateRevision?: string; observedGeneration?: number };
  spec?: { replicas?: number; volumeClaimTemplates?: { apiVersion?: string; kind?: string; metadata?: { name?: string; labels?: Record<string, string> }; spec?: { resources?: { requests?: { storage?: string } } } }[] };
}

/** A member as observed in this reconcile. */
export interface Observed {
  ordinal: number;
  pod: Pod;
  status: MemberStatus;
}

/**
 * The cluster's pods by ordinal (from the cache, which watches this namespace's pods): the live ones,
 * or (`which` "terminating") those being deleted — a lost node's evicted pods stay so.
 */
export function clusterPods(d: Pick<ClusterReconcilerDeps, "cache">, cluster: MySQLCluster, which: "live" | "terminating" = "live"): Map<number, Pod> {
  const name = cluster.metadata.name ?? "";
  const selector = selectorLabels(name);
  const out = new Map<number, Pod>();
  for (const pod of d.cache.list<Pod>(builtin.pod, { namespace: cluster.metadata.namespace })) {
    const labels = pod.metadata.labels ?? {};
    if (!Object.entries(selector).every(([k, v]) => labels[k] === v)) continue;
    if ((pod.metadata.deletionTimestamp !== undefined) !== (which === "terminating")) continue;
    const ordinal = ordinalOf(name, pod.metadata.name ?? "");
    if (ordinal !== undefined) out.set(ordinal, pod);
  }
  return out;
}

/** Every current server, connected; undefined when a pod is missing or a server does not answer. */
export async function runningServers(d: Pick<ClusterReconcilerDeps, "connector">, cluster: MySQLCluster, pods: Map<number, Pod>, current: number): Promise<RunningServer[] | undefined> {
  const name = cluster.metadata.name ?? "";
  const servers: RunningServer[] = [];
  for (let ordinal = 0; ordinal < current; ordinal++) {
    const pod = pods.get(ordinal);
    if (!pod) return undefined;
    try {
      servers.push({ name: podName(name, ordinal), conn: await connectMember(d.connector, cluster, ordinal, pod.metadata.uid ?? "") });
    } catch (err) {
      memberError(err);
      return undefined;
    }
  }
  return servers.length > 0 ? servers : undefined;
}

/** Sets the pod's readiness-gate condition unless it already has this status. */
export async function setMemberReadyGate(d: Pick<ClusterReconcilerDeps, "client" | "clock">, pod: Pod, ready: boolean, reason: string, message: string): Promise<void> {
  const want = ready ? "True" : "False";
  if (pod.status?.conditions?.find((c) => c.type === MEMBER_READY_CONDITION)?.status === want) return;
  const condition = { type: MEMBER_READY_CONDITION, status: want, reason, message, lastTransitionTime: kubeTime(d.clock.now()) };
  await d.client.patch(builtin.pod, pod.metadata.namespace ?? "", pod.metadata.name ?? "", { status: { conditions: [condition] } }, "strategic", "status").catch(ignoreNotFound);
}

/** The member's role label and readiness gate, each written only when it differs. */
export async function updatePod(d: Pick<ClusterReconcilerDeps, "client" | "clock">, m: Observed): Promise<void> {
  if (m.pod.metadata.labels?.[ROLE_LABEL] !== m.status.role) {
    await d.client.patch(builtin.pod, m.pod.metadata.namespace ?? "", m.pod.metadata.name ?? "", { metadata: { labels: { [ROLE_LABEL]: m.status.role } } }).catch(ignoreNotFound);
  }
  const reason = m.status.ready ? (m.status.role === "primary" ? "Writable" : "CaughtUp") : "NotReady";
  await setMemberReadyGate(d, m.pod, m.status.ready, reason, m.status.message ?? "");
}
