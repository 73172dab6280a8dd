// A lost primary on the stand-in servers, and an application that writes
// through the primary Service meanwhile: what the failover tests and the
// mysql-cluster benchmark do to a MySQLCluster, and how they read the result.
import { findCondition, type KubeClient } from "@stateward/core";
import { MySQLClusterKind, primaryHost, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import { AcknowledgedWriter } from "./acknowledged-writes.ts";
import { onPod } from "./mysql-cluster.ts";
import type { LocalPodServers } from "./mysql-pods.ts";
import { waitFor } from "./wait.ts";

/** The application's account: no SUPER (which read-only stops), INSERT on `app`. */
export const WRITER = { user: "writer", password: "Writer-Pass-1" } as const;

/** A database `app` and the WRITER account, made on the cluster's primary. */
export async function prepareApp(client: KubeClient, servers: LocalPodServers, ns: string, name: string, password: string): Promise<void> {
  const primary = (await client.get<MySQLCluster>(MySQLClusterKind.resource, ns, name)).status?.currentPrimary ?? "";
  await onPod(servers, primary, password, "CREATE DATABASE app", `CREATE USER ${WRITER.user}@'%' IDENTIFIED BY '${WRITER.password}'`, `GRANT SELECT, INSERT ON app.* TO ${WRITER.user}@'%'`);
}

/** Writes every 10 ms through the cluster's primary Service, as WRITER, into `table`. */
export function startPrimaryWriter(servers: LocalPodServers, ns: string, name: string, table: string, recordGtids = false): AcknowledgedWriter {
  return new AcknowledgedWriter({ endpoint: () => servers.resolve({ host: primaryHost(name, ns), port: 3306 }), ...WRITER, table, retryAfterMs: 20, recordGtids }).start();
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
