// RBAC as sets of permissions, to compare what a chart grants with what a manager really
// asked the API server for: every (scope, apiGroup, resource[/subresource], verb) a
// rendered ClusterRole/Role grants, and every one a recorded request used.
import type { RequestObservation } from "@stateward/core";
import type { RenderedObject } from "./chart.ts";

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
}

/**
 * One permission. `scope` is "cluster" for a ClusterRole's grant (any namespace, and
 * cluster-scoped resources) or the namespace of a Role; for a request it is the namespace
 * in its path, or "cluster" when the path names none (cluster-scoped, or all namespaces).
 * `group` is "" for the core API group; `resource` includes "/subresource" when there is one.
 */
export interface Permission {
  scope: string;
  group: string;
  resource: string;
  verb: string;
}

export const CLUSTER = "cluster";

/** "verb group/resource in scope", the way the failure messages and the allow-list name a permission. */
export function permissionKey(p: Permission): string {
  return `${p.verb} ${p.group || "core"}/${p.resource} in ${p.scope}`;
}

/**
 * Every permission the ClusterRoles and Roles among `objects` grant. Bindings are not
 * followed: the chart binds each of its roles to its one ServiceAccount (chart.test.ts
 * checks that), so every role's rules are the ServiceAccount's. Wildcards are kept as "*"
 * and never match a request, so a wildcard grant always shows up as unused.
 */
export function grantedPermissions(objects: RenderedObject[]): Permission[] {
  const out = new Map<string, Permission>();
  for (const o of objects) {
    if (o.kind !== "ClusterRole" && o.kind !== "Role") continue;
    const scope = o.kind === "ClusterRole" ? CLUSTER : (o.metadata.namespace ?? "default");
    for (const rule of (o as RenderedObject & { rules?: PolicyRule[] }).rules ?? [])
      for (const group of rule.apiGroups ?? [])
        for (const resource of rule.resources ?? [])
          for (const verb of rule.verbs ?? []) {
            const p = { scope, group, resource, verb };
            out.set(permissionKey(p), p);
          }
  }
  return [...out.values()];
}

const VERBS: Record<RequestObservation["verb"], string> = {
  LIST: "list",
  WATCH: "watch",
  GET: "get",
  POST: "create",
  PUT: "update",
  PATCH: "patch",
  DELETE: "delete",
};

// Subresources of a namespace object itself: /api/v1/namespaces/<name>/status is not
// a resource called "status" in namespace <name>.
const NAMESPACE_SUBRESOURCES = new Set(["status", "finalize"]);

/**
 * The permission a request needs, from its verb and path (`/api/v1/...` or
 * `/apis/<group>/<version>/...`, query string ignored); undefined for paths that are no
 * resource (discovery, /version, /healthz).
 */
export function requestPermission(o: Pick<RequestObservation, "verb" | "path">): Permission | undefined {
  const segments = o.path.split("?")[0]!.split("/").filter((s) => s !== "").map(decodeURIComponent);
  let group: string;
  let rest: string[];
  if (segments[0] === "api" && segments.length >= 3) {
    group = "";
    rest = segments.slice(2);
  } else if (segments[0] === "apis" && segments.length >= 4) {
    group = segments[1]!;
    rest = segments.slice(3);
  } else {
    return undefined;
  }
  let scope = CLUSTER;
  if (rest[0] === "namespaces" && rest.length >= 3 && !(rest.length === 3 && NAMESPACE_SUBRESOURCES.has(rest[2]!))) {
    scope = rest[1]!;
    rest = rest.slice(2);
  }
  const [resource, , subresource] = rest;
  if (!resource) return undefined;
  return { scope, group, resource: subresource ? `${resource}/${subresource}` : resource, verb: VERBS[o.verb] };
}

/** Whether a request's permission is one the grant gives: same group, resource and verb, and in the grant's scope. */
function covers(grant: Permission, used: Permission): boolean {
  return (
    grant.group === used.group &&
    grant.resource === used.resource &&
    grant.verb === used.verb &&
    (grant.scope === CLUSTER || grant.scope === used.scope)
  );
}

type Observed = Pick<RequestObservation, "verb" | "path" | "status">;

/**
 * The permissions a request used: its own, and `create` too for a server-side
 * apply (PATCH) that created the object (201), which the API server authorizes as both.
 */
function requestPermissions(o: Observed): Permission[] {
  const p = requestPermission(o);
  if (!p) return [];
  return o.verb === "PATCH" && o.status === 201 ? [p, { ...p, verb: "create" }] : [p];
}

/** The grants no request used. */
export function unusedGrants(granted: Permission[], requests: Observed[]): Permission[] {
  const used = requests.flatMap(requestPermissions);
  return granted.filter((g) => !used.some((u) => covers(g, u)));
}

/** Every permission the requests used, as permission keys, sorted (for failure messages). */
export function usedPermissions(requests: Observed[]): string[] {
  return [...new Set(requests.flatMap(requestPermissions).map(permissionKey))].sort();
}
