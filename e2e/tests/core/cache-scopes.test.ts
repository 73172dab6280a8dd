// Cache scopes are declared, not discovered: a manager collects what its
// operators declare about each kind before it builds a single informer, and
// two operators declaring a kind differently stop it at start-up — naming
// both, whatever order they were loaded in — before it installs or lists
// anything. Identical declarations merge and the manager runs.
import { Manager, Tokens, builtin, cacheKind, captureLogs, findCondition, type ControllerSetup, type OperatorModule, type RequestObservation } from "@stateward/core";
import { ContainerModule } from "inversify";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { WidgetKind, type Widget } from "../../sample-operator/api.ts";
import { sampleOperator } from "../../sample-operator/module.ts";
import { deleteNamespace, freshNamespace, kubeConfigFrom, testClient, waitGone } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";

const env = inject("environment");
const W = WidgetKind.resource;

/**
 * An operator whose controller watches ConfigMaps (to reconcile Widgets); its module declares how
 * ConfigMaps are cached. No CRD of its own: the sample operator installs the Widget one.
 */
function configMapWatcher(scope: Parameters<typeof cacheKind>[1]): OperatorModule {
  return {
    name: "configmap-watcher",
    kinds: [],
    cache: [cacheKind(builtin.configMap, scope)],
    container: new ContainerModule(({ bind }) => {
      bind<ControllerSetup>(Tokens.ControllerSetup).toConstantValue({
        setup: (builder) =>
          builder
            .named("watcher")
            .for(W)
            .watches(builtin.configMap, () => [])
            .complete({ reconcile: () => Promise.resolve(undefined) }),
      });
    }),
  };
}

const running: Manager[] = [];

function manager(namespace: string, requests: RequestObservation[], ...modules: OperatorModule[]): Manager {
  const m = new Manager({ kubeConfig: kubeConfigFrom(env.kubeconfig), namespaces: [namespace], logger: captureLogs().logger, onRequest: (o) => requests.push(o), gracefulShutdownMs: 5_000 }).load(...modules);
  running.push(m);
  return m;
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((m) => m.stop()));
});

describe("cache scopes declared by the operators", () => {
  const client = testClient(env.kubeconfig);
  let ns: string;
  beforeAll(async () => {
    ns = await freshNamespace(client, "scopes");
  });
  afterAll(async () => {
    await deleteNamespace(client, ns);
  });

  it("a manager whose operators declare a kind differently fails at start-up, naming both, in either load order, before any request", async () => {
    const requests: RequestObservation[] = [];
    const labelled = configMapWatcher({ labelSelector: "app=watcher" });
    await expect(manager(ns, requests, sampleOperator(), labelled).start()).rejects.toThrow(
      "ConfigMap: operator sample declares no selector but operator configmap-watcher declares selector app=watcher",
    );
    await expect(manager(ns, requests, labelled, sampleOperator()).start()).rejects.toThrow(
      "ConfigMap: operator configmap-watcher declares selector app=watcher but operator sample declares no selector",
    );
    expect(requests).toEqual([]);
  });

  it("merges identical declarations: both operators run on one informer per kind and namespace", async () => {
    const requests: RequestObservation[] = [];
    const m = manager(ns, requests, configMapWatcher({}), sampleOperator());
    await m.start();
    expect(m.cache.scopeOf(builtin.configMap)).toEqual({ metadataOnly: false, by: "operator configmap-watcher" });
    expect(requests.filter((r) => r.verb === "LIST" && r.path.includes("/configmaps")).length).toBe(1);
    await client.create(W, { apiVersion: WidgetKind.apiVersion, kind: WidgetKind.kind, metadata: { name: "merged", namespace: ns }, spec: { message: "hi" } } satisfies Widget);
    await waitFor("widget Ready", async () => findCondition((await client.get<Widget>(W, ns, "merged")).status?.conditions, "Ready")?.status === "True" || undefined);
    await client.delete(W, ns, "merged");
    await waitGone(client, W, ns, "merged");
  });
});
