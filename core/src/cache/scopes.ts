// How each kind is cached, declared up front — as controller-runtime's
// cache.Options.ByObject — instead of decided by whoever touched the kind
// first. Operators declare the kinds they need (an OperatorModule's `cache`,
// a controller's for()); the manager collects every declaration before it
// builds a single informer, so the order modules and setups run in does not
// matter. Identical declarations merge (their indexers add up); two different
// ones are an error at start-up naming both declarers: one manager caches a
// kind one way, and an operator must never silently see more, or fewer,
// objects than it asked for.
import type { KubeObject, ResourceType } from "../client/index.ts";
import type { IndexFunc } from "./store.ts";

/** How one kind is cached. Everything left out means "all of it": every object in the watched namespaces, in full. */
export interface CacheScope<T extends KubeObject = KubeObject> {
  /** Server-side label selector, e.g. the labels the operator puts on what it creates. Defaults to none. */
  labelSelector?: string;
  /**
   * Only the objects of the manager's target (`--target`, label stateward.io/target=<target>), combined
   * with `labelSelector`; without a target it adds nothing. Defaults to false. A controller's for() declares it.
   */
  target?: boolean;
  /**
   * Cache only metadata (name, labels, resourceVersion, ...): for Secrets, so an operator notices that a
   * referenced Secret changed without holding the data of every Secret in memory; it GETs the one it needs.
   * Defaults to false.
   */
  metadataOnly?: boolean;
  /** Indexers by name, for Cache.byIndex; declarations of a kind add up theirs (one function per name). */
  indexers?: Record<string, IndexFunc<T>>;
}

/** One entry of an OperatorModule's `cache`: a kind and how it is cached. */
export interface CacheDeclaration {
  kind: ResourceType;
  scope: CacheScope;
}

/** Declares how a kind is cached; typed by the kind's objects so that indexers see them. */
export function cacheKind<T extends KubeObject = KubeObject>(kind: ResourceType, scope: CacheScope<T> = {}): CacheDeclaration {
  return { kind, scope: scope as CacheScope };
}

/** Who declares: named in a conflict. */
export interface Declarer {
  operator?: string;
  controller?: string;
  /** What the controller does with the kind: "for", "owns", "watches". */
  use?: string;
}

export function describeDeclarer(by: Declarer): string {
  const controller = by.controller === undefined ? undefined : [`controller ${by.controller}`, by.use].filter(Boolean).join(", ");
  if (by.operator === undefined) return controller ?? "an unnamed caller";
  return controller === undefined ? `operator ${by.operator}` : `operator ${by.operator} (${controller})`;
}

/**
 * A declaration as collected. `scope` undefined: a controller owns or watches the kind without declaring
 * how it is cached; it takes its own operator's declaration of the kind, and when its operator declares
 * none it declares the kind whole — so an operator never gets another operator's selector by accident.
 */
export interface CollectedDeclaration {
  kind: ResourceType;
  scope: CacheScope | undefined;
  by: Declarer;
}

/** How a kind ends up cached. */
export interface ResolvedScope {
  resource: ResourceType;
  /** The selector sent to the API server (target and labelSelector together); undefined: none. */
  labelSelector: string | undefined;
  metadataOnly: boolean;
  indexers: Map<string, IndexFunc<KubeObject>>;
  /** Who declared it first (diagnostics). */
  by: string;
}

// Remembered per ResourceType (each kind's is one long-lived object): the cache looks a kind up at
// every read, and a key joined anew is a new string to hash each time (docs/performance.md, finding 37).
const kindIds = new WeakMap<ResourceType, string>();

/** The cache's key for a kind: "<apiVersion>/<plural>". */
export function kindId(rt: ResourceType): string {
  let id = kindIds.get(rt);
  if (id === undefined) {
    id = `${rt.apiVersion}/${rt.plural}`;
    kindIds.set(rt, id);
  }
  return id;
}

/**
 * Merges the declarations of every kind.
 * @param targetSelector the manager's target as a label selector (`stateward.io/target=x`), if any
 * @throws Error when a kind is declared two different ways, or an index name with two functions, naming both declarers
 */
export function resolveScopes(declarations: readonly CollectedDeclaration[], targetSelector?: string): Map<string, ResolvedScope> {
  const byKind = new Map<string, CollectedDeclaration[]>();
  for (const d of declarations) byKind.set(kindId(d.kind), [...(byKind.get(kindId(d.kind)) ?? []), d]);
  const resolved = new Map<string, ResolvedScope>();
  for (const [id, all] of byKind) {
    const declaring = new Set(all.filter((d) => d.scope !== undefined).map((d) => d.by.operator));
    const effective = all.flatMap((d) => (d.scope !== undefined ? [{ ...d, scope: d.scope }] : declaring.has(d.by.operator) ? [] : [{ ...d, scope: {} }]));
    const first = effective[0];
    if (!first) continue;
    const selectorOf = (s: CacheScope) => [s.target ? targetSelector : undefined, s.labelSelector].filter((x) => x !== undefined && x !== "").join(",") || undefined;
    const scope: ResolvedScope = {
      resource: first.kind,
      labelSelector: selectorOf(first.scope),
      metadataOnly: first.scope.metadataOnly ?? false,
      indexers: new Map(),
      by: describeDeclarer(first.by),
    };
    const indexedBy = new Map<string, string>();
    for (const d of effective) {
      const selector = selectorOf(d.scope);
      const metadataOnly = d.scope.metadataOnly ?? false;
      if (selector !== scope.labelSelector || metadataOnly !== scope.metadataOnly) {
        // The metadata-only part is named only when it is what differs.
        const way = (sel: string | undefined, meta: boolean) =>
          `${sel === undefined ? "no selector" : `selector ${sel}`}${metadataOnly === scope.metadataOnly ? "" : meta ? " (metadata only)" : " (full objects)"}`;
        throw new Error(
          `${first.kind.kind}: ${scope.by} declares ${way(scope.labelSelector, scope.metadataOnly)} but ${describeDeclarer(d.by)} declares ${way(selector, metadataOnly)}; ` +
            "a manager caches each kind one way, so every operator that declares it must declare the same scope",
        );
      }
      for (const [name, fn] of Object.entries(d.scope.indexers ?? {})) {
        const known = scope.indexers.get(name);
        if (known !== undefined && known !== fn) {
          throw new Error(`${first.kind.kind}: index "${name}" is declared by ${indexedBy.get(name)} and, with another function, by ${describeDeclarer(d.by)}; name one of them differently`);
        }
        if (known !== undefined) continue;
        scope.indexers.set(name, fn);
        indexedBy.set(name, describeDeclarer(d.by));
      }
    }
    resolved.set(id, scope);
  }
  return resolved;
}
