// The mysql-cluster operator: what its manager holds in memory for objects
// that are not its own, and what failover, switchover and semi-sync cost
// (mysql-cluster-failover.ts).
//
// Memory in a busy namespace: the manager caches only what it made (by its
// labels, app.kubernetes.io/name=mysql-cluster and managed-by=stateward), so
// 1,000 unrelated ConfigMaps and 1,000 unrelated Pods in its namespace must
// not grow it.
//
//  1. a manager (its own process, as `stateward run --operators mysql-cluster`)
//     on an empty namespace: RSS and live heap (after a full GC) once synced;
//  2. 1,000 ConfigMaps (2 KiB of data each) and 1,000 Pods (bound to a node
//     that does not exist, so nothing schedules or runs them) created;
//  3. a new manager process on that namespace: the same figures.
//
// Fails when the live heap grew by more than MAX_GROWTH_BYTES, or when a
// failover under SemiSync, or any switchover, lost an acknowledged write.
import { mkdirSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { join } from "node:path";
import { builtin, type KubeClient, type KubeObject } from "@stateward/core";
import type { EnvironmentInfo } from "../harness/index.ts";
import { deleteNamespace, freshNamespace, testClient } from "../support/kube.ts";
import type { BenchResult, BenchRow, Benchmark } from "./benchmark.ts";
import { failoverRows, measureFailover } from "./mysql-cluster-failover.ts";
import { startManagerProcess, type ManagerHandle } from "./manager-handle.ts";

const OBJECTS = 1_000;
const CREATES_IN_FLIGHT = 20;
const SYNC_TIMEOUT_MS = 120_000;
/** After "synced", informers have listed everything; a moment more for the first reconciles to settle. */
const SETTLE_MS = 2_000;
/** What unrelated objects may add to the live heap: well under what caching them costs (several MiB). */
const MAX_GROWTH_BYTES = 2 * 1024 * 1024;
const MiB = 1024 * 1024;

async function inParallel(count: number, limit: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
}

function unrelatedConfigMap(ns: string, i: number): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: `unrelated-${i}`, namespace: ns, labels: { app: "someone-else", "app.kubernetes.io/name": "other" } },
    data: { "settings.json": JSON.stringify({ index: i, payload: "x".repeat(2048) }) },
  } as KubeObject;
}

function unrelatedPod(ns: string, i: number): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: `unrelated-${i}`, namespace: ns, labels: { app: "someone-else", "app.kubernetes.io/name": "other" }, annotations: { note: "y".repeat(1024) } },
    spec: {
      // Bound to no real node: the scheduler leaves it alone and nothing runs it.
      nodeName: "bench-no-such-node",
      containers: [{ name: "app", image: "registry.example/app:1", env: Array.from({ length: 10 }, (_, k) => ({ name: `VAR_${k}`, value: `value-${i}-${k}` })) }],
    },
  } as KubeObject;
}

async function measure(client: KubeClient, env: EnvironmentInfo, ns: string, logFile: string): Promise<{ rss: number; heapLive: number; startupMs: number }> {
  let manager: ManagerHandle | undefined;
  try {
    manager = await startManagerProcess({ kubeconfig: env.kubeconfig, namespace: ns, operators: "mysql-cluster" }, logFile, SYNC_TIMEOUT_MS);
    await sleep(SETTLE_MS);
    const stats = await manager.stats({ gc: true });
    return { rss: stats.rssBytes, heapLive: stats.heapLiveBytes ?? stats.memory.heapUsed, startupMs: manager.startupMs };
  } finally {
    await manager?.stop().catch(() => manager?.kill());
  }
}

export const mysqlClusterBenchmark: Benchmark = {
  name: "mysql-cluster",
  description: `mysql-cluster manager memory with ${OBJECTS.toLocaleString("en-US")} unrelated ConfigMaps and Pods in its namespace; failover, switchover and commit latency, SemiSync and Async`,
  async run(env: EnvironmentInfo): Promise<BenchResult> {
    const client = testClient(env.kubeconfig);
    const ns = await freshNamespace(client, "bench-cluster");
    const logDir = join(env.dir, "bench");
    mkdirSync(logDir, { recursive: true });
    let memory: BenchResult;
    try {
      const empty = await measure(client, env, ns, join(logDir, "mysql-cluster-manager-empty.log"));
      await inParallel(OBJECTS, CREATES_IN_FLIGHT, async (i) => {
        await client.create(builtin.configMap, unrelatedConfigMap(ns, i));
        await client.create(builtin.pod, unrelatedPod(ns, i));
      });
      const busy = await measure(client, env, ns, join(logDir, "mysql-cluster-manager-busy.log"));
      const growth = busy.heapLive - empty.heapLive;
      const rows: BenchRow[] = [
        { metric: "manager RSS, empty namespace", value: empty.rss / MiB, unit: "MiB" },
        { metric: `manager RSS, ${OBJECTS} unrelated ConfigMaps + ${OBJECTS} Pods`, value: busy.rss / MiB, unit: "MiB", reference: empty.rss / MiB, note: "empty namespace" },
        { metric: "manager live heap (after GC), empty namespace", value: empty.heapLive / MiB, unit: "MiB" },
        { metric: `manager live heap (after GC), ${OBJECTS} unrelated ConfigMaps + ${OBJECTS} Pods`, value: busy.heapLive / MiB, unit: "MiB", reference: empty.heapLive / MiB, note: "empty namespace" },
        { metric: "manager start-up to caches synced, busy namespace", value: busy.startupMs, unit: "ms", reference: empty.startupMs, note: "empty namespace" },
      ];
      const failures = growth > MAX_GROWTH_BYTES ? [`unrelated objects grew the manager's live heap by ${(growth / MiB).toFixed(1)} MiB (at most ${MAX_GROWTH_BYTES / MiB} MiB): they are cached`] : [];
      memory = { rows, failures, details: { empty, busy } };
    } finally {
      await deleteNamespace(client, ns);
    }
    const failover = await measureFailover(client, env, (line) => console.log(line));
    const durability = failoverRows(failover);
    return { rows: [...memory.rows, ...durability.rows], failures: [...memory.failures, ...durability.failures], details: { ...memory.details, failover } };
  },
};
