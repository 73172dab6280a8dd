// Step 3 of a reconcile: the objects the cluster owns — ConfigMap, Services,
// PodDisruptionBudget, the published MySQLInstance, the StatefulSet —
// server-side applied only when the cached object differs (a converged
// cluster writes nothing; an edit by hand is reverted).
import { applyIfChanged, builtin, type KubeObject } from "@stateward/core";
import { MySQLInstanceKind, type Flavor } from "@stateward/mysql";
import type { MySQLCluster } from "../api.ts";
import { headlessService, podDisruptionBudget, primaryService, publishedInstance, readOnlyService, statefulSet } from "../resources/objects.ts";
import type { ClusterReconcilerDeps } from "./deps.ts";
import type { StatefulSetObject } from "./pods.ts";

type Deps = Pick<ClusterReconcilerDeps, "client" | "cache" | "targetLabel">;

/** Applies `desired` unless the cached object matches it; true when it wrote. */
export async function applyOwned(d: Deps, rt: Parameters<typeof applyIfChanged>[1], desired: KubeObject): Promise<boolean> {
  const live = d.cache.get(rt, desired.metadata.namespace, desired.metadata.name ?? "");
  return applyIfChanged(d.client, rt, desired, live);
}

/** Everything but the StatefulSet, which waits for the scale-in step; `configMap` carries the config decision's annotations. */
export async function applyServingObjects(d: Deps, cluster: MySQLCluster, configMap: KubeObject): Promise<void> {
  await applyOwned(d, builtin.configMap, configMap);
  await applyOwned(d, builtin.service, headlessService(cluster));
  await applyOwned(d, builtin.service, primaryService(cluster));
  await applyOwned(d, builtin.service, readOnlyService(cluster));
  await applyOwned(d, builtin.podDisruptionBudget, podDisruptionBudget(cluster));
  await applyOwned(d, MySQLInstanceKind.resource, publishedInstance(cluster, d.targetLabel));
}

/** The StatefulSet with `replicas`, keeping the live claim templates as they are (they cannot change); true when it wrote. */
export async function applyStatefulSet(d: Deps, cluster: MySQLCluster, want: { flavor: Flavor; replicas: number; configHash: string }, live: StatefulSetObject | undefined): Promise<boolean> {
  const liveTemplates = live?.spec?.volumeClaimTemplates;
  return applyOwned(
    d,
    builtin.statefulSet,
    statefulSet(cluster, {
      ...want,
      ...(liveTemplates ? { liveClaimTemplates: liveTemplates.map((t) => ({ apiVersion: t.apiVersion ?? "v1", kind: t.kind ?? "PersistentVolumeClaim", metadata: { name: t.metadata?.name, labels: t.metadata?.labels }, spec: t.spec })) } : {}),
    }),
  );
}
