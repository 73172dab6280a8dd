// The core runtime's baseline: 1,000 Widgets through the sample operator
// (e2e/sample-operator), with the manager in a process of its own.
//
//  1. start the manager on a fresh, empty namespace;
//  2. create 1,000 Widgets from a separate client (20 requests in flight) and
//     watch until every one is Ready, then until the manager is idle;
//  3. check that an idle manager writes nothing for a while;
//  4. SIGTERM the manager, start a new process, and time how long it takes to
//     sync its caches and reconcile all 1,000 again, which must write nothing;
//  5. delete the Widgets (the manager removes its finalizers) and the namespace.
//
// Reconcile counts, queue depth and busy workers come from the manager's
// /metrics, as a Prometheus scrape would see them; request counts and RSS come
// from the manager process over IPC.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  Cache,
  builtin,
  findCondition,
  isNotFound,
  messageOf,
  resourcePath,
  type KubeClient,
  type KubeObject,
  type ResourceType,
} from "@stateward/core";
import type { EnvironmentInfo } from "../harness/index.ts";
import { WidgetKind, type Widget } from "../sample-operator/api.ts";
import { deleteNamespace, freshNamespace, testClient, waitGone } from "../support/kube.ts";
import { waitFor } from "../support/wait.ts";
import type { BenchResult, BenchRow, Benchmark } from "./benchmark.ts";
import { startManagerProcess, type ManagerHandle } from "./manager-handle.ts";
import type { ManagerStats, WriteRequest } from "./manager-process.ts";
import { sampleSum } from "./metrics-text.ts";

/** The figure: enough objects that per-object costs dominate fixed ones. */
const WIDGETS = 1_000;
/** Creates in flight from the benchmark's client: a busy CI pipeline or `kubectl apply` of a large folder, not a flood. */
const CREATES_IN_FLIGHT = 20;
/** Workers of the Widget controller: more than one, so the queue's per-key exclusivity is exercised, and no more than 2 cores can use. */
const MAX_CONCURRENT_RECONCILES = 4;
/**
 * The fewest writes one Widget can cost the sample operator: the finalizer,
 * the owned ConfigMap, the status. Anything above is a conflict retry or a
 * write that changed nothing.
 */
const MIN_WRITES_PER_WIDGET = 3;
/** Quiet period after idling in which the manager must write nothing (DESIGN: steady state makes no writes). */
const STEADY_STATE_MS = 3_000;
/** After a restart has gone idle, how long to keep watching for late writes. */
const RESTART_SETTLE_MS = 2_000;
/** Queue empty, no worker busy, and no reconcile counted across this window: the manager is idle. */
const IDLE_WINDOW_MS = 250;
const SCRAPE_EVERY_MS = 50;
// Deadlines: several times what a 2-core machine needs, so only a real regression or hang trips them.
const START_TIMEOUT_MS = 60_000;
const ALL_READY_TIMEOUT_MS = 150_000;
const RESYNC_TIMEOUT_MS = 60_000;
const DELETE_TIMEOUT_MS = 120_000;

const W = WidgetKind.resource;
/** WIDGETS as a reader writes it, for metric names. */
const WIDGETS_TEXT = WIDGETS.toLocaleString("en-US");
const CONTROLLER = { controller: "widget" };

interface Sample {
  at: number;
  reconciles: number;
  errors: number;
  reconcileSeconds: number;
  depth: number;
  active: number;
}

async function sample(manager: ManagerHandle): Promise<Sample> {
  const text = await manager.scrape();
  return {
    at: performance.now(),
    reconciles: sampleSum(text, "controller_runtime_reconcile_total", CONTROLLER),
    errors: sampleSum(text, "controller_runtime_reconcile_errors_total", CONTROLLER),
    reconcileSeconds: sampleSum(text, "controller_runtime_reconcile_time_seconds_sum", CONTROLLER),
    depth: sampleSum(text, "workqueue_depth", { name: "widget" }),
    active: sampleSum(text, "controller_runtime_active_workers", CONTROLLER),
  };
}

/**
 * Scrapes until the manager is idle (see IDLE_WINDOW_MS) having counted at
 * least `minReconciles`; returns the first sample of the idle window, i.e.
 * when the last reconcile had finished.
 */
async function waitIdle(manager: ManagerHandle, minReconciles: number, timeoutMs: number): Promise<Sample> {
  const until = performance.now() + timeoutMs;
  let quietSince: Sample | undefined;
  for (;;) {
    const s = await sample(manager);
    const quiet = s.depth === 0 && s.active === 0 && s.reconciles >= minReconciles;
    if (!quiet || (quietSince && s.reconciles !== quietSince.reconciles)) quietSince = quiet ? s : undefined;
    else quietSince ??= s;
    if (quietSince && s.at - quietSince.at >= IDLE_WINDOW_MS) return quietSince;
    if (performance.now() > until) {
      throw new Error(
        `the manager was not idle after ${timeoutMs} ms: ${s.reconciles} reconciles (wanted at least ${minReconciles}), ` +
          `queue depth ${s.depth}, ${s.active} busy workers`,
      );
    }
    await sleep(SCRAPE_EVERY_MS);
  }
}

function isReady(w: Widget): boolean {
  const ready = findCondition(w.status?.conditions, "Ready");
  return ready?.status === "True" && ready.observedGeneration === w.metadata.generation && w.status?.configMap === `${w.metadata.name}-widget`;
}

function widgetName(i: number): string {
  return `w-${String(i).padStart(4, "0")}`;
}

/** Runs `fn` over `items` with at most `limit` calls in flight. */
async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Every object of a kind in a namespace, in pages of 500 (what the informers do). */
async function listAll<T extends KubeObject>(client: KubeClient, rt: ResourceType, namespace: string): Promise<T[]> {
  const items: T[] = [];
  let token: string | undefined;
  do {
    const page = await client.list<T>(rt, { namespace, limit: 500, continue: token });
    items.push(...page.items);
    token = page.metadata.continue || undefined;
  } while (token);
  return items;
}

const mib = (bytes: number) => bytes / 1024 / 1024;
const inMiB = (u: NodeJS.MemoryUsage) => {
  const r = (bytes: number) => Number(mib(bytes).toFixed(1));
  return { rss: r(u.rss), heapTotal: r(u.heapTotal), heapUsed: r(u.heapUsed), external: r(u.external), arrayBuffers: r(u.arrayBuffers) };
};
const describeWrites = (writes: WriteRequest[], total: number) =>
  writes.map((w) => `  ${w.verb} ${w.path} -> ${w.status}`).join("\n") + (total > writes.length ? `\n  ... and ${total - writes.length} more` : "");

/**
 * Watches the namespace's Widgets from the benchmark's side (a watch is
 * lighter on a 2-core machine than a LIST every 250 ms of 1,000 objects) and
 * notes the moment the last one turns Ready.
 */
class ReadyWatch {
  readonly cache: Cache;
  readonly ready = new Set<string>();
  allReadyAt: number | undefined;
  private readonly expected: number;

  constructor(client: KubeClient, namespace: string, expected: number) {
    this.expected = expected;
    this.cache = new Cache(client, { namespaces: [namespace] });
    this.cache.onEvent<Widget>(W, (e) => {
      const name = e.obj.metadata.name ?? "";
      if (e.type !== "delete" && isReady(e.obj)) this.ready.add(name);
      else this.ready.delete(name);
      if (this.ready.size >= this.expected) this.allReadyAt ??= performance.now();
    });
  }

  async start(): Promise<void> {
    this.cache.start();
    await this.cache.waitForSync();
  }

  count(): number {
    return this.cache.list<Widget>(W).length;
  }
}

async function run(env: EnvironmentInfo): Promise<BenchResult> {
  const client = testClient(env.kubeconfig);
  const logDir = join(env.dir, "bench");
  mkdirSync(logDir, { recursive: true });
  const ns = await freshNamespace(client, "bench-core");
  const config = { kubeconfig: env.kubeconfig, namespace: ns, operators: { sample: { maxConcurrentReconciles: MAX_CONCURRENT_RECONCILES } } };
  const watch = new ReadyWatch(client, ns, WIDGETS);
  const managers: ManagerHandle[] = [];
  const rows: BenchRow[] = [];
  const failures: string[] = [];
  const row = (metric: string, value: number, unit: string, reference?: number, note?: string) =>
    rows.push({ metric, value, unit, reference, note });
  let cleanedUp = false;

  try {
    // 1. A manager on an empty namespace.
    const first = await startManagerProcess({ ...config, recordWrites: false }, join(logDir, "core-manager-1.log"), START_TIMEOUT_MS);
    managers.push(first);
    await watch.start();
    row("Widgets", WIDGETS, "");
    row("maxConcurrentReconciles", MAX_CONCURRENT_RECONCILES, "workers");
    row("creates in flight", CREATES_IN_FLIGHT, "requests");
    row("manager start, empty namespace (fork -> CRD installed, caches synced)", first.startupMs, "ms");
    row("manager RSS after cache sync (empty namespace)", mib(first.atSync.rssBytes), "MiB");
    row("manager live heap, empty namespace (after a full GC)", mib((await first.stats({ gc: true })).heapLiveBytes ?? NaN), "MiB");

    // 2. 1,000 Widgets, until all are Ready and the manager is idle.
    const before = await sample(first);
    const statsBefore = await first.stats();
    const t0 = performance.now();
    const names = Array.from({ length: WIDGETS }, (_, i) => widgetName(i));
    await inParallel(names, CREATES_IN_FLIGHT, async (name) => {
      await client.create<Widget>(W, {
        apiVersion: WidgetKind.apiVersion,
        kind: WidgetKind.kind,
        metadata: { name, namespace: ns },
        spec: { message: `benchmark ${name}` },
      });
    });
    const createdMs = performance.now() - t0;
    await waitFor(`all ${WIDGETS} Widgets Ready`, () => (watch.allReadyAt !== undefined ? true : undefined), ALL_READY_TIMEOUT_MS, SCRAPE_EVERY_MS).catch(
      (err: unknown) => {
        throw new Error(`${messageOf(err)} (${watch.ready.size} Ready)`);
      },
    );
    const allReadyMs = (watch.allReadyAt ?? performance.now()) - t0;
    const idle = await waitIdle(first, before.reconciles + WIDGETS, ALL_READY_TIMEOUT_MS);
    const statsIdle = await first.stats();
    const reconciles = idle.reconciles - before.reconciles;
    const requests = statsIdle.requests.total - statsBefore.requests.total;
    const writes = statsIdle.requests.writes - statsBefore.requests.writes;
    const convergedS = (idle.at - t0) / 1000;

    row(`create ${WIDGETS_TEXT} Widgets (benchmark client)`, createdMs / 1000, "s");
    row(`time until all ${WIDGETS_TEXT} Ready (from the first create)`, allReadyMs / 1000, "s", createdMs / 1000, "reference: creating them");
    row("time until the manager is idle (queue empty)", convergedS, "s");
    row("reconciles until idle", reconciles, "");
    row("reconciles per Widget", reconciles / WIDGETS, "");
    row("reconciles per second (first create -> idle)", reconciles / convergedS, "/s");
    row("mean reconcile duration", ((idle.reconcileSeconds - before.reconcileSeconds) / reconciles) * 1000, "ms");
    row("reconcile errors (retried; e.g. 409 Conflict)", idle.errors - before.errors, "");
    row("API requests per reconcile", requests / reconciles, "requests");
    row("API writes per Widget", writes / WIDGETS, "requests", MIN_WRITES_PER_WIDGET, "reference: finalizer + ConfigMap + status");
    row(`manager RSS with ${WIDGETS_TEXT} Ready Widgets (idle)`, mib(statsIdle.rssBytes), "MiB");

    // 3. Steady state: an idle manager writes nothing.
    await first.recordWrites();
    await sleep(STEADY_STATE_MS);
    const steady = await first.stats({ gc: true });
    const steadyWrites = steady.requests.writes - statsIdle.requests.writes;
    row(`writes while idle (${STEADY_STATE_MS / 1000} s)`, steadyWrites, "requests", 0);
    row(`manager live heap with ${WIDGETS_TEXT} Widgets (after a full GC)`, mib(steady.heapLiveBytes ?? NaN), "MiB");
    if (steadyWrites !== 0) {
      failures.push(`the idle manager made ${steadyWrites} write requests in ${STEADY_STATE_MS} ms:\n${describeWrites(steady.writes, steadyWrites)}`);
    }

    // What converged must really be there, read back with plain LISTs (which also time the reference for a resync).
    const listStarted = performance.now();
    const widgets = await listAll<Widget>(client, W, ns);
    const configMaps = await listAll<KubeObject & { data?: Record<string, string> }>(client, builtin.configMap, ns);
    const listMs = performance.now() - listStarted;
    const notReady = widgets.filter((w) => !isReady(w)).map((w) => w.metadata.name);
    if (widgets.length !== WIDGETS || notReady.length > 0) {
      failures.push(`LIST shows ${widgets.length} Widgets, ${notReady.length} not Ready: ${notReady.slice(0, 10).join(", ")}`);
    }
    const rendered = configMaps.filter((cm) => cm.metadata.ownerReferences?.some((r) => r.kind === WidgetKind.kind && r.controller));
    if (rendered.length !== WIDGETS || rendered.some((cm) => !cm.data?.message?.startsWith("benchmark w-"))) {
      failures.push(`LIST shows ${rendered.length} ConfigMaps owned by Widgets, not ${WIDGETS} with their messages`);
    }

    // 4. Restart: a real process restart on 1,000 converged Widgets.
    const shutdownMs = await first.stop();
    const second = await startManagerProcess({ ...config, recordWrites: true }, join(logDir, "core-manager-2.log"), RESYNC_TIMEOUT_MS);
    managers.push(second);
    const resynced = await waitIdle(second, WIDGETS, RESYNC_TIMEOUT_MS);
    await sleep(RESTART_SETTLE_MS);
    const afterRestart = await second.stats({ gc: true });
    row("restart: SIGTERM -> old process exited", shutdownMs, "ms");
    row(
      "restart: fork -> caches synced",
      second.startupMs,
      "ms",
      listMs,
      `reference: paged LIST of the ${WIDGETS_TEXT} Widgets and their ConfigMaps by a plain client`,
    );
    row("restart: fork -> every Widget reconciled, manager idle", resynced.at - second.forkedAt, "ms");
    row("restart: reconciles", resynced.reconciles, "");
    row("restart: write requests", afterRestart.requests.writes, "requests", 0);
    row("manager RSS after the restart's resync", mib(afterRestart.rssBytes), "MiB");
    row("manager live heap after the restart's resync (after a full GC)", mib(afterRestart.heapLiveBytes ?? NaN), "MiB");
    if (afterRestart.requests.writes !== 0) {
      failures.push(
        `the restarted manager made ${afterRestart.requests.writes} write requests on ${WIDGETS} converged Widgets ` +
          `(it must make none):\n${describeWrites(afterRestart.writes, afterRestart.requests.writes)}`,
      );
    }

    // 5. Cleanup through the manager: it removes its finalizer from each deleted Widget.
    const deleteStarted = performance.now();
    await client.request("DELETE", resourcePath(W, ns), { verb: "DELETE" });
    await waitFor("every Widget deleted", () => (watch.count() === 0 ? true : undefined), DELETE_TIMEOUT_MS, SCRAPE_EVERY_MS);
    row(`delete ${WIDGETS_TEXT} Widgets (finalizers removed by the manager)`, (performance.now() - deleteStarted) / 1000, "s");
    await second.stop();
    await deleteNamespace(client, ns);
    await waitGone(client, builtin.namespace, undefined, ns, DELETE_TIMEOUT_MS);
    cleanedUp = true;

    return {
      rows,
      failures,
      details: {
        namespace: ns,
        requestsByVerbUntilIdle: diffVerbs(statsBefore, statsIdle),
        requestsByVerbAfterRestart: afterRestart.requests.byVerb,
        memoryUsageMiB: { idle: inMiB(statsIdle.memory), afterRestart: inMiB(afterRestart.memory) },
      },
    };
  } finally {
    for (const m of managers) m.kill();
    await watch.cache.stop();
    if (!cleanedUp) await forceCleanup(client, ns);
  }
}

function diffVerbs(from: ManagerStats, to: ManagerStats): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [verb, n] of Object.entries(to.requests.byVerb)) out[verb] = n - (from.requests.byVerb[verb] ?? 0);
  return out;
}

/**
 * After a failure, no manager is left to remove the finalizers, so the
 * namespace would hang in Terminating: take them off by hand, then delete it.
 * Best effort; the runner stops the whole environment afterwards anyway.
 */
async function forceCleanup(client: KubeClient, ns: string): Promise<void> {
  try {
    const left = await listAll<Widget>(client, W, ns);
    await inParallel(left, CREATES_IN_FLIGHT, async (w) => {
      await client.patch(W, ns, w.metadata.name ?? "", { metadata: { finalizers: null } }).catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
    });
    await deleteNamespace(client, ns);
  } catch (err) {
    console.error(`core benchmark: could not clean up namespace ${ns}: ${messageOf(err)}`);
  }
}

export const coreBenchmark: Benchmark = {
  name: "core",
  description: `core runtime: ${WIDGETS_TEXT} sample Widgets through one manager process (maxConcurrentReconciles ${MAX_CONCURRENT_RECONCILES}), then a restart`,
  run,
};
