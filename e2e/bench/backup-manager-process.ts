// The manager under the mysql-backup benchmark, in a process of its own so
// that its RSS is its own (not the benchmark driver's, which runs the
// reference pipelines and generates the data): the database-user operator
// (MySQLInstance) and the mysql-backup operator, as `stateward run
// --operators database-user,mysql-backup` would run them.
//
// Started by backup-manager-handle.ts with child_process.fork and one JSON
// argument (BackupManagerConfig); talks over the IPC channel. Logs go to
// stdout, which the parent points at a file. SIGTERM/SIGINT stop the manager
// gracefully; so does losing the parent (IPC disconnect), so an interrupted
// benchmark leaves no manager behind.
import { KubeConfig } from "@kubernetes/client-node";
import { Manager, createLogger } from "@stateward/core";
import { databaseUserOperator } from "@stateward/operator-database-user";
import { createMySQLBackupOperator } from "@stateward/operator-mysql-backup";

export interface BackupManagerConfig {
  kubeconfig: string;
  namespace: string;
}

export type BackupManagerMessage =
  | { type: "synced" }
  | { type: "memory"; id: number; memory: NodeJS.MemoryUsage }
  | { type: "failed"; message: string };

/** `memory`: process.memoryUsage() now (V8 heap vs Buffers), to explain an RSS figure. */
export type BackupManagerRequest = { type: "memory"; id: number };

/** Bounded so a stop during teardown (API server already gone) cannot hang the benchmark. */
const gracefulShutdownMs = 10_000;

function send(message: BackupManagerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) return resolve();
    process.send(message, undefined, undefined, () => resolve());
  });
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? "{}") as BackupManagerConfig;
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(config.kubeconfig);
  // The operator's defaults (2 operations at once), as a user gets them.
  const manager = new Manager({
    kubeConfig,
    namespaces: [config.namespace],
    logger: createLogger({ level: "info" }),
    gracefulShutdownMs,
  }).load(databaseUserOperator, createMySQLBackupOperator());

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    // The manager's own bound, plus a margin for the informers.
    setTimeout(() => process.exit(1), gracefulShutdownMs + 5_000);
    void manager.stop().then(() => process.exit(0));
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  process.on("disconnect", stop);
  process.on("message", (request: BackupManagerRequest) => {
    if (request.type === "memory") void send({ type: "memory", id: request.id, memory: process.memoryUsage() });
  });

  await manager.start();
  await send({ type: "synced" });
}

main().catch(async (err: unknown) => {
  await send({ type: "failed", message: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
