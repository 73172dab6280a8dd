// A lost primary on the stand-in servers (or one only the operator cannot
// reach), and an application that writes through the primary Service
// meanwhile: what the failover tests and the mysql-cluster benchmark do to a
// MySQLCluster, and how they read the result.
import { setTimeout as sleep } from "node:timers/promises";
import { findCondition, type KubeClient } from "@stateward/core";
import { MySQLClusterKind, primaryHost, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import { AcknowledgedWriter } from "./acknowledged-writes.ts";
import { connectPod, onPod } from "./mysql-cluster.ts";
import type { LocalPodServers } from "./mysql-pods.ts";
import { waitFor } from "./wait.ts";

/** The application's account: no SUPER (which read-only stops), INSERT on `app`. */
export const WRITER = { user: "writer", password: "Writer-Pass-1" } as const;

/** A database `app` and the WRITER account, made on the cluster's primary. */
export async function prepareApp(client: KubeClient, servers: LocalPodServers, ns: string, name: string, password: string): Promise<void> {
  const primary = (await client.get<MySQLCluster>(MySQLClusterKind.resource, ns, name)).status?.currentPrimary ?? "";
  await onPod(servers, primary, password, "CREATE DATABASE app", `CREATE USER ${WRITER.user}@'%' IDENTIFIED BY '${WRITER.password}'`, `GRANT SELECT, INSERT ON app.* TO ${WRITER.user}@'%'`);
}

/** Writes every 10 ms through the cluster's primary Service, as WRITER, into `table`: an application in the pods' network. */
export function startPrimaryWriter(servers: LocalPodServers, ns: string, name: string, table: string, recordGtids = false): AcknowledgedWriter {
  return new AcknowledgedWriter({ endpoint: () => servers.reach({ host: primaryHost(name, ns), port: 3306 }), ...WRITER, table, retryAfterMs: 20, recordGtids }).start();
}

/** The ids stored in `table` on one pod's server. */
export async function storedIds(servers: LocalPodServers, pod: string, password: string, table: string): Promise<Set<number>> {
  return new Set((await onPod(servers, pod, password, `SELECT id FROM ${table}`)).map((r) => Number(r.id)));
}

/** The server of `pod` killed and its pod not Ready: the node it ran on is lost. */
export async function loseNode(servers: LocalPodServers, pod: string): Promise<void> {
  await servers.kill(pod);
  await servers.setPodReady(pod, false);
}

/** The node back: the server starts on its data (read-only, from my.cnf), the pod Ready. */
export async function nodeBack(servers: LocalPodServers, pod: string): Promise<void> {
  await servers.revive(pod);
  await servers.setPodReady(pod, true);
}

/**
 * A partition between the operator and `pod`'s server: the operator's new connections to it fail
 * (LocalPodServers.partition) and the sessions it holds are closed by the server, as a partition
 * breaks them too. The operator logs in as root; the replicas (the replication account) and
 * applications stay connected. Sessions are closed until none is left: one the operator was
 * opening as the cut was made is closed by a later pass.
 */
export async function partitionFromOperator(servers: LocalPodServers, pod: string, password: string): Promise<void> {
  servers.partition(pod, true);
  const dba = await connectPod(servers, pod, password);
  try {
    for (const until = Date.now() + 10_000; ; ) {
      const [sessions] = await dba.query("SELECT ID AS id FROM information_schema.PROCESSLIST WHERE USER = 'root' AND ID <> CONNECTION_ID()");
      const ids = (sessions as { id: number }[]).map((s) => s.id);
      if (ids.length === 0) return;
      if (Date.now() > until) throw new Error(`root sessions on ${pod} keep coming back after the partition: ${ids.join(", ")}`);
      for (const id of ids) await dba.query("KILL CONNECTION ?", [id]).catch(() => undefined);
      await sleep(500);
    }
  } finally {
    await dba.end();
  }
}

/** Waits for a primary other than `old` on record. */
export async function newPrimary(client: KubeClient, ns: string, name: string, old: string): Promise<MySQLCluster> {
  return waitFor("a new primary on record", async () => {
    const c = await client.get<MySQLCluster>(MySQLClusterKind.resource, ns, name);
    return c.status?.currentPrimary && c.status.currentPrimary !== old ? c : undefined;
  }, 120_000, 200);
}

/**
 * After nodeBack: waits until the old primary is a Ready replica again, or is
 * kept out for transactions the new primary lacks (`errant`: the condition's message).
 */
export async function rejoinedOrKeptOut(client: KubeClient, ns: string, name: string, old: string): Promise<{ errant: string | undefined }> {
  return waitFor(`${old} back as a replica, or kept out`, async () => {
    const x = await client.get<MySQLCluster>(MySQLClusterKind.resource, ns, name);
    const member = x.status?.members?.find((m) => m.name === old);
    if (member?.role === "replica" && member.ready) return { errant: undefined };
    const errant = findCondition(x.status?.conditions, "ErrantTransactions");
    return errant?.status === "True" && errant.message?.includes(old) ? { errant: errant.message } : undefined;
  }, 120_000, 300);
}

/** A server kept out for errant transactions, reseeded as a DBA would: its volume replaced by an empty one. */
export async function reseed(servers: LocalPodServers, pod: string): Promise<void> {
  await servers.kill(pod);
  await servers.revive(pod, { fresh: true });
}
