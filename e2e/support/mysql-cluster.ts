// What the MySQLCluster suites and the mysql-cluster benchmark share: a
// namespace of their own, LocalPodServers giving its pods real servers, a
// manager whose mysql-cluster operator reaches them through it (loaded first,
// so every MySQL operator does), and the generated root password.
import { join } from "node:path";
import mysql from "mysql2/promise";
import { Manager, builtin, captureLogs, findCondition, type CapturedLogs, type KubeClient, type KubeObject, type OperatorModule } from "@stateward/core";
import { MySQLClusterKind, clusterNames, createMySQLClusterOperator, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import type { EnvironmentInfo } from "../harness/index.ts";
import { deleteNamespace, freshNamespace, kubeConfigFrom } from "./kube.ts";
import { LocalPodServers } from "./mysql-pods.ts";
import { waitFor } from "./wait.ts";

export interface ClusterSuite {
  ns: string;
  servers: LocalPodServers;
  manager: Manager;
  logs: CapturedLogs;
  /** Stops the manager (as a manager that is gone, or being upgraded); startManager starts a new one. */
  stopManager(): Promise<void>;
  startManager(): Promise<void>;
  stop(): Promise<void>;
}

export async function startClusterSuite(client: KubeClient, env: EnvironmentInfo, prefix: string, others: OperatorModule[] = []): Promise<ClusterSuite> {
  const ns = await freshNamespace(client, prefix);
  const servers = new LocalPodServers(client, join(env.dir, prefix), ns).start();
  const logs = captureLogs();
  const newManager = () =>
    new Manager({ kubeConfig: kubeConfigFrom(env.kubeconfig), namespaces: [ns], logger: logs.logger, gracefulShutdownMs: 10_000 }).load(
      createMySQLClusterOperator({ addresses: servers }),
      ...others,
    );
  const suite: ClusterSuite = {
    ns,
    servers,
    manager: newManager(),
    logs,
    async stopManager() {
      await suite.manager.stop();
    },
    async startManager() {
      suite.manager = newManager();
      await suite.manager.start();
    },
    async stop() {
      await suite.manager.stop();
      await servers.stop();
      await deleteNamespace(client, ns);
    },
  };
  await suite.manager.start();
  return suite;
}

/** A MySQLCluster to create: `spec` over the fields every suite gives. */
export function clusterManifest(ns: string, name: string, spec: Partial<MySQLCluster["spec"]> & Pick<MySQLCluster["spec"], "storage">): MySQLCluster {
  return { apiVersion: MySQLClusterKind.apiVersion, kind: MySQLClusterKind.kind, metadata: { name, namespace: ns }, spec };
}

/**
 * Waits until a cluster is Running with `replicas` servers Ready for its
 * current generation, and `check` holds; a time-out says where it stands.
 */
export async function clusterRunning(
  client: KubeClient,
  suite: Pick<ClusterSuite, "ns" | "servers">,
  name: string,
  replicas: number,
  { check = () => true, timeoutMs = 180_000 }: { check?: (c: MySQLCluster) => boolean; timeoutMs?: number } = {},
): Promise<MySQLCluster> {
  return waitFor(`MySQLCluster ${name} Running with ${replicas} ready`, async () => {
    const c = await client.get<MySQLCluster>(MySQLClusterKind.resource, suite.ns, name);
    if (c.status?.phase === "Running" && c.status.readyReplicas === replicas && c.status.observedGeneration === c.metadata.generation && check(c)) return c;
    const upgrading = findCondition(c.status?.conditions, "Upgrading");
    throw new Error(
      `phase ${c.status?.phase}, primary ${c.status?.currentPrimary}, updated ${c.status?.updated}, Upgrading ${upgrading?.reason}: ${upgrading?.message}; Ready: ${findCondition(c.status?.conditions, "Ready")?.message}${suite.servers.describeFailures()}`,
    );
  }, timeoutMs, 500);
}

/** The root password the operator generated for a cluster. */
export async function rootPassword(client: KubeClient, ns: string, cluster: string): Promise<string> {
  const s = await client.get<KubeObject & { data: Record<string, string> }>(builtin.secret, ns, clusterNames(cluster).rootSecret);
  return Buffer.from(s.data.password ?? "", "base64").toString("utf8");
}

/** A root connection to one pod's server (once started), as a DBA with a shell on the pod would open. */
export async function connectPod(servers: LocalPodServers, pod: string, password: string): Promise<mysql.Connection> {
  const server = await waitFor(`server of ${pod}`, () => servers.server(pod), 60_000, 200);
  return mysql.createConnection({ host: server.host, port: server.port, user: "root", password });
}

/** Runs statements in order on one pod's server, in one session; the rows of the last. */
export async function onPod(servers: LocalPodServers, pod: string, password: string, ...statements: string[]): Promise<Record<string, unknown>[]> {
  const conn = await connectPod(servers, pod, password);
  try {
    let rows: unknown = [];
    for (const sql of statements) [rows] = await conn.query(sql);
    return rows as Record<string, unknown>[];
  } finally {
    await conn.end();
  }
}
