// What backups and restores share: their dependencies, timestamps, and the
// Pending state they wait in (written only when its reason or message changes).
import { kubeTime, type BackgroundTasks, type Cache, type EventRecorder, type KubeClient, type KubeObject, type Leadership, type Metrics, type ResourceType } from "@stateward/core";
import type { MySQLConnector, SecretReader } from "@stateward/mysql";
import { writeRunStatus, type RunStatus } from "./run-status.ts";
import type { OperationSlots } from "./slots.ts";

export interface OperationDeps {
  client: KubeClient;
  cache: Cache;
  events: EventRecorder;
  tasks: BackgroundTasks;
  slots: OperationSlots;
  connector: MySQLConnector;
  secrets: SecretReader;
  /** This manager's identity, recorded as status.startedBy. */
  identity: string;
  /** Aborts the operations of a manager that lost leadership; fences taking over another manager's run. */
  leadership: Leadership;
  /** The manager's metrics: each kind registers its run metrics on it. */
  metrics: Metrics;
}

/**
 * How long to wait before treating a run left Running by another manager as
 * interrupted (and removing what it wrote): that manager may still be writing
 * until its lost lease has certainly expired. 0 for this manager's own runs.
 */
export function takeOverWaitMs(d: OperationDeps, status: RunStatus | undefined): number {
  return status?.startedBy === d.identity ? 0 : d.leadership.previousLeaderFenceMs();
}

/** Now, as Kubernetes timestamps are written (seconds). */
export const now = (): string => kubeTime(new Date());

export async function recordPending(client: KubeClient, rt: ResourceType, obj: KubeObject & { status?: RunStatus }, reason: string, message: string): Promise<void> {
  const c = obj.status?.conditions?.find((x) => x.type === "Ready");
  if (obj.status?.phase === "Pending" && c?.reason === reason && c.message === message) return;
  await writeRunStatus(client, rt, obj.metadata.namespace ?? "", obj.metadata.name ?? "", { phase: "Pending" }, { status: "False", reason, message });
}
