// Rolling changes of a MySQLCluster, done as a careful DBA would: replicas
// first (highest ordinal first), each back Ready and caught up before the
// next, then a planned switchover, then the old primary. A client writing
// through the primary endpoint the whole time loses no acknowledged write and
// is refused writes only during the switchover. A pod that never becomes
// Ready pauses the rollout; reverting the image recovers. A resources change
// (scale-up) runs the same sequence. A running backup of the cluster delays
// the rollout; backupBeforeUpgrade takes one first.
import { setTimeout as sleep } from "node:timers/promises";
import mysql from "mysql2/promise";
import { builtin, findCondition, type KubeObject } from "@stateward/core";
import { MySQLBackupKind, createMySQLBackupOperator, type MySQLBackup } from "@stateward/operator-mysql-backup";
import { MySQLClusterKind, clusterNames, primaryHost, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { AcknowledgedWriter } from "../../support/acknowledged-writes.ts";
import { eventsAbout, type KubeEvent } from "../../support/events.ts";
import { testClient } from "../../support/kube.ts";
import type { LocalPodServers } from "../../support/mysql-pods.ts";
import { waitFor } from "../../support/wait.ts";
import { clusterManifest, clusterRunning, rootPassword, startClusterSuite, type ClusterSuite } from "../../support/mysql-cluster.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const MYC = MySQLClusterKind.resource;
let suite: ClusterSuite;
let ns: string;
let servers: LocalPodServers;

async function events(name: string): Promise<KubeEvent[]> {
  return eventsAbout(client, ns, { name });
}

/** Pods restarted by the operator, in order, with the switchovers between them. */
async function history(name: string, since: string): Promise<string[]> {
  return (await events(name))
    .filter((e) => (e.eventTime ?? "") >= since && (e.reason === "PodRestarted" || e.reason === "SwitchedOver"))
    .map((e) => (e.reason === "PodRestarted" ? (/^Restarting (\S+)/.exec(e.note ?? "")?.[1] ?? "?") : `switchover to ${/^(\S+) is the primary/.exec(e.note ?? "")?.[1] ?? "?"}`));
}

async function settled(name: string, replicas: number, timeoutMs = 300_000): Promise<MySQLCluster> {
  return clusterRunning(client, suite, name, replicas, {
    timeoutMs,
    check: (c) => c.status?.updatedReplicas === replicas && findCondition(c.status.conditions, "Upgrading")?.reason === "UpToDate",
  });
}

async function onPrimary(name: string, password: string, sql: string, values: unknown[] = []): Promise<unknown[]> {
  const address = await servers.resolve({ host: primaryHost(name, ns), port: 3306 });
  const conn = await mysql.createConnection({ ...address, user: "root", password });
  try {
    const [rows] = await conn.query(sql, values);
    return rows as unknown[];
  } finally {
    await conn.end();
  }
}

/**
 * An application writing through the primary endpoint as fast as it can —
 * with an account without SUPER, which read-only stops.
 */
function startWriter(name: string): AcknowledgedWriter {
  return new AcknowledgedWriter({ endpoint: () => servers.resolve({ host: primaryHost(name, ns), port: 3306 }), user: "writer", password: "Writer-Pass-1", table: "app.writes", retryAfterMs: 20 }).start();
}

beforeAll(async () => {
  suite = await startClusterSuite(client, env, "rollout", [createMySQLBackupOperator()]);
  ({ ns, servers } = suite);
  await client.create(builtin.secret, { metadata: { name: "s3-creds", namespace: ns }, stringData: { AWS_ACCESS_KEY_ID: env.s3.accessKeyId, AWS_SECRET_ACCESS_KEY: env.s3.secretAccessKey } } as KubeObject);
}, 120_000);

afterAll(async () => {
  await suite?.stop();
}, 120_000);

describe("an image change on a 3-server cluster", () => {
  const name = "roll";
  let password: string;

  it("rolls the replicas, highest first, switches over, rolls the old primary last — losing no acknowledged write", async () => {
    // The shortest failover detection the schema allows: the restarts of a rollout must still fail nothing over.
    await client.create(MYC, clusterManifest(ns, name, { replicas: 3, image: "mariadb:11.4", storage: { size: "1Gi" }, updateStrategy: { healthGateSeconds: 120 }, failover: { detectionSeconds: 5 } }));
    const before = await settled(name, 3);
    expect(before.status?.currentPrimary).toBe("roll-0");
    expect(before.status?.currentImage).toBe("mariadb:11.4");
    password = await rootPassword(client, ns, name);
    await onPrimary(name, password, "CREATE DATABASE app");
    await onPrimary(name, password, "CREATE TABLE app.writes (id INT PRIMARY KEY, at TIMESTAMP(6) DEFAULT CURRENT_TIMESTAMP(6))");
    await onPrimary(name, password, "CREATE USER writer@'%' IDENTIFIED BY 'Writer-Pass-1'");
    await onPrimary(name, password, "GRANT SELECT, INSERT ON app.* TO writer@'%'");

    const writer = startWriter(name);
    await sleep(1000);
    const since = new Date().toISOString();
    await client.patch(MYC, ns, name, { spec: { image: "mariadb:11.4.9" } });
    const after = await settled(name, 3);
    await sleep(1000);
    await writer.stop();

    const order = await history(name, since);
    expect(order).toEqual(["roll-2", "roll-1", `switchover to ${after.status?.currentPrimary}`, "roll-0"]);
    expect(after.status?.currentPrimary).not.toBe("roll-0");
    expect(after.status?.currentImage).toBe("mariadb:11.4.9");
    expect(after.status?.updated).toBe("3/3");
    // A planned restart is not a lost primary: no failover, not even a suspicion reported.
    expect(after.status?.lastFailover).toBeUndefined();
    expect((await events(name)).filter((e) => (e.eventTime ?? "") >= since && (e.reason === "FailedOver" || e.reason === "FailoverNeeded")).map((e) => e.note)).toEqual([]);

    // Every acknowledged write is there; refused writes happened only around the switchover.
    const stored = new Set(((await onPrimary(name, password, "SELECT id FROM app.writes")) as { id: number }[]).map((r) => r.id));
    const lost = writer.acknowledged.filter((id) => !stored.has(id));
    expect(lost, "acknowledged writes missing after the rollout").toEqual([]);
    expect(writer.acknowledged.length).toBeGreaterThan(100);
    const switched = (await events(name)).find((e) => e.reason === "SwitchedOver" && (e.eventTime ?? "") >= since);
    const started = (await events(name)).find((e) => e.reason === "SwitchoverStarted" && (e.eventTime ?? "") >= since);
    const from = Date.parse(started?.eventTime ?? "") - 500;
    const to = Date.parse(switched?.eventTime ?? "") + 3000;
    const outside = writer.failures.filter((t) => t < from || t > to);
    expect(outside.map((t) => new Date(t).toISOString()), `write failures outside the switchover (${started?.eventTime} to ${switched?.eventTime})`).toEqual([]);
    const window = writer.failures.length ? Math.max(...writer.failures) - Math.min(...writer.failures) : 0;
    console.log(`rollout of 3 servers: ${writer.acknowledged.length} writes acknowledged, ${writer.failures.length} refused, write unavailability ${window} ms (${switched?.note})`);
  }, 420_000);

  it("runs a resources change (scale-up) the same way: the primary is restarted last", async () => {
    const primary = (await client.get<MySQLCluster>(MYC, ns, name)).status?.currentPrimary;
    const since = new Date().toISOString();
    await client.patch(MYC, ns, name, { spec: { resources: { requests: { cpu: "500m", memory: "1Gi" }, limits: { memory: "2Gi" } } } });
    const after = await settled(name, 3);
    const order = await history(name, since);
    expect(order).toHaveLength(4);
    expect(order[2]).toMatch(/^switchover to /);
    expect(order[3]).toBe(primary);
    expect(order.slice(0, 2)).not.toContain(primary);
    const sts = await client.get<KubeObject & { spec: { template: { spec: { containers: { resources?: unknown }[] } } } }>(builtin.statefulSet, ns, name);
    expect(sts.spec.template.spec.containers[0]?.resources).toEqual({ requests: { cpu: "500m", memory: "1Gi" }, limits: { memory: "2Gi" } });
    expect(after.status?.currentPrimary).not.toBe(primary);
  }, 420_000);

  it("switches over on request (spec.primary)", async () => {
    const current = (await client.get<MySQLCluster>(MYC, ns, name)).status?.currentPrimary;
    const target = ["roll-0", "roll-1", "roll-2"].find((p) => p !== current) ?? "roll-0";
    await client.patch(MYC, ns, name, { spec: { primary: Number(target.slice(-1)) } });
    const after = await waitFor(`${target} primary`, async () => {
      const c = await client.get<MySQLCluster>(MYC, ns, name);
      const members = c.status?.members ?? [];
      const settledMembers = members.find((m) => m.role === "primary")?.name === target && members.find((m) => m.name === current)?.ioThread === true;
      return c.status?.currentPrimary === target && c.status.phase === "Running" && c.status.readyReplicas === 3 && settledMembers ? c : undefined;
    }, 120_000, 500);
    expect(after.status?.members?.find((m) => m.role === "primary")?.name).toBe(target);
    const pods = await client.list(builtin.pod, { namespace: ns, labelSelector: "app.kubernetes.io/instance=roll,stateward.io/role=primary" });
    expect(pods.items.map((p) => p.metadata.name)).toEqual([target]);
    // The old primary follows the new one.
    const old = after.status?.members?.find((m) => m.name === current);
    expect(old).toMatchObject({ role: "replica", ready: true, ioThread: true, sqlThread: true });
    expect((await events(name)).some((e) => e.reason === "SwitchedOver" && (e.note ?? "").startsWith(`${target} is the primary (was ${current})`))).toBe(true);
  }, 180_000);
});

describe("a change that breaks a server", () => {
  const name = "gate";

  it("pauses at the health gate, names the pod, and recovers when the image is reverted", async () => {
    await client.create(MYC, clusterManifest(ns, name, { replicas: 2, image: "mariadb:11.4", storage: { size: "1Gi" }, updateStrategy: { healthGateSeconds: 10 } }));
    await settled(name, 2);
    // LocalPodServers cannot start a server from an image tagged "broken": like a crash-looping container.
    await client.patch(MYC, ns, name, { spec: { image: "mariadb:broken" } });
    const paused = await waitFor("HealthGateFailed", async () => {
      const c = await client.get<MySQLCluster>(MYC, ns, name);
      return findCondition(c.status?.conditions, "Upgrading")?.reason === "HealthGateFailed" ? c : undefined;
    }, 120_000, 500);
    expect(findCondition(paused.status?.conditions, "Upgrading")?.message).toMatch(/gate-1 did not become Ready/);
    expect(paused.status?.currentPrimary).toBe("gate-0");
    expect((await events(name)).some((e) => e.reason === "HealthGateFailed" && /gate-1/.test(e.note ?? ""))).toBe(true);
    // Paused means paused: the primary is not touched.
    await sleep(3000);
    expect((await history(name, "")).filter((p) => p === "gate-0")).toEqual([]);

    await client.patch(MYC, ns, name, { spec: { image: "mariadb:11.4" } });
    const recovered = await settled(name, 2, 180_000);
    expect(recovered.status?.currentPrimary).toBe("gate-0");
    expect(recovered.status?.currentImage).toBe("mariadb:11.4");
  }, 360_000);

  it("does not roll while paused", async () => {
    // back_log is read-only in the server: the change needs every server restarted.
    await client.patch(MYC, ns, name, { spec: { updateStrategy: { paused: true }, config: { back_log: "123" } } });
    const paused = await waitFor("Paused", async () => {
      const c = await client.get<MySQLCluster>(MYC, ns, name);
      return findCondition(c.status?.conditions, "Upgrading")?.reason === "Paused" ? c : undefined;
    }, 60_000, 500);
    expect(paused.status?.updated).toBe("0/2");
    const since = new Date().toISOString();
    await sleep(3000);
    expect(await history(name, since)).toEqual([]);
    await client.patch(MYC, ns, name, { spec: { updateStrategy: { paused: false } } });
    await settled(name, 2, 180_000);
    expect(await client.get<KubeObject & { data: Record<string, string> }>(builtin.configMap, ns, clusterNames(name).configMap).then((cm) => cm.data["my.cnf"])).toMatch(/back_log = 123/);
  }, 300_000);
});

describe("a change rolled by hand", () => {
  const name = "byhand";

  it("tells the rollout complete when, while paused, the server was restarted by hand onto the new template", async () => {
    await client.create(MYC, clusterManifest(ns, name, { replicas: 1, image: "mariadb:11.4", storage: { size: "1Gi" } }));
    const first = await settled(name, 1);
    expect(first.status?.currentRevision).toBeTruthy();
    const since = new Date().toISOString();
    await client.patch(MYC, ns, name, { spec: { updateStrategy: { paused: true }, config: { back_log: "77" } } });
    await waitFor("Paused", async () => {
      const c = await client.get<MySQLCluster>(MYC, ns, name);
      return findCondition(c.status?.conditions, "Upgrading")?.reason === "Paused" ? c : undefined;
    }, 60_000, 500);
    // The user restarts the server themselves: the StatefulSet controller makes it again from the new template.
    await client.delete(builtin.pod, ns, `${name}-0`);
    const after = await settled(name, 1, 180_000);
    expect(after.status?.currentRevision).not.toBe(first.status?.currentRevision);
    // Not the operator's restart: the template changed all the same.
    expect(await history(name, since)).toEqual([]);
    const complete = await waitFor("the RolloutComplete Event", async () => (await events(name)).find((e) => e.reason === "RolloutComplete" && (e.eventTime ?? "") >= since), 30_000, 500);
    expect(complete.note).toBe("All 1 servers run the current template (image mariadb:11.4)");
  }, 360_000);
});

describe("backups and rollouts", () => {
  const name = "safe";
  const storage = { s3: { bucket: env.s3.bucket, prefix: "rollout", endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } };
  const restarts = async (since: string) => (await events(name)).filter((e) => e.reason === "PodRestarted" && (e.eventTime ?? "") >= since);

  it("takes a Completed MySQLBackup before the first pod restarts (backupBeforeUpgrade)", async () => {
    await client.create(MYC, clusterManifest(ns, name, { replicas: 2, image: "mariadb:11.4", storage: { size: "1Gi" }, updateStrategy: { backupBeforeUpgrade: { storage, databases: ["ledger"], compression: "gzip" } } }));
    await settled(name, 2);
    const password = await rootPassword(client, ns, name);
    await onPrimary(name, password, "CREATE DATABASE ledger");
    await onPrimary(name, password, "CREATE TABLE ledger.big (id INT PRIMARY KEY, pad VARCHAR(255))");
    await onPrimary(name, password, "INSERT INTO ledger.big SELECT seq, REPEAT('x', 200) FROM ledger.seq_1_to_200000");
    const since = new Date().toISOString();
    await client.patch(MYC, ns, name, { spec: { image: "mariadb:11.4.9" } });
    await settled(name, 2);
    const backups = (await client.list<MySQLBackup>(MySQLBackupKind.resource, { namespace: ns })).items.filter((b) => b.metadata.name?.startsWith(`${name}-before-`));
    expect(backups).toHaveLength(1);
    expect(backups[0]?.status?.phase).toBe("Completed");
    const first = (await restarts(since))[0];
    expect(first, "no pod was restarted").toBeDefined();
    expect(Date.parse(backups[0]?.status?.completionTime ?? "")).toBeLessThanOrEqual(Date.parse(first?.eventTime ?? ""));
  }, 300_000);

  it("does not restart a pod while a backup of the cluster runs", async () => {
    // A backup of a few hundred MB, started just before the change.
    await client.patch(MYC, ns, name, { spec: { updateStrategy: { backupBeforeUpgrade: null } } });
    const password = await rootPassword(client, ns, name);
    for (let i = 0; i < 3; i++) await onPrimary(name, password, `INSERT INTO ledger.big SELECT seq + ${(i + 1) * 1_000_000}, REPEAT(MD5(seq), 7) FROM ledger.seq_1_to_400000`);
    await client.create(MySQLBackupKind.resource, { apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name: "nightly", namespace: ns }, spec: { instanceRef: { name }, storage, databases: ["ledger"], compression: "gzip" } } as KubeObject);
    await waitFor("the backup Running", async () => ((await client.get<MySQLBackup>(MySQLBackupKind.resource, ns, "nightly")).status?.phase === "Running" ? true : undefined), 30_000, 50);
    const since = new Date().toISOString();
    await client.patch(MYC, ns, name, { spec: { image: "mariadb:11.4.10" } });
    const waiting = await waitFor("BackupRunning", async () => {
      const c = await client.get<MySQLCluster>(MYC, ns, name);
      const up = findCondition(c.status?.conditions, "Upgrading");
      if (up?.reason === "BackupRunning") return up;
      if ((await client.get<MySQLBackup>(MySQLBackupKind.resource, ns, "nightly")).status?.phase !== "Running") throw new Error("the backup finished before the rollout was seen waiting: the test is inconclusive");
      return undefined;
    }, 30_000, 50);
    expect(waiting.message).toMatch(/MySQLBackup nightly/);
    await settled(name, 2);
    const done = await client.get<MySQLBackup>(MySQLBackupKind.resource, ns, "nightly");
    expect(done.status?.phase).toBe("Completed");
    const first = (await restarts(since))[0];
    expect(Date.parse(done.status?.completionTime ?? "")).toBeLessThanOrEqual(Date.parse(first?.eventTime ?? ""));
  }, 300_000);
});
