// Names and labels of what a MySQLCluster owns. Everything is named after the
// cluster, so `kubectl get all -l app.kubernetes.io/instance=<cluster>` finds
// it and a user can guess a name without looking it up.

/** The label on pods that says which server is the primary; the primary Service selects on it. */
export const ROLE_LABEL = "stateward.io/role";
/** The pod condition (a readiness gate) the operator sets: replicating and caught up, or the writable primary. */
export const MEMBER_READY_CONDITION = "stateward.io/member-ready";
/** Port of every server. */
export const MYSQL_PORT = 3306;

export interface ClusterNames {
  statefulSet: string;
  headlessService: string;
  primaryService: string;
  readOnlyService: string;
  configMap: string;
  podDisruptionBudget: string;
  rootSecret: string;
  replicationSecret: string;
  instance: string;
}

export function clusterNames(cluster: string): ClusterNames {
  return {
    statefulSet: cluster,
    headlessService: `${cluster}-headless`,
    primaryService: `${cluster}-primary`,
    readOnlyService: `${cluster}-read-only`,
    configMap: `${cluster}-config`,
    podDisruptionBudget: cluster,
    rootSecret: `${cluster}-root`,
    replicationSecret: `${cluster}-replication`,
    instance: cluster,
  };
}

/** Labels that select a cluster's pods (the StatefulSet's selector: never changes). */
export function selectorLabels(cluster: string): Record<string, string> {
  return { "app.kubernetes.io/name": "mysql-cluster", "app.kubernetes.io/instance": cluster };
}

/** Labels on every object the operator creates for a cluster. */
export function commonLabels(cluster: string): Record<string, string> {
  return { ...selectorLabels(cluster), "app.kubernetes.io/managed-by": "stateward", "app.kubernetes.io/component": "database" };
}

/**
 * What the manager caches of the kinds the operator creates (StatefulSets,
 * Services, ConfigMaps, PDBs, Pods): only objects with the labels it puts on
 * all of them, whatever else lives in the namespace.
 */
export const MANAGED_OBJECTS_SELECTOR = "app.kubernetes.io/name=mysql-cluster,app.kubernetes.io/managed-by=stateward";

/** The selector as a string, for list calls and the scale subresource. */
export function selectorString(cluster: string): string {
  return Object.entries(selectorLabels(cluster))
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
}

export function podName(cluster: string, ordinal: number): string {
  return `${cluster}-${ordinal}`;
}

/** The ordinal at the end of a StatefulSet pod's name, or undefined for any other name. */
export function ordinalOf(cluster: string, pod: string): number | undefined {
  if (!pod.startsWith(`${cluster}-`)) return undefined;
  const rest = pod.slice(cluster.length + 1);
  return /^(0|[1-9][0-9]*)$/.test(rest) ? Number(rest) : undefined;
}

/** A pod's stable DNS name behind the headless Service. */
export function podHost(cluster: string, namespace: string, ordinal: number): string {
  return `${podName(cluster, ordinal)}.${clusterNames(cluster).headlessService}.${namespace}.svc.cluster.local`;
}

/** The primary Service's DNS name: what the published MySQLInstance points at. */
export function primaryHost(cluster: string, namespace: string): string {
  return `${clusterNames(cluster).primaryService}.${namespace}.svc.cluster.local`;
}
