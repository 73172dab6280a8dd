// A MySQLCluster on real pods: the operator's pod template run by a kubelet
// (init container, the image's entrypoint, uid 999 with fsGroup on a local
// volume of the default StorageClass, probes), and what only real pods prove:
// - the pods turn Ready because the OPERATOR sets the stateward.io/member-ready
//   readiness gate (KWOK sets every gate itself; it does not manage this node);
// - the servers replicate, and a pod reaches another through its DNS name
//   (the node's CoreDNS);
// - a server killed inside its container is restarted by the kubelet and the
//   cluster recovers with its data;
// - a DatabaseUser logs in to the cluster's primary;
// - an image change rolls real containers (a second image, not just a new
//   tag name) while a writer through the primary Service loses no
//   acknowledged write;
// - a MySQLBackup of the cluster and a MySQLRestore of it;
// - a scale-out with the primary's binary logs purged seeds the new pod.
// The operator runs on this machine and reaches the pods at their IP over the
// node's bridge (support/pod-addresses.ts): there is no kube-proxy and no
// route into the Service range (the machines' network rule).
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import mysql from "mysql2/promise";
import { Manager, builtin, captureLogs, findCondition, type KubeObject } from "@stateward/core";
import { DatabaseUserKind, databaseUserOperator } from "@stateward/operator-database-user";
import { MySQLBackupKind, MySQLRestoreKind, createMySQLBackupOperator } from "@stateward/operator-mysql-backup";
import { MEMBER_READY_CONDITION, MySQLClusterKind, ROLE_LABEL, clusterNames, createMySQLClusterOperator, podHost, primaryHost, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { NODE_NAME, namespaceAnnotations, releaseRealNode, tools, useRealNode, type RealNodeInfo } from "../../harness/index.ts";
import { AcknowledgedWriter } from "../../support/acknowledged-writes.ts";
import { deleteNamespace, kubeConfigFrom, testClient } from "../../support/kube.ts";
import { PodAddresses } from "../../support/pod-addresses.ts";
import { waitFor } from "../../support/wait.ts";

const run = promisify(execFile);
const env = inject("environment");
const client = testClient(env.kubeconfig);
const MYC = MySQLClusterKind.resource;
let addresses = new PodAddresses(client);
const name = "orders";
const names = clusterNames(name);
const kubectl = (...args: string[]) => run(tools.kubectl(), [`--kubeconfig=${env.kubeconfig}`, ...args], { timeout: 60_000 });

interface Pod extends KubeObject {
  spec: { nodeName?: string; containers: { name: string; image?: string }[] };
  status?: {
    podIP?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: { name: string; containerID?: string; restartCount: number; ready: boolean }[];
  };
}

let node: RealNodeInfo;
let ns = "";
let manager: Manager | undefined;
const logs = captureLogs();

async function running(replicas: number, timeoutMs = 300_000): Promise<MySQLCluster> {
  return waitFor(`MySQLCluster ${name} Running with ${replicas} ready`, async () => {
    const c = await client.get<MySQLCluster>(MYC, ns, name);
    if (c.status?.phase === "Running" && c.status.readyReplicas === replicas && c.status.observedGeneration === c.metadata.generation) return c;
    throw new Error(`phase ${c.status?.phase}: ${findCondition(c.status?.conditions, "Ready")?.message}`);
  }, timeoutMs, 1_000);
}

async function rootPassword(): Promise<string> {
  const s = await client.get<KubeObject & { data: Record<string, string> }>(builtin.secret, ns, names.rootSecret);
  return Buffer.from(s.data.password ?? "", "base64").toString("utf8");
}

/** A connection to a pod's server, at its IP over the node's bridge. */
async function connect(pod: string, user = "root", password?: string): Promise<mysql.Connection> {
  const at = await addresses.resolve({ host: podHost(name, ns, Number(pod.slice(name.length + 1))), port: 3306 });
  return mysql.createConnection({ host: at.host, port: at.port, user, password: password ?? (await rootPassword()), connectTimeout: 5_000 });
}

async function query<T = Record<string, unknown>>(pod: string, sql: string, values: unknown[] = []): Promise<T[]> {
  const conn = await connect(pod);
  try {
    return (await conn.query(sql, values))[0] as T[];
  } finally {
    await conn.end();
  }
}

/** An application writing through the primary Service's name (see support/acknowledged-writes.ts). */
function startWriter(): AcknowledgedWriter {
  return new AcknowledgedWriter({ endpoint: () => addresses.resolve({ host: primaryHost(name, ns), port: 3306 }), user: "writer", password: "Writer-Pass-1", table: "shop.writes", retryAfterMs: 50 }).start();
}

describe.runIf(env.realNodeSupport.ok)("a MySQLCluster on real pods", () => {
  beforeAll(async () => {
    node = await useRealNode(env);
    addresses = new PodAddresses(client, { clusterDns: node.clusterDns });
    ns = `realnode-${randomBytes(3).toString("hex")}`;
    // Every pod of the namespace goes to the real node (the operator's template has no selector of ours).
    await client.create(builtin.namespace, { metadata: { name: ns, annotations: namespaceAnnotations } });
    await waitFor("default ServiceAccount", () => client.get(builtin.serviceAccount, ns, "default").then(() => true, () => undefined), 30_000);
    manager = new Manager({ kubeConfig: kubeConfigFrom(env.kubeconfig), namespaces: [ns], logger: logs.logger, gracefulShutdownMs: 10_000 }).load(
      createMySQLClusterOperator({ addresses }),
      databaseUserOperator,
      createMySQLBackupOperator(),
    );
    await manager.start();
    await client.create(MYC, {
      apiVersion: MySQLClusterKind.apiVersion,
      kind: MySQLClusterKind.kind,
      metadata: { name, namespace: ns },
      spec: { replicas: 3, image: node.images.mariadb, storage: { size: "1Gi" } },
    });
  }, 400_000);

  afterAll(async () => {
    await manager?.stop();
    if (ns) await deleteNamespace(client, ns);
    await releaseRealNode(env);
  }, 180_000);

  it("runs 3 servers on the real node, Ready through the readiness gate the operator sets", async () => {
    const c = await running(3);
    expect(c.status?.currentPrimary).toBe(`${name}-0`);
    // The operator sets the gate; the kubelet then turns the pod Ready (on its next sync).
    const gate = (p: Pod, type: string) => p.status?.conditions?.find((x) => x.type === type)?.status;
    const pods = await waitFor("every pod Ready with its gate set", async () => {
      const list = await client.list<Pod>(builtin.pod, { namespace: ns, labelSelector: `app.kubernetes.io/instance=${name}` });
      const states = list.items.map((p) => `${p.metadata.name}: gate ${gate(p, MEMBER_READY_CONDITION)}, Ready ${gate(p, "Ready")}`);
      if (list.items.length === 3 && list.items.every((p) => gate(p, MEMBER_READY_CONDITION) === "True" && gate(p, "Ready") === "True")) return list;
      throw new Error(states.join("; "));
    }, 60_000, 500);
    for (const pod of pods.items) {
      expect(pod.spec.nodeName).toBe(NODE_NAME);
      expect(pod.status?.podIP).toMatch(/^10\.200\.0\./);
      expect(pod.status?.conditions?.find((x) => x.type === MEMBER_READY_CONDITION)?.status).toBe("True");
      expect(pod.status?.conditions?.find((x) => x.type === "Ready")?.status).toBe("True");
      // Who set the gate: the operator's field manager, nobody else (KWOK does not manage this node).
      const setters = ((pod.metadata.managedFields ?? []) as { manager?: string; fieldsV1?: unknown }[])
        .filter((f) => JSON.stringify(f.fieldsV1 ?? {}).includes(`{\\"type\\":\\"${MEMBER_READY_CONDITION}\\"}`))
        .map((f) => f.manager);
      expect(setters.length).toBeGreaterThan(0);
      expect(setters.some((m) => /kwok/i.test(m ?? ""))).toBe(false);
    }
    // Each server's data is on a node-local volume of the default StorageClass, given to the
    // pods' fsGroup 999 by the kubelet (group-writable, setgid) — a hostPath volume would stay root's.
    const claims = await client.list<KubeObject & { spec: { storageClassName?: string }; status?: { phase?: string } }>(builtin.persistentVolumeClaim, { namespace: ns });
    expect(claims.items.map((x) => [x.spec.storageClassName, x.status?.phase])).toEqual(Array(3).fill([node.storageClass, "Bound"]));
    const datadir = (await kubectl("-n", ns, "exec", `${name}-1`, "-c", "mysql", "--", "stat", "-c", "%u:%g %A", "/var/lib/mysql")).stdout.trim();
    expect(datadir).toMatch(/^\d+:999 drwxrws/);
    // kubectl logs of the real container: the image's entrypoint initialized the server.
    expect((await kubectl("-n", ns, "logs", `${name}-0`, "-c", "mysql")).stdout).toMatch(/MariaDB init process done|ready for connections/);
  }, 400_000);

  it("replicates between the pods, which reach each other by their DNS names", async () => {
    await running(3);
    await query(`${name}-0`, "CREATE DATABASE IF NOT EXISTS shop");
    await query(`${name}-0`, "CREATE TABLE IF NOT EXISTS shop.orders (id INT PRIMARY KEY, what VARCHAR(32))");
    await query(`${name}-0`, "INSERT INTO shop.orders VALUES (1, 'real pods')");
    for (const replica of [`${name}-1`, `${name}-2`]) {
      await waitFor(`row on ${replica}`, async () => ((await query(replica, "SELECT what FROM shop.orders WHERE id = 1")).length === 1 ? true : undefined), 30_000, 500);
      const [status] = await query<{ Slave_IO_Running: string; Slave_SQL_Running: string }>(replica, "SHOW SLAVE STATUS");
      expect([status?.Slave_IO_Running, status?.Slave_SQL_Running]).toEqual(["Yes", "Yes"]);
    }
    if (!node.clusterDns) return; // CoreDNS not built on this machine: the names are not served to pods
    // The replicas follow the primary by its DNS name, resolved inside their pods.
    for (const replica of [`${name}-1`, `${name}-2`]) {
      const [status] = await query<{ Master_Host: string }>(replica, "SHOW SLAVE STATUS");
      expect(status?.Master_Host).toBe(podHost(name, ns, 0));
    }
    // From inside the replica's container, the primary by its name (CoreDNS on the node).
    const password = await rootPassword();
    const primary = podHost(name, ns, 0);
    const { stdout } = await kubectl("-n", ns, "exec", `${name}-2`, "-c", "mysql", "--", "env", `MYSQL_PWD=${password}`, "mariadb", "-h", primary, "-uroot", "-N", "-e", "SELECT @@hostname, what FROM shop.orders");
    expect(stdout.trim()).toBe(`${name}-0\treal pods`);
  }, 120_000);

  it("recovers a server killed inside its container: the kubelet restarts it and it catches up", async () => {
    await running(3);
    const victim = `${name}-2`;
    const before = await client.get<Pod>(builtin.pod, ns, victim);
    const restarts = before.status?.containerStatuses?.find((s) => s.name === "mysql")?.restartCount ?? 0;
    // mariadbd is the container's PID 1: only a signal from outside its pid namespace kills it.
    const id = (before.status?.containerStatuses?.find((s) => s.name === "mysql")?.containerID ?? "").replace("containerd://", "");
    expect(id).not.toBe("");
    await run("ctr", ["--address", join(node.dir, "containerd", "containerd.sock"), "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", id]);
    await waitFor("the container restarted", async () => {
      const p = await client.get<Pod>(builtin.pod, ns, victim);
      return (p.status?.containerStatuses?.find((s) => s.name === "mysql")?.restartCount ?? 0) > restarts ? true : undefined;
    }, 120_000, 1_000);
    await query(`${name}-0`, "INSERT INTO shop.orders VALUES (2, 'after the crash')");
    await running(3);
    await waitFor(`row on ${victim}`, async () => ((await query(victim, "SELECT what FROM shop.orders WHERE id = 2")).length === 1 ? true : undefined), 60_000, 1_000);
    expect(await query(victim, "SELECT COUNT(*) AS n FROM shop.orders")).toEqual([{ n: 2 }]);
  }, 300_000);

  it("lets a DatabaseUser log in to the cluster's primary", async () => {
    await running(3);
    await client.create(builtin.secret, { metadata: { name: "app-password", namespace: ns }, stringData: { password: "app-Secret-1" } } as KubeObject);
    await client.create(DatabaseUserKind.resource, {
      apiVersion: DatabaseUserKind.apiVersion,
      kind: DatabaseUserKind.kind,
      metadata: { name: "app", namespace: ns },
      spec: { instanceRef: { name: names.instance }, passwordSecretRef: { name: "app-password", key: "password" }, grants: [{ privileges: ["SELECT"], database: "shop" }] },
    } as KubeObject);
    await waitFor("DatabaseUser Ready", async () => {
      const u = await client.get<KubeObject & { status?: { conditions?: [] } }>(DatabaseUserKind.resource, ns, "app");
      return findCondition(u.status?.conditions, "Ready")?.status === "True" ? true : undefined;
    }, 90_000, 500);
    // Through the primary Service's name, as an application would.
    const at = await addresses.resolve({ host: `${names.primaryService}.${ns}.svc.cluster.local`, port: 3306 });
    const primaryPod = (await client.list<Pod>(builtin.pod, { namespace: ns, labelSelector: `${ROLE_LABEL}=primary` })).items[0];
    expect(at.host).toBe(primaryPod?.status?.podIP);
    const conn = await mysql.createConnection({ host: at.host, port: at.port, user: "app", password: "app-Secret-1" });
    try {
      const [rows] = await conn.query("SELECT COUNT(*) AS n FROM shop.orders");
      expect(rows).toEqual([{ n: 2 }]);
    } finally {
      await conn.end();
    }
  }, 120_000);

  it("rolls to another image, container by container, losing no acknowledged write", async () => {
    await running(3);
    await query(`${name}-0`, "CREATE TABLE shop.writes (id INT PRIMARY KEY)");
    await query(`${name}-0`, "CREATE USER writer@'%' IDENTIFIED BY 'Writer-Pass-1'");
    await query(`${name}-0`, "GRANT SELECT, INSERT ON shop.* TO writer@'%'");
    const writer = startWriter();
    await waitFor("the writer writing", () => (writer.acknowledged.length > 20 ? true : undefined), 30_000, 200);
    const started = Date.now();
    await client.patch(MYC, ns, name, { spec: { image: node.images.mariadbRev2 } });
    await waitFor("the rollout done", async () => {
      const c = await client.get<MySQLCluster>(MYC, ns, name);
      return c.status?.phase === "Running" && c.status.currentImage === node.images.mariadbRev2 && c.status.readyReplicas === 3 ? c : undefined;
    }, 600_000, 2_000);
    const seconds = Math.round((Date.now() - started) / 1000);
    await sleep(1_000);
    await writer.stop();
    // Every container runs the new image (the kubelet started new containers).
    const pods = await client.list<Pod>(builtin.pod, { namespace: ns, labelSelector: `app.kubernetes.io/instance=${name}` });
    expect(pods.items.map((p) => p.spec.containers.find((c) => c.name === "mysql")?.image)).toEqual(Array(3).fill(node.images.mariadbRev2));
    const primary = (await client.get<MySQLCluster>(MYC, ns, name)).status?.currentPrimary ?? "";
    const stored = new Set((await query<{ id: number }>(primary, "SELECT id FROM shop.writes")).map((r) => r.id));
    const lost = writer.acknowledged.filter((id) => !stored.has(id));
    expect(lost, "acknowledged writes missing after the rollout").toEqual([]);
    expect(writer.acknowledged.length).toBeGreaterThan(100);
    const window = writer.failures.length ? Math.max(...writer.failures) - Math.min(...writer.failures) : 0;
    console.log(`real-node rollout of 3 servers in ${seconds} s: ${writer.acknowledged.length} writes acknowledged, ${writer.failures.length} refused, write unavailability ${window} ms`);
  }, 700_000);

  it("backs the cluster up to S3 and restores it", async () => {
    await running(3);
    const count = async (pod: string) => (await query<{ n: number }>(pod, "SELECT (SELECT COUNT(*) FROM shop.orders) + (SELECT COUNT(*) FROM shop.writes) AS n"))[0]?.n;
    const primary = (await client.get<MySQLCluster>(MYC, ns, name)).status?.currentPrimary ?? "";
    const rows = await count(primary);
    await client.create(builtin.secret, { metadata: { name: "s3", namespace: ns }, stringData: { AWS_ACCESS_KEY_ID: env.s3.accessKeyId, AWS_SECRET_ACCESS_KEY: env.s3.secretAccessKey } } as KubeObject);
    await client.create(MySQLBackupKind.resource, {
      apiVersion: MySQLBackupKind.apiVersion,
      kind: MySQLBackupKind.kind,
      metadata: { name: "nightly", namespace: ns },
      spec: {
        instanceRef: { name: names.instance },
        databases: ["shop"],
        storage: { s3: { bucket: env.s3.bucket, prefix: `realnode-${ns}`, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true, credentialsSecretRef: { name: "s3" } } },
      },
    } as KubeObject);
    const finished = (kind: typeof MySQLBackupKind.resource, obj: string) =>
      waitFor(`${kind.kind} ${obj} finished`, async () => {
        const o = await client.get<KubeObject & { status?: { phase?: string; conditions?: [] } }>(kind, ns, obj);
        if (o.status?.phase === "Failed") throw new Error(`${obj} failed: ${findCondition(o.status.conditions, "Ready")?.message}`);
        return o.status?.phase === "Completed" ? o : undefined;
      }, 120_000, 500);
    await finished(MySQLBackupKind.resource, "nightly");
    await query(primary, "DROP DATABASE shop");
    await waitFor("the drop replicated", async () => ((await query(`${name}-1`, "SHOW DATABASES LIKE 'shop'")).length === 0 ? true : undefined), 30_000, 500);
    await client.create(MySQLRestoreKind.resource, {
      apiVersion: MySQLRestoreKind.apiVersion,
      kind: MySQLRestoreKind.kind,
      metadata: { name: "back", namespace: ns },
      spec: { instanceRef: { name: names.instance }, source: { backupRef: { name: "nightly" } } },
    } as KubeObject);
    await finished(MySQLRestoreKind.resource, "back");
    expect(await count(primary)).toBe(rows);
    // Restored on the primary, replicated to every replica.
    for (const pod of [`${name}-0`, `${name}-1`, `${name}-2`]) {
      await waitFor(`${pod} restored`, async () => ((await count(pod).catch(() => undefined)) === rows ? true : undefined), 60_000, 500);
    }
  }, 300_000);

  it("scales out with the primary's binary logs purged: the new pod is seeded, then replicates", async () => {
    await running(3);
    const primary = (await client.get<MySQLCluster>(MYC, ns, name)).status?.currentPrimary ?? "";
    await query(primary, "FLUSH BINARY LOGS");
    // MariaDB keeps a log until its binlog checkpoint has moved on: purge until only the newest is left.
    await waitFor("older binary logs purged", async () => {
      const binlogs = await query<{ Log_name: string }>(primary, "SHOW BINARY LOGS");
      if (binlogs.length === 1) return true;
      await query(primary, "PURGE BINARY LOGS TO ?", [binlogs.at(-1)?.Log_name]);
      return undefined;
    }, 30_000, 500);
    await client.patch(MYC, ns, name, { spec: { replicas: 4 } });
    await running(4);
    const pod = await client.get<Pod>(builtin.pod, ns, `${name}-3`);
    expect(pod.spec.nodeName).toBe(NODE_NAME);
    await query(primary, "INSERT INTO shop.orders VALUES (3, 'after the seed')");
    await waitFor(`${name}-3 has the later write`, async () => ((await query(`${name}-3`, "SELECT id FROM shop.orders WHERE id = 3")).length === 1 ? true : undefined), 60_000, 500);
    const checksum = async (p: string) => JSON.stringify(await query(p, "CHECKSUM TABLE shop.orders, shop.writes"));
    expect(await checksum(`${name}-3`)).toBe(await checksum(primary));
    const events = await client.list<KubeObject & { reason?: string; note?: string; regarding?: { name?: string } }>(builtin.event, { namespace: ns });
    expect(events.items.some((e) => e.reason === "ReplicaSeeded" && (e.note ?? "").startsWith(`Seeded ${name}-3:`))).toBe(true);
  }, 400_000);
});
