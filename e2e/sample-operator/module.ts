import { ContainerModule } from "inversify";
import { Tokens, builtin, type Cache, type ControllerSetup, type KubeClient, type OperatorModule, type EventRecorder } from "@stateward/core";
import { WidgetKind } from "./api.ts";
import { WidgetReconciler, type ExternalSystem } from "./reconciler.ts";

/** Token of the ExternalSystem; tests rebind it to observe cleanups. */
export const ExternalSystemToken = Symbol.for("sample.ExternalSystem");

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
    container: new ContainerModule(({ bind }) => {
      bind<ExternalSystem>(ExternalSystemToken).toConstantValue(new InMemoryExternalSystem());
      bind<ControllerSetup>(Tokens.ControllerSetup).toResolvedValue(
        (client: KubeClient, cache: Cache, events: (name: string) => EventRecorder, external: ExternalSystem) => ({
          setup: (builder) =>
            builder
              .named("widget")
              .for(WidgetKind.resource)
              .owns(builtin.configMap)
              .withOptions({ maxConcurrentReconciles: opts.maxConcurrentReconciles ?? 2 })
              .complete(new WidgetReconciler(client, cache, events("widget"), external)),
        }),
        [Tokens.KubeClient, Tokens.Cache, Tokens.EventRecorderFactory, ExternalSystemToken],
      );
    }),
  };
}
