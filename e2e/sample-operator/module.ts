import { ContainerModule } from "inversify";
import { Tokens, builtin, cacheKind, bindResolved, token, type OperatorModule } from "@stateward/core";
import { WidgetKind } from "./api.ts";
import { WidgetReconciler, type ExternalSystem } from "./reconciler.ts";

/** Token of the ExternalSystem; tests rebind it to observe cleanups. */
export const ExternalSystemToken = token<ExternalSystem>("sample.ExternalSystem");

/** An in-memory external system: what the test inspects. */
export class InMemoryExternalSystem implements ExternalSystem {
  readonly records = new Map<string, string>();
  readonly removed: string[] = [];
  ensure(key: string, message: string): Promise<void> {
    this.records.set(key, message);
    return Promise.resolve();
  }
  remove(key: string): Promise<void> {
    this.records.delete(key);
    this.removed.push(key);
    return Promise.resolve();
  }
}

export function sampleOperator(opts: { maxConcurrentReconciles?: number } = {}): OperatorModule {
  return {
    name: "sample",
    kinds: [WidgetKind],
    // How the kinds the controller reads are cached, declared before the manager builds its cache. The
    // Widgets need no entry: for() caches them (for the manager's target). The owned ConfigMaps are
    // cached whole — every ConfigMap in the watched namespaces, in full — as is any kind an operator
    // owns or watches without declaring it; an operator that creates many would give a labelSelector.
    // A manager whose operators declare a kind differently does not start, and says who declared what.
    cache: [cacheKind(builtin.configMap)],
    container: new ContainerModule(({ bind }) => {
      bind<ExternalSystem>(ExternalSystemToken).toConstantValue(new InMemoryExternalSystem());
      // Dependencies by name, each from its token: the factory below cannot receive them in the wrong order.
      const deps = { client: Tokens.KubeClient, cache: Tokens.Cache, events: Tokens.EventRecorderFactory, external: ExternalSystemToken };
      bindResolved(bind, Tokens.ControllerSetup, deps, ({ client, cache, events, external }) => ({
        setup: (builder) =>
          builder
            .named("widget")
            .for(WidgetKind.resource)
            .owns(builtin.configMap)
            .withOptions({ maxConcurrentReconciles: opts.maxConcurrentReconciles ?? 2 })
            .complete(new WidgetReconciler(client, cache, events("widget"), external)),
      }));
    }),
  };
}
