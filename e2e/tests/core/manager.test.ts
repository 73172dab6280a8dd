// The core runtime against the real control plane, driven through the sample
// Widget operator (e2e/sample-operator): the reconcile loop, owned objects,
// finalizers, retries, namespace and target scoping, steady state, and schema
// validation at `kubectl apply`.
import { execFile } from "node:child_process";
import {
  Manager,
  builtin,
  captureLogs,
  findCondition,
  type KubeClient,
  type KubeObject,
  type RequestObservation,
} from "@stateward/core";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { tools } from "../../harness/index.ts";
import { WidgetKind, type Widget } from "../../sample-operator/api.ts";
import type { InMemoryExternalSystem} from "../../sample-operator/module.ts";
import { ExternalSystemToken, sampleOperator } from "../../sample-operator/module.ts";
import { deleteNamespace, freshNamespace, kubeConfigFrom, testClient, waitGone } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";

const env = inject("environment");
const W = WidgetKind.resource;

function widget(namespace: string, name: string, spec: Widget["spec"], labels?: Record<string, string>): Widget {
  return { apiVersion: WidgetKind.apiVersion, kind: WidgetKind.kind, metadata: { name, namespace, labels }, spec };
}

const ready = (w: Widget | undefined) => findCondition(w?.status?.conditions, "Ready");

async function readyWidget(client: KubeClient, ns: string, name: string, generation?: number): Promise<Widget> {
  return waitFor(`widget ${ns}/${name} Ready`, async () => {
    const w = await client.get<Widget>(W, ns, name);
    const c = ready(w);
    return c?.status === "True" && (generation === undefined || c.observedGeneration === generation) ? w : undefined;
  });
}

interface Running {
  manager: Manager;
  external: InMemoryExternalSystem;
  requests: RequestObservation[];
}

const running: Manager[] = [];

async function startManager(opts: { namespaces?: string[]; target?: string } = {}): Promise<Running> {
  const requests: RequestObservation[] = [];
  const manager = new Manager({
    kubeConfig: kubeConfigFrom(env.kubeconfig),
    namespaces: opts.namespaces,
    target: opts.target,
    logger: captureLogs().logger,
    onRequest: (o) => requests.push(o),
    gracefulShutdownMs: 5_000,
  }).load(sampleOperator());
  running.push(manager);
  await manager.start();
  return { manager, external: manager.container.get<InMemoryExternalSystem>(ExternalSystemToken), requests };
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((m) => m.stop()));
});

describe("a manager running the sample operator", () => {
  const client = testClient(env.kubeconfig);
  let ns: string;
  beforeAll(async () => {
    ns = await freshNamespace(client, "core");
  });
  afterAll(async () => {
    await deleteNamespace(client, ns);
  });

  it("installs the CRD and reconciles create, edit, hand-deleted and hand-edited owned objects, and deletion", async () => {
    const { manager, external } = await startManager({ namespaces: [ns] });
    await client.create(W, widget(ns, "alpha", { message: "hello" }));
    const w = await readyWidget(client, ns, "alpha", 1);
    expect(w.status?.configMap).toBe("alpha-widget");
    expect(w.metadata.finalizers).toContain("sample.stateward.io/cleanup");
    const cm = await client.get<KubeObject & { data?: Record<string, string> }>(builtin.configMap, ns, "alpha-widget");
    expect(cm.data).toEqual({ message: "hello" });
    expect(cm.metadata.ownerReferences?.[0]).toMatchObject({ kind: "Widget", name: "alpha", controller: true });
    expect(external.records.get(`${ns}/alpha`)).toBe("hello");

    // Edit -> re-reconciled.
    await client.patch(W, ns, "alpha", { spec: { message: "edited" } });
    await readyWidget(client, ns, "alpha", 2);
    await waitFor("ConfigMap updated", async () =>
      (await client.get<KubeObject & { data?: Record<string, string> }>(builtin.configMap, ns, "alpha-widget")).data?.message === "edited" || undefined);

    // Owned ConfigMap deleted by hand -> recreated.
    const uid = cm.metadata.uid;
    await client.delete(builtin.configMap, ns, "alpha-widget");
    await waitFor("ConfigMap recreated", async () => {
      const again = await client.get<KubeObject>(builtin.configMap, ns, "alpha-widget");
      return again.metadata.uid !== uid ? again : undefined;
    });

    // Owned ConfigMap edited by hand -> reverted.
    await client.patch(builtin.configMap, ns, "alpha-widget", { data: { message: "tampered" } });
    await waitFor("ConfigMap reverted", async () =>
      (await client.get<KubeObject & { data?: Record<string, string> }>(builtin.configMap, ns, "alpha-widget")).data?.message === "edited" || undefined);

    // Delete -> the finalizer's cleanup runs, then the object is gone.
    await client.delete(W, ns, "alpha");
    await waitGone(client, W, ns, "alpha");
    expect(external.removed).toContain(`${ns}/alpha`);
    expect(external.records.has(`${ns}/alpha`)).toBe(false);
    expect(manager.isLeader()).toBe(true);
  });

  it("retries a failing reconcile with backoff, shows why in the condition and an event, and converges once fixed", async () => {
    const { manager } = await startManager({ namespaces: [ns] });
    await client.create(W, widget(ns, "broken", { message: "hi", fail: true }));
    const failed = await waitFor("Ready=False", async () => {
      const w = await client.get<Widget>(W, ns, "broken");
      return ready(w)?.status === "False" ? w : undefined;
    });
    expect(ready(failed)).toMatchObject({ reason: "ReconcileFailed", message: "the widget asked to fail (spec.fail is true)" });
    // Backoff: 5 ms doubling per failure; in 3 s that is at most ~10 attempts, not hundreds.
    await new Promise((r) => setTimeout(r, 3_000));
    const metrics = (await manager.metrics.exposition()).body;
    const errors = Number(/controller_runtime_reconcile_errors_total\{controller="widget"\} (\d+)/.exec(metrics)?.[1]);
    expect(errors).toBeGreaterThanOrEqual(5);
    expect(errors).toBeLessThanOrEqual(14);
    const events = await client.list<KubeObject & { reason?: string; note?: string; regarding?: { name?: string } }>(builtin.event, { namespace: ns });
    const ev = events.items.find((e) => e.regarding?.name === "broken" && e.reason === "ReconcileFailed");
    expect(ev?.note).toBe("the widget asked to fail (spec.fail is true)");

    await client.patch(W, ns, "broken", { spec: { fail: false } });
    await readyWidget(client, ns, "broken", 2);
  });

  it("makes no writes once everything is converged, and none after a restart either", async () => {
    const first = await startManager({ namespaces: [ns] });
    for (const name of ["s1", "s2", "s3"]) await client.create(W, widget(ns, name, { message: name }));
    for (const name of ["s1", "s2", "s3"]) await readyWidget(client, ns, name, 1);
    await new Promise((r) => setTimeout(r, 1_000));
    const before = first.manager.requests.writes;
    await new Promise((r) => setTimeout(r, 3_000));
    expect(first.manager.requests.writes - before).toBe(0);
    await first.manager.stop();
    running.splice(running.indexOf(first.manager), 1);

    const second = await startManager({ namespaces: [ns] });
    await new Promise((r) => setTimeout(r, 3_000));
    const writes = second.requests.filter((r) => ["POST", "PUT", "PATCH", "DELETE"].includes(r.verb));
    expect(writes).toEqual([]);
  });

  it("refuses a Widget that violates the schema at kubectl apply, naming the field", async () => {
    await startManager({ namespaces: [ns] });
    const manifest = JSON.stringify(widget(ns, "toolarge", { message: "x", replicas: 11 }));
    const child = execFile(tools.kubectl(), ["--kubeconfig", env.kubeconfig, "apply", "-f", "-"]);
    const out = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      let stderr = "";
      child.stderr?.on("data", (d: string) => (stderr += d));
      child.on("exit", (code) => resolve({ code, stderr }));
      child.stdin?.end(manifest);
    });
    expect(out.code).not.toBe(0);
    expect(out.stderr).toMatch(/spec\.replicas/);
    expect(out.stderr).toMatch(/should be less than or equal to 10/);
  });
});

describe("scoping", () => {
  const client = testClient(env.kubeconfig);
  const nss: string[] = [];
  afterAll(async () => {
    for (const n of nss) await deleteNamespace(client, n);
  });

  it("with namespaces [a, b] never lists, watches or reconciles objects in c", async () => {
    const [a, b, c] = [await freshNamespace(client, "a"), await freshNamespace(client, "b"), await freshNamespace(client, "c")];
    nss.push(a, b, c);
    const { requests } = await startManager({ namespaces: [a, b] });
    for (const n of [a, b, c]) await client.create(W, widget(n, "w", { message: n }));
    await readyWidget(client, a, "w");
    await readyWidget(client, b, "w");
    await new Promise((r) => setTimeout(r, 1_500));
    const inC = await client.get<Widget>(W, c, "w");
    expect(inC.status).toBeUndefined();
    expect(inC.metadata.finalizers ?? []).toEqual([]);
    expect(requests.filter((r) => r.path.includes(`/namespaces/${c}/`) || r.path.endsWith(`/namespaces/${c}`))).toEqual([]);
    // Every LIST and WATCH is namespaced: nothing cluster-wide for namespaced kinds.
    const clusterWide = requests.filter((r) => (r.verb === "LIST" || r.verb === "WATCH") && !r.path.includes("/namespaces/"));
    expect(clusterWide).toEqual([]);
  });

  it("with a target only ever sees objects labelled stateward.io/target=<target>", async () => {
    const n = await freshNamespace(client, "target");
    nss.push(n);
    const { manager } = await startManager({ namespaces: [n], target: "db1" });
    await client.create(W, widget(n, "mine", { message: "x" }, { "stateward.io/target": "db1" }));
    await client.create(W, widget(n, "other", { message: "x" }, { "stateward.io/target": "db2" }));
    await client.create(W, widget(n, "unlabelled", { message: "x" }));
    await readyWidget(client, n, "mine");
    await new Promise((r) => setTimeout(r, 1_500));
    for (const name of ["other", "unlabelled"]) expect((await client.get<Widget>(W, n, name)).status).toBeUndefined();
    expect(manager.cache.list<Widget>(W).map((w) => w.metadata.name)).toEqual(["mine"]);
  });
});
