// The controller builder, as controller-runtime's:
//   builder.named("widget").for(Widget).owns(builtin.configMap).watches(builtin.secret, map).complete(reconciler)
import type { InformerScope } from "../cache/index.ts";
import type { KubeObject, ResourceType } from "../client/index.ts";
import { Controller, ownKey, toOwner, type ControllerDeps, type ControllerOptions, type MapFunc } from "./controller.ts";
import type { Predicate } from "./predicates.ts";
import type { Reconciler } from "./reconciler.ts";

interface WatchSpec {
  rt: ResourceType;
  map: MapFunc;
  predicates: Predicate[];
  scope: InformerScope;
  /** for, owns or watches: named in a cache conflict. */
  relation: string;
}

export class ControllerBuilder {
  private readonly deps: ControllerDeps;
  private readonly register: (c: Controller) => void;
  private readonly defaultSelector: string | undefined;
  private readonly unwatched: ResourceType[];
  private controllerName = "";
  private primary: ResourceType | undefined;
  private readonly specs: WatchSpec[] = [];
  private options: ControllerOptions = {};

  /**
   * @param forSelector label selector applied server-side to the primary kind
   *   (the manager's `--target`); owned and watched kinds are filtered by the
   *   selector given to owns() / watches(), if any.
   * @param unwatched kinds the manager may not list or watch (Secrets with `--secrets get`):
   *   watches() on them are left out — the reconcilers read such objects by name and notice a
   *   change at their next periodic check.
   */
  constructor(deps: ControllerDeps, register: (c: Controller) => void, forSelector?: string, unwatched: ResourceType[] = []) {
    this.deps = deps;
    this.register = register;
    this.defaultSelector = forSelector;
    this.unwatched = unwatched;
  }

  named(name: string): this {
    this.controllerName = name;
    return this;
  }

  /** The kind this controller reconciles; its events enqueue the object itself. */
  for(rt: ResourceType, predicates: Predicate[] = []): this {
    this.primary = rt;
    this.specs.push({ rt, map: ownKey, predicates, scope: { labelSelector: this.defaultSelector }, relation: "for" });
    return this;
  }

  /**
   * A kind the primary owns (ownerReferences with controller: true); its events enqueue the owner.
   * Give `scope.labelSelector` — the labels the operator puts on what it creates — so the
   * manager caches only those objects, not every object of the kind in its namespaces;
   * `scope.metadataOnly` when the reconciler needs only their metadata.
   */
  owns(rt: ResourceType, predicates: Predicate[] = [], scope: InformerScope = {}): this {
    if (!this.primary) throw new Error("owns() needs for() first");
    this.specs.push({ rt, map: toOwner(this.primary), predicates, scope, relation: "owns" });
    return this;
  }

  /**
   * Any kind, mapped to the requests it should trigger. `scope.metadataOnly`
   * caches only metadata (use it for Secrets: a data change still bumps the
   * resourceVersion, and the reconciler GETs the one Secret it needs).
   */
  watches<T extends KubeObject>(rt: ResourceType, map: MapFunc<T>, predicates: Predicate<T>[] = [], scope: InformerScope = {}): this {
    if (this.unwatched.some((u) => u.apiVersion === rt.apiVersion && u.plural === rt.plural)) return this;
    this.specs.push({ rt, map: map as MapFunc, predicates: predicates as Predicate[], scope, relation: "watches" });
    return this;
  }

  withOptions(options: ControllerOptions): this {
    this.options = { ...this.options, ...options };
    return this;
  }

  complete(reconciler: Reconciler): Controller {
    if (!this.primary) throw new Error("a controller needs for()");
    const name = this.controllerName || this.primary.kind.toLowerCase();
    const controller = new Controller(name, reconciler, this.deps, this.options);
    for (const spec of this.specs) controller.watch(spec.rt, spec.map, spec.predicates, { ...spec.scope, by: spec.scope.by ?? `controller ${name} (${spec.relation} ${spec.rt.kind})` });
    this.register(controller);
    return controller;
  }
}
