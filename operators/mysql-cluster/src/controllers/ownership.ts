// The names a MySQLCluster needs for its objects may already be taken: a
// MySQLInstance `db` made by hand, a ConfigMap `db-config` of another
// application. Such an object is never taken over — applying over it would
// re-point whatever uses it, and garbage collection would delete it with the
// cluster. The cluster stops before doing anything (Pending, NameConflict)
// until the name is free. applyIfChanged checks again at write time, against
// the API server, for an object the cache does not know yet.
import { NameConflictError, builtin, checkControlled, isControlledBy, type Cache, type KubeObject, type ResourceType } from "@stateward/core";
import { MySQLInstanceKind } from "@stateward/mysql";
import type { MySQLCluster } from "../api.ts";
import { clusterNames, commonLabels } from "../resources/names.ts";

/** Every object the cluster controls, by kind and name. */
function ownedNames(cluster: string): [ResourceType, string][] {
  const n = clusterNames(cluster);
  return [
    [builtin.statefulSet, n.statefulSet],
    [builtin.configMap, n.configMap],
    [builtin.service, n.headlessService],
    [builtin.service, n.primaryService],
    [builtin.service, n.readOnlyService],
    [builtin.podDisruptionBudget, n.podDisruptionBudget],
    [MySQLInstanceKind.resource, n.instance],
  ];
}

/** Throws NameConflictError for the first cached object under one of the cluster's names that the cluster does not control. */
export function checkOwnedNames(cache: Cache, cluster: MySQLCluster): void {
  const ns = cluster.metadata.namespace;
  for (const [rt, name] of ownedNames(cluster.metadata.name ?? "")) checkControlled(rt, cache.get(rt, ns, name), cluster.metadata.uid ?? "");
}

/**
 * A generated Secret (`<cluster>-root`, `<cluster>-replication`) that exists
 * already is used only if this cluster owns it, or it carries the labels the
 * operator generates it with for a cluster of this name: with
 * secretDeletionPolicy Retain it outlives the cluster unowned, on purpose, so
 * that a cluster re-created on the retained volumes keeps its passwords.
 * Someone else's Secret of that name is neither used nor changed.
 */
export function checkGeneratedSecret(existing: KubeObject, cluster: MySQLCluster): void {
  const name = cluster.metadata.name ?? "";
  if (isControlledBy(existing, cluster.metadata.uid ?? "")) return;
  const labels = existing.metadata.labels ?? {};
  if (Object.entries(commonLabels(name)).every(([k, v]) => labels[k] === v)) return;
  const hint = `${existing.metadata.name === clusterNames(name).rootSecret ? "to use it as the root password set spec.rootPasswordSecretRef; otherwise " : ""}delete or rename it, or give the MySQLCluster another name`;
  throw new NameConflictError("Secret", existing.metadata.namespace, existing.metadata.name ?? "", existing, hint);
}
