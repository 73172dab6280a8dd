// The runtime under failure, on a control plane of its own (so the shared
// one is never killed): a watch gone silent is restarted by the watchdog, an
// expired resourceVersion relists, kube-apiserver killed and restarted loses
// no change made meanwhile, leader election hands over when the leader
// vanishes, and `stateward run` shuts down gracefully on SIGTERM.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import {
  KubeClient,
  Manager,
  builtin,
  captureLogs,
  findCondition,
  type KubeObject,
} from "@stateward/core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ControlPlane, TcpProxy, repoRoot } from "../../harness/index.ts";
import { writeKubeconfig } from "../../harness/kubeconfig.ts";
import { WidgetKind, type Widget } from "../../sample-operator/api.ts";
import { sampleOperator } from "../../sample-operator/module.ts";
import { waitFor } from "../../support/wait.ts";

const W = WidgetKind.resource;
const dir = mkdtempSync(join(tmpdir(), "stateward-resilience-"));
// --watch-cache=false: watches are served by etcd itself, so compacting etcd
// makes an old resourceVersion expire (410) deterministically.
const plane = new ControlPlane({ dir, detached: false, apiOnly: true, apiserverArgs: ["--watch-cache=false"] });
let client: KubeClient;
const managers: Manager[] = [];
const proxies: TcpProxy[] = [];

/** A kubeconfig whose server is a fault-injecting proxy in front of the apiserver. */
async function proxiedKubeConfig(name: string): Promise<{ kc: KubeConfig; proxy: TcpProxy }> {
  const proxy = new TcpProxy({ host: "127.0.0.1", port: plane.apiserverPortNumber });
  proxies.push(proxy);
  const port = await proxy.start();
  const creds = plane.adminCredentials();
  const path = join(dir, `kubeconfig-${name}`);
  writeKubeconfig(path, { server: `https://127.0.0.1:${port}`, caPem: creds.caPem, user: { name: "admin", certPem: creds.certPem, keyPem: creds.keyPem } });
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return { kc, proxy };
}

function fastManager(kc: KubeConfig, extra: Partial<ConstructorParameters<typeof Manager>[0]> = {}): Manager {
  const m = new Manager({
    kubeConfig: kc,
    namespaces: ["res"],
    logger: captureLogs().logger,
    gracefulShutdownMs: 5_000,
    // Tight watchdog and backoff so the test sees recoveries within seconds.
    informer: { inactivityTimeoutMs: 2_000, initialBackoffMs: 200, maxBackoffMs: 1_000 },
    ...extra,
  }).load(sampleOperator());
  managers.push(m);
  return m;
}

const widget = (name: string, message: string): Widget =>
  ({ apiVersion: WidgetKind.apiVersion, kind: WidgetKind.kind, metadata: { name, namespace: "res" }, spec: { message } });

async function configMapMessage(c: KubeClient, name: string): Promise<string | undefined> {
  try {
    return (await c.get<KubeObject & { data?: Record<string, string> }>(builtin.configMap, "res", `${name}-widget`)).data?.message;
  } catch {
    return undefined;
  }
}

const until = (what: string, c: KubeClient, name: string, message: string, timeoutMs = 20_000) =>
  waitFor(what, async () => ((await configMapMessage(c, name)) === message ? true : undefined), timeoutMs);

async function gone(c: KubeClient, name: string): Promise<boolean | undefined> {
  try {
    await c.get(W, "res", name);
    return undefined;
  } catch {
    return true;
  }
}

const stats = (m: Manager) =>
  m.cache.informers().reduce(
    (acc, i) => ({ watchdogRestarts: acc.watchdogRestarts + i.stats.watchdogRestarts, relistsAfterGone: acc.relistsAfterGone + i.stats.relistsAfterGone }),
    { watchdogRestarts: 0, relistsAfterGone: 0 },
  );

async function etcdCompactNow(): Promise<number> {
  const etcd = plane.info().etcdUrl;
  const range = (await (await fetch(`${etcd}/v3/kv/range`, { method: "POST", body: JSON.stringify({ key: Buffer.from("/").toString("base64"), limit: 1 }) })).json()) as { header: { revision: string } };
  const revision = Number(range.header.revision);
  const res = await fetch(`${etcd}/v3/kv/compaction`, { method: "POST", body: JSON.stringify({ revision: String(revision), physical: true }) });
  expect(res.ok).toBe(true);
  return revision;
}

beforeAll(async () => {
  await plane.start();
  const kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfigPath);
  client = new KubeClient({ kubeConfig: kc, fieldManager: "e2e-test" });
  await client.create(builtin.namespace, { metadata: { name: "res" } });
}, 120_000);

afterEach(async () => {
  await Promise.all(managers.splice(0).map((m) => m.stop()));
  await Promise.all(proxies.splice(0).map((p) => p.stop()));
});

afterAll(async () => {
  await plane.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("informers under failure", () => {
  it("restart a watch that went silent (half-open connection) and deliver the change", async () => {
    const { kc, proxy } = await proxiedKubeConfig("watchdog");
    const manager = fastManager(kc);
    await manager.start();
    await client.create(W, widget("silent", "one"));
    await until("first reconcile", client, "silent", "one");
    const before = stats(manager).watchdogRestarts;
    expect(proxy.freeze()).toBeGreaterThan(0);
    await client.patch(W, "res", "silent", { spec: { message: "two" } });
    // The restarted watch opens a connection of its own, and the watchdog drops the pool's idle
    // connections (frozen with the watch): seconds, here. Up to a minute is left for a request that
    // was already running on a frozen connection to wait out its 30 s timeout.
    await until("change seen through a new watch", client, "silent", "two", 60_000);
    expect(stats(manager).watchdogRestarts).toBeGreaterThan(before);
  });

  it("relist after 410 Gone when the resourceVersion expired while disconnected", async () => {
    const { kc, proxy } = await proxiedKubeConfig("gone");
    const manager = fastManager(kc, { informer: { inactivityTimeoutMs: 60_000, initialBackoffMs: 200, maxBackoffMs: 1_000 } });
    await manager.start();
    for (const n of ["g1", "g2"]) await client.create(W, widget(n, "v1"));
    await until("g1", client, "g1", "v1");
    await until("g2", client, "g2", "v1");
    proxy.block();
    await client.patch(W, "res", "g1", { spec: { message: "v2" } });
    await client.create(W, widget("g3", "new"));
    await client.delete(W, "res", "g2");
    await etcdCompactNow();
    proxy.unblock();
    await until("g1 updated", client, "g1", "v2");
    await until("g3 created", client, "g3", "new");
    await waitFor("g2 finalized and gone", () => gone(client, "g2"), 20_000);
    expect(stats(manager).relistsAfterGone).toBeGreaterThan(0);
  });

  it("lose no change made while kube-apiserver was down, once it is back", async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    const manager = fastManager(kc);
    await manager.start();
    await client.create(W, widget("k1", "before"));
    await client.create(W, widget("k2", "before"));
    await until("k1", client, "k1", "before");
    await until("k2", client, "k2", "before");
    // A second apiserver on the same etcd lets the test write while the manager's apiserver is dead.
    const otherKc = new KubeConfig();
    otherKc.loadFromFile(await plane.startSecondApiserver());
    const other = new KubeClient({ kubeConfig: otherKc, fieldManager: "e2e-test" });
    await plane.stopApiserver();
    await other.patch(W, "res", "k1", { spec: { message: "during" } });
    await other.create(W, widget("k3", "during"));
    await other.delete(W, "res", "k2");
    await new Promise((r) => setTimeout(r, 2_000));
    await plane.startApiserver();
    await until("k1 updated", client, "k1", "during", 30_000);
    await until("k3 created", client, "k3", "during", 30_000);
    await waitFor("k2 finalized and gone", () => gone(client, "k2"), 30_000);
    const k3 = await client.get<Widget>(W, "res", "k3");
    expect(findCondition(k3.status?.conditions, "Ready")?.status).toBe("True");
  });
});

describe("connections to the API server", () => {
  it("sends sequential requests over far fewer connections than requests", async () => {
    const { kc, proxy } = await proxiedKubeConfig("pool");
    const pooled = new KubeClient({ kubeConfig: kc, fieldManager: "e2e-test" });
    for (let i = 0; i < 30; i++) await pooled.get(builtin.namespace, undefined, "res");
    // Before the shared pool: one connection (and TLS handshake) per request, 30.
    expect(proxy.accepted).toBeLessThanOrEqual(3);
  });

  it("fails a request on a pooled connection gone half-open within its timeout, and the next one succeeds on a new connection", async () => {
    const { kc, proxy } = await proxiedKubeConfig("half-open");
    const pooled = new KubeClient({ kubeConfig: kc, fieldManager: "e2e-test", requestTimeoutMs: 2_000 });
    for (let i = 0; i < 3; i++) await pooled.get(builtin.namespace, undefined, "res");
    const before = proxy.accepted;
    expect(proxy.freeze()).toBeGreaterThan(0);
    const started = Date.now();
    await expect(pooled.get(builtin.namespace, undefined, "res")).rejects.toThrow();
    const failedAfterMs = Date.now() - started;
    expect(failedAfterMs).toBeGreaterThanOrEqual(1_900);
    expect(failedAfterMs).toBeLessThan(6_000);
    expect((await pooled.get(builtin.namespace, undefined, "res")).metadata.name).toBe("res");
    expect(proxy.accepted).toBeGreaterThan(before);
  });
});

describe("leader election", () => {
  it("lets exactly one of two managers reconcile, and hands over within the lease duration when the leader vanishes", async () => {
    const lease = { namespace: "res", name: "widget-le", leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };
    const a = await proxiedKubeConfig("le-a");
    const b = await proxiedKubeConfig("le-b");
    const ma = fastManager(a.kc, { leaderElection: { ...lease, identity: "a" } });
    const mb = fastManager(b.kc, { leaderElection: { ...lease, identity: "b" } });
    await Promise.all([ma.start(), mb.start()]);
    const leader = await waitFor("a leader", () => (ma.isLeader() ? ma : mb.isLeader() ? mb : undefined), 10_000);
    const follower = leader === ma ? mb : ma;
    const leaderProxy = leader === ma ? a.proxy : b.proxy;
    // Give the follower a few retry periods to prove it stays a follower.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(follower.isLeader()).toBe(false);
    await client.create(W, widget("led", "by-leader"));
    await until("reconciled by the leader", client, "led", "by-leader");
    const reconciles = async (m: Manager) =>
      Number(/controller_runtime_reconcile_total\{controller="widget",result="success"\} (\d+)/.exec((await m.metrics.exposition()).body)?.[1] ?? 0);
    expect(await reconciles(leader)).toBeGreaterThan(0);
    expect(await reconciles(follower)).toBe(0);

    // The leader vanishes from the network (no graceful release): the follower must wait out the lease, then take over.
    const cutAt = Date.now();
    leaderProxy.block();
    await waitFor("follower takes over", () => (follower.isLeader() ? true : undefined), 15_000, 50);
    const takeoverMs = Date.now() - cutAt;
    expect(takeoverMs).toBeLessThanOrEqual(lease.leaseDurationMs + 2 * lease.retryPeriodMs + 1_000);
    await expect(leader.done).rejects.toThrow(/leader election lost/);
    await client.patch(W, "res", "led", { spec: { message: "by-new-leader" } });
    await until("reconciled by the new leader", client, "led", "by-new-leader");
  });

  it("uses the documented timings when none are given, as `stateward run --leader-elect` does: a 15 s Lease renewed every 2 s", async () => {
    const leaseRequests: string[] = [];
    const m = fastManager((await proxiedKubeConfig("le-defaults")).kc, {
      leaderElection: { namespace: "res", name: "widget-le-defaults" },
      onRequest: (o) => {
        if (o.path.includes("/leases")) leaseRequests.push(o.verb);
      },
    });
    await m.start();
    await waitFor("leader", () => (m.isLeader() ? true : undefined), 10_000);
    const since = leaseRequests.length;
    await new Promise((r) => setTimeout(r, 4_500));
    const lease = await client.get<KubeObject & { spec?: { leaseDurationSeconds?: number } }>(builtin.lease, "res", "widget-le-defaults");
    expect(lease.spec?.leaseDurationSeconds).toBe(15);
    // Two or three renewals in 4.5 s; a timer given NaN fires every millisecond instead.
    expect(leaseRequests.length - since).toBeLessThanOrEqual(6);
    await m.stop();
  });
});

describe("stateward run", () => {
  it("serves /readyz once synced and exits 0 on SIGTERM within the grace period", async () => {
    const child = spawn(process.execPath, [join(repoRoot, "cli", "src", "main.ts"), "run", "--kubeconfig", plane.kubeconfigPath,
      "--namespaces", "res", "--health-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const health = await waitFor("manager running log line", () => {
      for (const line of out.split("\n")) {
        if (!line.includes('"manager running"')) continue;
        return (JSON.parse(line) as { health: { port: number } }).health;
      }
      return undefined;
    }, 30_000);
    const ready = await fetch(`http://127.0.0.1:${health.port}/readyz`);
    expect(ready.status).toBe(200);
    const stopAt = Date.now();
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(Date.now() - stopAt).toBeLessThan(10_000);
    // Every log line is one JSON object with a level.
    for (const line of out.trim().split("\n")) expect(JSON.parse(line)).toHaveProperty("level");
  });
});
