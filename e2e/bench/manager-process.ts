// The manager under benchmark, in a process of its own, so that its RSS is
// its own (not the benchmark driver's, which may also run reference pipelines
// and generate data) and a restart is a real process restart: cold module
// loading, empty caches, a fresh LIST. It runs the operators a benchmark
// names: the sample operator (core.bench.ts), or the database-user and
// mysql-backup operators as `stateward run --operators
// database-user,mysql-backup` runs them (mysql-backup.bench.ts), or the
// mysql-cluster operator (mysql-cluster.bench.ts).
//
// Started by manager-handle.ts with child_process.fork and one JSON argument
// (ManagerProcessConfig); talks over the IPC channel (ManagerProcessMessage,
// ManagerProcessRequest). Its logs go to stdout, which the parent points at a
// file. SIGTERM/SIGINT stop the manager gracefully, as `stateward run` does;
// losing the parent (IPC disconnect) does too, so an interrupted benchmark
// leaves no manager behind.
//
// Like `stateward run`, it loads client-node's KubeConfig without the generated API
// client (the CLI's module hook, registered before anything imports client-node) and
// only the operators it runs, so that its RSS is what the command's would be.
import { registerSlimClientNode } from "@stateward/cli";
import type { OperatorModule, RequestCounts, RequestObservation } from "@stateward/core";
import { messageOf } from "@stateward/core";

registerSlimClientNode();
const { KubeConfig } = await import("@kubernetes/client-node/dist/config.js");
const { Manager, createLogger } = await import("@stateward/core");

export interface ManagerProcessConfig {
  kubeconfig: string;
  namespace: string;
  /**
   * What to run: the sample operator with this many workers, or the MySQL
   * operators with their defaults (as a user gets them).
   */
  operators: { sample: { maxConcurrentReconciles: number } } | "mysql-backup" | "mysql-cluster";
  /** Record write requests from the start (the restart check) rather than from a "record-writes" request on. */
  recordWrites?: boolean;
}

async function operatorsOf(config: ManagerProcessConfig): Promise<OperatorModule[]> {
  if (config.operators === "mysql-backup") {
    const [{ databaseUserOperator }, { createMySQLBackupOperator }] = await Promise.all([
      import("@stateward/operator-database-user"),
      import("@stateward/operator-mysql-backup"),
    ]);
    return [databaseUserOperator, createMySQLBackupOperator()];
  }
  if (config.operators === "mysql-cluster") return [(await import("@stateward/operator-mysql-cluster")).createMySQLClusterOperator()];
  const { sampleOperator } = await import("../sample-operator/module.ts");
  return [sampleOperator({ maxConcurrentReconciles: config.operators.sample.maxConcurrentReconciles })];
}

/** A write request the manager made while recording (never a body: only what and where). */
export interface WriteRequest {
  verb: string;
  path: string;
  status: number;
}

export interface ManagerStats {
  /** Resident set size: what the kubelet and an OOM kill see. */
  rssBytes: number;
  /** process.memoryUsage() at the same moment: V8 heap committed and used (garbage included), Buffers. */
  memory: NodeJS.MemoryUsage;
  /** V8 heap in use right after a full garbage collection (live objects only); when asked for with `gc`. */
  heapLiveBytes?: number;
  requests: RequestCounts;
  /** Write requests since recording began, at most `maxRecordedWrites`. */
  writes: WriteRequest[];
}

export type ManagerProcessMessage =
  | { type: "synced"; metricsPort: number; stats: ManagerStats }
  | { type: "stats"; stats: ManagerStats }
  | { type: "failed"; message: string };

/** `gc`: collect garbage (after reading RSS) to report the live heap; the parent starts this process with --expose-gc. */
export type ManagerProcessRequest = { type: "stats"; gc?: boolean } | { type: "record-writes" };

/** Enough to show what went wrong without letting a runaway loop grow the process it measures. */
const maxRecordedWrites = 100;
/** Bounded so a stop during teardown (API server already gone) cannot hang the benchmark. */
const gracefulShutdownMs = 10_000;
const writeVerbs = new Set(["POST", "PUT", "PATCH", "DELETE"]);

function send(message: ManagerProcessMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) return resolve();
    process.send(message, undefined, undefined, () => resolve());
  });
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? "{}") as ManagerProcessConfig;
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(config.kubeconfig);

  let recording = config.recordWrites ?? false;
  const writes: WriteRequest[] = [];
  const manager = new Manager({
    kubeConfig,
    namespaces: [config.namespace],
    logger: createLogger({ level: "info" }),
    metricsAddr: "127.0.0.1:0",
    healthAddr: "0",
    gracefulShutdownMs,
    onRequest: (o: RequestObservation) => {
      if (recording && writeVerbs.has(o.verb) && writes.length < maxRecordedWrites) writes.push({ verb: o.verb, path: o.path, status: o.status });
    },
  }).load(...(await operatorsOf(config)));

  const gc = (globalThis as { gc?: () => void }).gc;
  const stats = (collect = false): ManagerStats => {
    const memory = process.memoryUsage();
    const now: ManagerStats = {
      rssBytes: memory.rss,
      memory,
      requests: structuredClone(manager.requests),
      writes: [...writes],
    };
    if (collect && gc) {
      gc();
      now.heapLiveBytes = process.memoryUsage().heapUsed;
    }
    return now;
  };

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    // The manager's own bound, plus a margin for the informers and servers.
    setTimeout(() => process.exit(1), gracefulShutdownMs + 5_000);
    void manager.stop().then(() => process.exit(0));
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  process.on("disconnect", stop);
  process.on("message", (request: ManagerProcessRequest) => {
    if (request.type === "record-writes") {
      writes.length = 0;
      recording = true;
    }
    void send({ type: "stats", stats: stats(request.type === "stats" && request.gc === true) });
  });

  await manager.start();
  const port = manager.metricsAddress?.port;
  if (port === undefined) throw new Error("the manager serves no /metrics");
  await send({ type: "synced", metricsPort: port, stats: stats() });
}

main().catch(async (err: unknown) => {
  // The manager may hold sockets and timers open; the parent has what it needs once the message is out.
  await send({ type: "failed", message: messageOf(err) });
  process.exit(1);
});
