// Which server becomes the primary of a MySQLCluster whose status names none:
// one re-created on its retained volumes (what the Retain policies are for),
// or restored by GitOps/Velero without status. The operator must not assume
// pod 0: after a switchover the primary is another pod, and promoting a server
// that is behind turns the real primary into its replica and loses writes.
//
//   after a switchover to pod 1 and a write pod 0 never got, the re-created
//   cluster takes pod 1 again, keeps every write, and pod 0 follows it;
//   two servers that each applied a transaction the other lacks: nothing is
//   promoted, a condition names each server's history and asks for spec.primary.
import { builtin, findCondition } from "@stateward/core";
import { MySQLClusterKind, ROLE_LABEL, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { eventsAbout, type KubeEvent } from "../../support/events.ts";
import { testClient, waitGone } from "../../support/kube.ts";
import type { LocalPodServers } from "../../support/mysql-pods.ts";
import { waitFor } from "../../support/wait.ts";
import { clusterManifest, clusterRunning, onPod as runOnPod, rootPassword, startClusterSuite, type ClusterSuite } from "../../support/mysql-cluster.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const MYC = MySQLClusterKind.resource;
let suite: ClusterSuite;
let ns: string;
let servers: LocalPodServers;

function cluster(name: string, spec: Partial<MySQLCluster["spec"]> = {}): MySQLCluster {
  return clusterManifest(ns, name, { replicas: 2, storage: { size: "1Gi" }, ...spec });
}

async function running(name: string, check: (c: MySQLCluster) => boolean = () => true): Promise<MySQLCluster> {
  return clusterRunning(client, suite, name, 2, { check });
}

function onPod(pod: string, password: string, ...statements: string[]): Promise<Record<string, unknown>[]> {
  return runOnPod(servers, pod, password, ...statements);
}

async function ids(pod: string, password: string, table: string): Promise<number[]> {
  return (await onPod(pod, password, `SELECT id FROM ${table} ORDER BY id`)).map((r) => Number(r.id));
}

/** Deletes the cluster and waits until its pods are gone; volumes (and the servers' data) stay. */
async function deleteKeepingVolumes(name: string): Promise<void> {
  await client.delete(MYC, ns, name);
  await waitGone(client, MYC, ns, name, 60_000);
  await waitGone(client, builtin.statefulSet, ns, name, 60_000);
  await waitFor(`pods of ${name} gone`, async () => {
    const pods = await client.list(builtin.pod, { namespace: ns, labelSelector: `app.kubernetes.io/instance=${name}` });
    return pods.items.length === 0 ? true : undefined;
  }, 60_000, 300);
  const claims = await client.list(builtin.persistentVolumeClaim, { namespace: ns, labelSelector: `app.kubernetes.io/instance=${name}` });
  expect(claims.items.map((c) => c.metadata.name).sort()).toEqual([`data-${name}-0`, `data-${name}-1`]);
}

async function events(uid: string | undefined): Promise<KubeEvent[]> {
  return eventsAbout(client, ns, { uid: uid ?? "" });
}

beforeAll(async () => {
  suite = await startClusterSuite(client, env, "primary");
  ({ ns, servers } = suite);
}, 120_000);

afterAll(async () => {
  await suite?.stop();
}, 120_000);

describe("a cluster re-created on its retained volumes", () => {
  it("takes the primary it had (pod 1 after a switchover), keeps every write, and pod 0 follows it", async () => {
    const name = "keep";
    await client.create(MYC, cluster(name));
    await running(name, (c) => c.status?.currentPrimary === "keep-0");
    const password = await rootPassword(client, ns, name);
    await onPod("keep-0", password, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1)");

    // A planned switchover to pod 1, a write there that pod 0 replicates...
    await client.patch(MYC, ns, name, { spec: { primary: 1 } });
    await running(name, (c) => c.status?.currentPrimary === "keep-1" && c.status.members?.find((m) => m.name === "keep-0")?.ioThread === true);
    await onPod("keep-1", password, "INSERT INTO app.t VALUES (2)");
    await waitFor("row 2 on keep-0", async () => ((await ids("keep-0", password, "app.t")).includes(2) ? true : undefined), 30_000, 200);
    // ...and one it does not get: pod 0 is behind when the cluster goes.
    await onPod("keep-0", password, "STOP SLAVE");
    await onPod("keep-1", password, "INSERT INTO app.t VALUES (3)");
    await deleteKeepingVolumes(name);

    // Re-created as a GitOps tool or a restore would: the spec without primary, no status.
    const recreated = await client.create(MYC, cluster(name));
    const chosen = await waitFor("a primary on record", async () => (await client.get<MySQLCluster>(MYC, ns, name)).status?.currentPrimary, 120_000, 300);
    expect(chosen, "the server with every write is the primary, not pod 0").toBe("keep-1");
    const c = await running(name, (x) => x.status?.members?.find((m) => m.name === "keep-0")?.ready === true);
    expect(c.status?.currentPrimary).toBe("keep-1");
    expect(await ids("keep-1", password, "app.t")).toEqual([1, 2, 3]);
    // Pod 0 replicates from pod 1 and has everything.
    expect(c.status?.members?.find((m) => m.name === "keep-0")).toMatchObject({ role: "replica", ioThread: true, sqlThread: true });
    await waitFor("row 3 on keep-0", async () => ((await ids("keep-0", password, "app.t")).includes(3) ? true : undefined), 30_000, 200);
    expect(await ids("keep-0", password, "app.t")).toEqual([1, 2, 3]);
    const pods = await client.list(builtin.pod, { namespace: ns, labelSelector: `app.kubernetes.io/instance=${name},${ROLE_LABEL}=primary` });
    expect(pods.items.map((p) => p.metadata.name)).toEqual(["keep-1"]);
    const selected = (await events(recreated.metadata.uid)).find((e) => e.reason === "PrimarySelected");
    expect(selected?.note).toMatch(/^keep-1 is the primary: its history \(.+\) contains every other server's/);
  }, 420_000);

  it("promotes nothing when the servers diverged, and says which histories differ", async () => {
    const name = "split";
    await client.create(MYC, cluster(name));
    await running(name, (c) => c.status?.currentPrimary === "split-0" && c.status.members?.find((m) => m.name === "split-1")?.ioThread === true);
    const password = await rootPassword(client, ns, name);
    await onPod("split-0", password, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1)");
    await waitFor("row 1 on split-1", async () => ((await ids("split-1", password, "app.t").catch((): number[] => [])).includes(1) ? true : undefined), 30_000, 200);
    // An errant transaction on the replica, and a write on the primary it never gets.
    await onPod("split-1", password, "STOP SLAVE", "INSERT INTO app.t VALUES (100)");
    await onPod("split-0", password, "INSERT INTO app.t VALUES (2)");
    await deleteKeepingVolumes(name);

    const recreated = await client.create(MYC, cluster(name));
    const c = await waitFor("PrimaryUnknown", async () => {
      const x = await client.get<MySQLCluster>(MYC, ns, name);
      const ready = findCondition(x.status?.conditions, "Ready");
      if (ready?.reason === "PrimaryUnknown" && /diverged/.test(ready.message ?? "")) return x;
      // A primary chosen is the failure this test is about: stop waiting.
      if (x.status?.currentPrimary) return x;
      return undefined;
    }, 120_000, 300);
    expect(c.status?.currentPrimary, "no server may be promoted").toBeUndefined();
    const ready = findCondition(c.status?.conditions, "Ready");
    expect(ready?.message).toMatch(/split-0 has \S+; split-1 has \S+.*set spec\.primary/);
    expect(findCondition(c.status?.conditions, "Available")).toMatchObject({ status: "False", reason: "PrimaryUnknown" });
    const warned = (await events(recreated.metadata.uid)).find((e) => e.reason === "PrimaryUnknown");
    expect(warned?.note).toMatch(/diverged/);
    // Nothing was done to either server: no role, each keeps its own write.
    const pods = await client.list(builtin.pod, { namespace: ns, labelSelector: `app.kubernetes.io/instance=${name}` });
    expect(pods.items.map((p) => p.metadata.labels?.[ROLE_LABEL])).toEqual([undefined, undefined]);
    expect(await ids("split-0", password, "app.t")).toEqual([1, 2]);
    expect(await ids("split-1", password, "app.t")).toEqual([1, 100]);

    // The user decides: spec.primary is taken as the primary.
    await client.patch(MYC, ns, name, { spec: { primary: 0 } });
    await waitFor("split-0 on record", async () => ((await client.get<MySQLCluster>(MYC, ns, name)).status?.currentPrimary === "split-0" ? true : undefined), 60_000, 300);
  }, 420_000);
});
