// The controller builder, as controller-runtime's:
//   builder.named("widget").for(Widget).owns(builtin.configMap).watches(builtin.secret, map).complete(reconciler)
// It says which events reach the controller; how each kind is cached (label
// selector, metadata only, indexers) is declared in the operator module's
// `cache` (core/src/cache/scopes.ts), one place for every controller of the
// operator. The one declaration made here: for() caches the primary kind for
// the manager's target (`--target`).
import type { KubeObject, ResourceType } from "../client/index.ts";
import { Controller, ownKey, toOwner, type ControllerDeps, type ControllerOptions, type MapFunc } from "./controller.ts";
import type { Predicate } from "./predicates.ts";
import type { Reconciler } from "./reconciler.ts";

interface WatchSpec {
  rt: ResourceType;
  map: MapFunc;
  predicates: Predicate[];
  /** for, owns or watches: named in a cache conflict. */
  relation: "for" | "owns" | "watches";
}

export class ControllerBuilder {
  private readonly deps: ControllerDeps;
  private readonly register: (c: Controller) => void;
  private readonly operator: string | undefined;
  private readonly unwatched: ResourceType[];
  private controllerName = "";
  private primary: ResourceType | undefined;
  private readonly specs: WatchSpec[] = [];
  private options: ControllerOptions = {};

  /**
   * @param operator the operator whose ControllerSetup this builder is given: named in a cache conflict
   * @param unwatched kinds the manager may not list or watch (Secrets with `--secrets get`):
   *   owns() and watches() on them are left out — the reconcilers read such objects by name and
   *   notice a change at their next periodic check.
   */
  constructor(deps: ControllerDeps, register: (c: Controller) => void, operator?: string, unwatched: ResourceType[] = []) {
    this.deps = deps;
    this.register = register;
    this.operator = operator;
    this.unwatched = unwatched;
  }

  named(name: string): this {
    this.controllerName = name;
    return this;
  }

  /** The kind this controller reconciles; its events enqueue the object itself. It is cached for the manager's target. */
  for(rt: ResourceType, predicates: Predicate[] = []): this {
    this.primary = rt;
    this.specs.push({ rt, map: ownKey, predicates, relation: "for" });
    return this;
  }

  /**
   * A kind the primary owns (ownerReferences with controller: true); its events enqueue the owner.
   * Cached as the operator module declares it (e.g. only the objects with the labels the operator
   * puts on what it creates); a kind the operator does not declare is cached whole.
   */
  owns(rt: ResourceType, predicates: Predicate[] = []): this {
    if (!this.primary) throw new Error("owns() needs for() first");
    this.specs.push({ rt, map: toOwner(this.primary), predicates, relation: "owns" });
    return this;
  }

  /** Any kind, mapped to the requests it should trigger; cached as the operator module declares it (e.g. Secrets as metadata only). */
  watches<T extends KubeObject>(rt: ResourceType, map: MapFunc<T>, predicates: Predicate<T>[] = []): this {
    this.specs.push({ rt, map: map as MapFunc, predicates: predicates as Predicate[], relation: "watches" });
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
    for (const spec of this.specs) {
      if (spec.relation !== "for" && isOneOf(spec.rt, this.unwatched)) continue;
      const by = { operator: this.operator, controller: name, use: `${spec.relation} ${spec.rt.kind}` };
      if (spec.relation === "for") this.deps.cache.declare(spec.rt, { target: true }, by);
      else this.deps.cache.use(spec.rt, by);
      controller.watch(spec.rt, spec.map, spec.predicates);
    }
    this.register(controller);
    return controller;
  }
}

/** Whether `rt` is one of `kinds` (same API version and resource). */
export const isOneOf = (rt: ResourceType, kinds: ResourceType[]): boolean => kinds.some((k) => k.apiVersion === rt.apiVersion && k.plural === rt.plural);
