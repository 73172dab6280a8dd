// What the MySQLCluster reconciler and each of its steps work with.
import type { BackgroundTasks, Cache, Clock, EventRecorder, KubeClient, Metrics } from "@stateward/core";
import type { MySQLConnector, SecretReader, ServerAddressResolver } from "@stateward/mysql";

export interface ClusterReconcilerDeps {
  client: KubeClient;
  cache: Cache;
  events: EventRecorder;
  connector: MySQLConnector;
  secrets: SecretReader;
  addresses: ServerAddressResolver;
  /** Where seeds run: outside the reconcile (controllers/seeding.ts). */
  tasks: BackgroundTasks;
  /** What is written into status as a time (a rollout step's start, a readiness gate's transition) and what it is compared with. */
  clock: Clock;
  /** The label of the manager's `--target`, copied from the cluster to the MySQLInstance it publishes. */
  targetLabel?: string;
  /** The manager's metrics, where the cluster's per-object metrics are registered (metrics.ts). */
  metrics: Metrics;
}
