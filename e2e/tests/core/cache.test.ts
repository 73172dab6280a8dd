// The cache against the real API server: paged lists, metadata-only caching, no managedFields.
import { Cache, KubeClient, builtin, type InformerEvent, type KubeObject } from "@stateward/core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { deleteNamespace, freshNamespace, kubeConfigFrom, testClient } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";

const env = inject("environment");

describe("Cache", () => {
  const client = testClient(env.kubeconfig);
  let ns: string;
  beforeAll(async () => {
    ns = await freshNamespace(client, "cache");
  });
  afterAll(async () => {
    await deleteNamespace(client, ns);
  });

  it("lists in pages and keeps every object", async () => {
    await Promise.all(
      Array.from({ length: 25 }, (_, i) => client.create(builtin.configMap, { metadata: { name: `cm-${i}`, namespace: ns } })),
    );
    const cache = new Cache(new KubeClient({ kubeConfig: kubeConfigFrom(env.kubeconfig) }), { namespaces: [ns], informer: { pageSize: 7 } });
    cache.declare(builtin.configMap);
    cache.start();
    await cache.waitForSync();
    const names = cache.list(builtin.configMap).map((o) => o.metadata.name).filter((n) => n?.startsWith("cm-"));
    expect(names).toHaveLength(25);
    expect(cache.informers()[0]!.stats.lists).toBe(1);
    await cache.stop();
  });

  it("caches Secrets as metadata only, and still sees a change of their data", async () => {
    await client.create(builtin.secret, { metadata: { name: "app-db", namespace: ns }, stringData: { password: "s3cr3t-one" } } as KubeObject);
    const cache = new Cache(new KubeClient({ kubeConfig: kubeConfigFrom(env.kubeconfig) }), { namespaces: [ns] });
    cache.declare(builtin.secret, { metadataOnly: true });
    const events: InformerEvent<KubeObject>[] = [];
    cache.onEvent(builtin.secret, (e) => events.push(e));
    cache.start();
    await cache.waitForSync();
    const cached = cache.get<KubeObject & { data?: unknown }>(builtin.secret, ns, "app-db");
    expect(cached?.metadata.name).toBe("app-db");
    expect(cached?.data).toBeUndefined();
    expect(JSON.stringify(cache.list(builtin.secret))).not.toContain(Buffer.from("s3cr3t-one").toString("base64"));
    await client.patch(builtin.secret, ns, "app-db", { stringData: { password: "s3cr3t-two" } });
    const update = await waitFor("update event", () => events.find((e) => e.type === "update" && e.obj.metadata.name === "app-db"));
    expect((update.obj as KubeObject & { data?: unknown }).data).toBeUndefined();
    await cache.stop();
  });

  it("keeps no managedFields, and an update from a cached copy leaves the server's as they were", async () => {
    await client.create(builtin.configMap, { metadata: { name: "managed", namespace: ns }, data: { a: "1" } } as KubeObject);
    const cache = new Cache(new KubeClient({ kubeConfig: kubeConfigFrom(env.kubeconfig) }), { namespaces: [ns] });
    cache.declare(builtin.configMap);
    const events: InformerEvent<KubeObject>[] = [];
    cache.onEvent(builtin.configMap, (e) => events.push(e));
    cache.start();
    await cache.waitForSync();
    const listed = cache.get<KubeObject & { data?: Record<string, string> }>(builtin.configMap, ns, "managed");
    expect(listed?.data).toEqual({ a: "1" });
    expect(listed?.metadata.managedFields).toBeUndefined();

    const edited = structuredClone(listed!);
    edited.data = { a: "2" };
    await client.update(builtin.configMap, edited);
    const update = await waitFor("update event", () => events.find((e) => e.type === "update" && e.obj.metadata.name === "managed"));
    expect((update.obj as KubeObject & { data?: Record<string, string> }).data).toEqual({ a: "2" });
    expect(update.obj.metadata.managedFields).toBeUndefined();
    const onServer = await client.get(builtin.configMap, ns, "managed");
    expect(onServer.metadata.managedFields?.length ?? 0).toBeGreaterThan(0);
    await cache.stop();
  });
});
