// Where a kind lives in the REST API.
export interface ResourceType {
  /** "v1", "apps/v1", "stateward.io/v1alpha1". */
  apiVersion: string;
  kind: string;
  /** Lower-case plural resource name used in URLs. */
  plural: string;
  namespaced: boolean;
}

export function resourceType(apiVersion: string, kind: string, plural: string, namespaced = true): ResourceType {
  return { apiVersion, kind, plural, namespaced };
}

/** `/api/v1/namespaces/ns/configmaps/name/status` and friends. A namespace of undefined means all namespaces. */
export function resourcePath(rt: ResourceType, namespace?: string, name?: string, subresource?: string): string {
  const base = rt.apiVersion.includes("/") ? `/apis/${rt.apiVersion}` : `/api/${rt.apiVersion}`;
  let path = base;
  if (rt.namespaced && namespace) path += `/namespaces/${encodeURIComponent(namespace)}`;
  path += `/${rt.plural}`;
  if (name !== undefined) path += `/${encodeURIComponent(name)}`;
  if (subresource) path += `/${subresource}`;
  return path;
}

/** The built-in kinds the runtime and the operators use. */
export const builtin = {
  namespace: resourceType("v1", "Namespace", "namespaces", false),
  configMap: resourceType("v1", "ConfigMap", "configmaps"),
  secret: resourceType("v1", "Secret", "secrets"),
  service: resourceType("v1", "Service", "services"),
  pod: resourceType("v1", "Pod", "pods"),
  persistentVolumeClaim: resourceType("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
  serviceAccount: resourceType("v1", "ServiceAccount", "serviceaccounts"),
  statefulSet: resourceType("apps/v1", "StatefulSet", "statefulsets"),
  podDisruptionBudget: resourceType("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets"),
  event: resourceType("events.k8s.io/v1", "Event", "events"),
  lease: resourceType("coordination.k8s.io/v1", "Lease", "leases"),
  customResourceDefinition: resourceType("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", false),
} as const;
