// Growing a MySQLCluster's volumes (spec.storage.size up): the claims expand in
// place, the StatefulSet comes back with the new claim template, no server
// restarts, and the StorageResized condition follows what the storage driver
// reports. Where the StorageClass does not allow expansion, the user is told
// why and the cluster keeps running as it was. Replicas lowered below the
// primary's ordinal while the StatefulSet is being replaced still switch over
// first.
import mysql from "mysql2/promise";
import { builtin, findCondition, type KubeObject } from "@stateward/core";
import { MySQLClusterKind, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { eventsAbout } from "../../support/events.ts";
import { testClient } from "../../support/kube.ts";
import { createExpandableStorageClass, deleteStorageClass, finishExpansion } from "../../support/storage.ts";
import { waitFor } from "../../support/wait.ts";
import { clusterManifest, clusterRunning, onPod, rootPassword, startClusterSuite, type ClusterSuite } from "../../support/mysql-cluster.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const MYC = MySQLClusterKind.resource;
let suite: ClusterSuite;
let ns: string;
let storageClass: string;

interface Claim extends KubeObject {
  spec: { resources: { requests: { storage: string } } };
  status?: { capacity?: { storage?: string } };
}
interface StatefulSet extends KubeObject {
  spec: { volumeClaimTemplates: { spec: { resources: { requests: { storage: string } } } }[] };
}

function cluster(name: string, replicas: number, storage: MySQLCluster["spec"]["storage"]): MySQLCluster {
  return clusterManifest(ns, name, { replicas, storage });
}

async function running(name: string, replicas: number): Promise<MySQLCluster> {
  return clusterRunning(client, suite, name, replicas);
}

async function storageCondition(name: string, reason: string, message?: RegExp) {
  return waitFor(`StorageResized ${reason}${message ? ` saying ${message}` : ""} on ${name}`, async () => {
    const c = await client.get<MySQLCluster>(MYC, ns, name);
    const cond = findCondition(c.status?.conditions, "StorageResized");
    if (cond?.reason === reason && (!message || message.test(cond.message))) return cond;
    throw new Error(`StorageResized is ${JSON.stringify(cond)}`);
  }, 60_000, 250);
}

const podUids = async (name: string): Promise<Record<string, string | undefined>> =>
  Object.fromEntries((await client.list(builtin.pod, { namespace: ns, labelSelector: `app.kubernetes.io/instance=${name}` })).items.map((p) => [p.metadata.name ?? "", p.metadata.uid] as const));
const claimSizes = async (name: string): Promise<Record<string, string>> =>
  Object.fromEntries(
    (await client.list<Claim>(builtin.persistentVolumeClaim, { namespace: ns, labelSelector: `app.kubernetes.io/instance=${name}` })).items.map((c) => [c.metadata.name ?? "", c.spec.resources.requests.storage] as const),
  );
const events = (name: string) => eventsAbout(client, ns, { name });

beforeAll(async () => {
  suite = await startClusterSuite(client, env, "cluster-volumes");
  ns = suite.ns;
  storageClass = await createExpandableStorageClass(client);
}, 120_000);

afterAll(async () => {
  await suite?.stop();
  if (storageClass) await deleteStorageClass(client, storageClass);
}, 120_000);

describe("storage.size raised", () => {
  const name = "grow";

  it("expands every claim, recreates the StatefulSet with the new claim template, and restarts no server", async () => {
    await client.create(MYC, cluster(name, 2, { size: "1Gi", storageClassName: storageClass }));
    await running(name, 2);
    const password = await rootPassword(client, ns, name);
    const primary = (await suite.servers.server(`${name}-0`))!;
    const conn = await mysql.createConnection({ host: primary.host, port: primary.port, user: "root", password });
    await conn.query("CREATE DATABASE kept");
    await conn.query("CREATE TABLE kept.t (id INT PRIMARY KEY)");
    await conn.query("INSERT INTO kept.t VALUES (1), (2)");
    await conn.end();
    const podsBefore = await podUids(name);
    const stsBefore = await client.get<StatefulSet>(builtin.statefulSet, ns, name);

    await client.patch(MYC, ns, name, { spec: { storage: { size: "2Gi" } } });
    const expanding = await storageCondition(name, "Expanding");
    expect(expanding.status).toBe("False");
    expect(await claimSizes(name)).toEqual({ [`data-${name}-0`]: "2Gi", [`data-${name}-1`]: "2Gi" });
    const sts = await waitFor("the StatefulSet recreated", async () => {
      const s = await client.get<StatefulSet>(builtin.statefulSet, ns, name).catch(() => undefined);
      return s && s.metadata.uid !== stsBefore.metadata.uid ? s : undefined;
    }, 60_000, 250);
    expect(sts.spec.volumeClaimTemplates[0]?.spec.resources.requests.storage).toBe("2Gi");
    // Until the driver reports the new capacity, the condition says which volume is behind
    // (first it says the StatefulSet is being recreated: the same reason, another message).
    expect((await storageCondition(name, "Expanding", new RegExp(`data-${name}-0 has 1Gi`))).status).toBe("False");
    await running(name, 2);
    expect(await podUids(name)).toEqual(podsBefore);
    await waitFor("the pods adopted by the new StatefulSet", async () => {
      const pods = await client.list(builtin.pod, { namespace: ns, labelSelector: `app.kubernetes.io/instance=${name}` });
      return pods.items.every((p) => p.metadata.ownerReferences?.[0]?.uid === sts.metadata.uid) ? true : undefined;
    }, 60_000, 250);
  }, 300_000);

  it("reports StorageResized True once the driver says every volume has the size", async () => {
    for (const claim of [`data-${name}-0`, `data-${name}-1`]) await finishExpansion(client, ns, claim, "2Gi");
    const done = await storageCondition(name, "Resized");
    expect(done).toMatchObject({ status: "True", message: "every volume has 2Gi" });
    const reasons = (await events(name)).map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(["VolumesExpanding", "VolumesExpanded"]));
    // The data is where it was, on both servers.
    const password = await rootPassword(client, ns, name);
    for (const pod of [`${name}-0`, `${name}-1`]) {
      const server = (await suite.servers.server(pod))!;
      const conn = await mysql.createConnection({ host: server.host, port: server.port, user: "root", password });
      const [rows] = await conn.query("SELECT COUNT(*) AS n FROM kept.t");
      await conn.end();
      expect(rows, pod).toEqual([{ n: 2 }]);
    }
  }, 120_000);

  it("gives a server added later a volume of the new size", async () => {
    await client.patch(MYC, ns, name, { spec: { replicas: 3 } });
    await running(name, 3);
    expect((await claimSizes(name))[`data-${name}-2`]).toBe("2Gi");
    await client.delete(MYC, ns, name);
  }, 240_000);
});

describe("storage.size raised where the StorageClass does not allow expansion", () => {
  const name = "fixed";

  it("says why (ExpansionRefused, with the apiserver's reason, and an Event), keeps the StatefulSet and keeps running", async () => {
    // No storage class: claims bound to pre-made volumes, which cannot be expanded.
    await client.create(MYC, cluster(name, 1, { size: "1Gi" }));
    await running(name, 1);
    const stsBefore = await client.get<StatefulSet>(builtin.statefulSet, ns, name);
    const podsBefore = await podUids(name);
    await client.patch(MYC, ns, name, { spec: { storage: { size: "2Gi" } } });
    const refused = await storageCondition(name, "ExpansionRefused");
    expect(refused.status).toBe("False");
    expect(refused.message).toMatch(new RegExp(`cannot grow volume data-${name}-0 to 2Gi: .*(storageclass|StorageClass).*allowVolumeExpansion: true`, "s"));
    expect((await events(name)).filter((e) => e.reason === "ExpansionRefused").map((e) => e.note)).toEqual([refused.message]);
    expect(await claimSizes(name)).toEqual({ [`data-${name}-0`]: "1Gi" });
    const sts = await client.get<StatefulSet>(builtin.statefulSet, ns, name);
    expect(sts.metadata.uid).toBe(stsBefore.metadata.uid);
    expect(sts.spec.volumeClaimTemplates[0]?.spec.resources.requests.storage).toBe("1Gi");
    const c = await running(name, 1);
    expect(findCondition(c.status?.conditions, "Ready")?.status).toBe("True");
    expect(await podUids(name)).toEqual(podsBefore);
    await client.delete(MYC, ns, name);
  }, 240_000);
});

describe("replicas lowered below the primary's ordinal while the StatefulSet is being replaced", () => {
  const name = "leave";
  const hold = "stateward.io/test-hold";

  it("moves the primary to a staying server before its pod goes, instead of letting the recreated StatefulSet delete it", async () => {
    await client.create(MYC, cluster(name, 3, { size: "1Gi", storageClassName: storageClass }));
    await running(name, 3);
    await client.patch(MYC, ns, name, { spec: { primary: 2 } });
    await clusterRunning(client, suite, name, 3, { check: (c) => c.status?.currentPrimary === `${name}-2` });
    const password = await rootPassword(client, ns, name);
    await onPod(suite.servers, `${name}-2`, password, "CREATE DATABASE kept", "CREATE TABLE kept.t (id INT PRIMARY KEY)", "INSERT INTO kept.t VALUES (1)");

    // The volumes grow: the StatefulSet is deleted (its pods orphaned) to come back with the new
    // claim template. A finalizer of the test holds it there while the manager is stopped.
    await client.patch(builtin.statefulSet, ns, name, { metadata: { finalizers: [hold] } });
    let since = "";
    try {
      await client.patch(MYC, ns, name, { spec: { storage: { size: "2Gi" } } });
      // Deleted, and its pods orphaned by the garbage collector (its own finalizer gone): only the test's holds it.
      await waitFor("the StatefulSet deleted to be replaced, its pods orphaned", async () => {
        const sts = await client.get(builtin.statefulSet, ns, name);
        return sts.metadata.deletionTimestamp && (sts.metadata.finalizers ?? []).join() === hold ? true : undefined;
      }, 60_000, 250);
      await suite.stopManager();
      // Meanwhile the edit that removes the primary's ordinal; then the StatefulSet goes.
      await client.patch(MYC, ns, name, { spec: { replicas: 2, primary: null } });
    } finally {
      await client.patch(builtin.statefulSet, ns, name, { metadata: { finalizers: null } }).catch(() => undefined);
      await waitFor("the StatefulSet gone", async () => (await client.get(builtin.statefulSet, ns, name).then(() => undefined, () => true)), 60_000, 250);
      since = new Date().toISOString();
      await suite.startManager();
    }

    const c = await running(name, 2);
    const next = c.status?.currentPrimary ?? "";
    const seen = (await events(name)).filter((e) => (e.eventTime ?? "") >= since);
    expect(seen.filter((e) => e.reason === "FailedOver" || e.reason === "FailoverNeeded").map((e) => e.note)).toEqual([]);
    expect(seen.some((e) => e.reason === "SwitchedOver" && (e.note ?? "").startsWith(`${next} is the primary (was ${name}-2)`))).toBe(true);
    expect(await onPod(suite.servers, next, password, "SELECT id FROM kept.t")).toEqual([{ id: 1 }]);
    await client.delete(MYC, ns, name);
  }, 300_000);
});
