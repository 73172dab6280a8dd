// The mysql-cluster operator on the real control plane: KWOK runs the pods,
// LocalPodServers gives each one a real mariadbd, so replication is real.
// A user applies a MySQLCluster and gets a primary with caught-up replicas;
// owned objects are recreated and reverted; scaling in stops replication on
// the leaving servers and never touches the primary; scaling out with the
// primary's binary logs purged seeds the new replicas to identical data;
// DatabaseUser works on the published MySQLInstance; bad input is refused.
import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";
import { builtin, findCondition, isInvalid, type ApiError, type CapturedLogs, type KubeObject } from "@stateward/core";
import { MySQLInstanceKind } from "@stateward/mysql";
import { DatabaseUserKind, databaseUserOperator } from "@stateward/operator-database-user";
import { MySQLClusterKind, ROLE_LABEL, clusterNames, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { LocalPodServers} from "../../support/mysql-pods.ts";
import { type LocalServer } from "../../support/mysql-pods.ts";
import { testClient, waitGone } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import { rootPassword, startClusterSuite, type ClusterSuite } from "../../support/mysql-cluster.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const MYC = MySQLClusterKind.resource;
let suite: ClusterSuite;
let ns: string;
let logs: CapturedLogs;
let servers: LocalPodServers;

function cluster(name: string, spec: Partial<MySQLCluster["spec"]> = {}): MySQLCluster {
  return { apiVersion: MySQLClusterKind.apiVersion, kind: MySQLClusterKind.kind, metadata: { name, namespace: ns }, spec: { replicas: 3, storage: { size: "1Gi" }, ...spec } };
}

async function running(name: string, replicas: number, timeoutMs = 180_000): Promise<MySQLCluster> {
  return waitFor(`MySQLCluster ${name} Running with ${replicas} ready`, async () => {
    const c = await client.get<MySQLCluster>(MYC, ns, name);
    if (c.status?.phase === "Running" && c.status.readyReplicas === replicas && c.status.observedGeneration === c.metadata.generation) return c;
    // The last one is in the timeout's message.
    throw new Error(`phase ${c.status?.phase}: ${findCondition(c.status?.conditions, "Ready")?.message}${servers.describeFailures()}`);
  }, timeoutMs, 500);
}

async function connect(server: LocalServer, password: string): Promise<mysql.Connection> {
  return mysql.createConnection({ host: server.host, port: server.port, user: "root", password, multipleStatements: false });
}

async function serverOf(pod: string): Promise<LocalServer> {
  return waitFor(`server of ${pod}`, () => servers.server(pod), 60_000, 200);
}

async function query<T = Record<string, unknown>>(pod: string, password: string, sql: string, values: unknown[] = []): Promise<T[]> {
  const conn = await connect(await serverOf(pod), password);
  try {
    const [rows] = await conn.query(sql, values);
    return rows as T[];
  } finally {
    await conn.end();
  }
}

async function checksum(pod: string, password: string, table: string): Promise<string> {
  const rows = await query<{ Checksum: number | string | null }>(pod, password, `CHECKSUM TABLE ${table}`);
  return String(rows[0]?.Checksum);
}

async function rejected(obj: KubeObject): Promise<string> {
  const err = (await client.create(MYC, obj).then(() => undefined, (e: unknown) => e)) as ApiError | undefined;
  expect(err, "the API server accepted it").toBeDefined();
  expect(isInvalid(err)).toBe(true);
  return err?.message ?? "";
}

beforeAll(async () => {
  suite = await startClusterSuite(client, env, "cluster", [databaseUserOperator]);
  ({ ns, servers, logs } = suite);
}, 120_000);

afterAll(async () => {
  await suite?.stop();
}, 120_000);

describe("a 3-replica cluster", () => {
  const name = "shop";
  const names = clusterNames(name);
  let password: string;

  it("deploys a primary and two caught-up replicas, with everything owned by the cluster", async () => {
    const created = await client.create(MYC, cluster(name, { config: { max_connections: "250" } }));
    const c = await running(name, 3);
    password = await rootPassword(client, ns, name);
    expect(c.status?.currentPrimary).toBe("shop-0");
    expect(c.status?.ready).toBe("3/3");
    expect(findCondition(c.status?.conditions, "Available")?.status).toBe("True");
    expect(findCondition(c.status?.conditions, "Replicating")?.status).toBe("True");
    const owned: [Parameters<typeof client.get>[0], string][] = [
      [builtin.statefulSet, names.statefulSet],
      [builtin.service, names.headlessService],
      [builtin.service, names.primaryService],
      [builtin.service, names.readOnlyService],
      [builtin.configMap, names.configMap],
      [builtin.podDisruptionBudget, names.podDisruptionBudget],
      [MySQLInstanceKind.resource, names.instance],
    ];
    for (const [rt, objName] of owned) {
      const o = await client.get(rt, ns, objName);
      expect(o.metadata.ownerReferences?.[0], `${rt.kind} ${objName}`).toMatchObject({ kind: "MySQLCluster", uid: created.metadata.uid, controller: true });
    }
    // Generated Secrets are kept when the cluster goes (secretDeletionPolicy Retain): not owned.
    for (const s of [names.rootSecret, names.replicationSecret]) {
      expect((await client.get(builtin.secret, ns, s)).metadata.ownerReferences ?? []).toEqual([]);
    }
    const cm = await client.get<KubeObject & { data: Record<string, string> }>(builtin.configMap, ns, names.configMap);
    expect(cm.data["my.cnf"]).toMatch(/max_connections = 250/);
    expect(cm.data["my.cnf"]).toMatch(/log_slave_updates = ON/);
    // The servers really run with it, each with its own server id.
    const ids = await Promise.all(["shop-0", "shop-1", "shop-2"].map(async (p) => (await query<{ id: number }>(p, password, "SELECT @@server_id AS id, @@max_connections AS m"))[0]?.id));
    expect(new Set(ids).size).toBe(3);
    // The role label is on every pod; the primary Service selects the primary.
    const pods = await client.list(builtin.pod, { namespace: ns, labelSelector: `app.kubernetes.io/instance=${name}` });
    expect(Object.fromEntries(pods.items.map((p) => [p.metadata.name, p.metadata.labels?.[ROLE_LABEL]]))).toEqual({ "shop-0": "primary", "shop-1": "replica", "shop-2": "replica" });
    const members = c.status?.members ?? [];
    expect(members.map((m) => [m.name, m.role, m.ready, m.ioThread, m.sqlThread])).toEqual([
      ["shop-0", "primary", true, undefined, undefined],
      ["shop-1", "replica", true, true, true],
      ["shop-2", "replica", true, true, true],
    ]);
  }, 240_000);

  it("replicates a row written on the primary to both replicas", async () => {
    await query("shop-0", password, "CREATE DATABASE IF NOT EXISTS orders");
    await query("shop-0", password, "CREATE TABLE orders.items (id INT PRIMARY KEY, what VARCHAR(64))");
    const marker = randomBytes(6).toString("hex");
    await query("shop-0", password, "INSERT INTO orders.items VALUES (1, ?)", [marker]);
    for (const pod of ["shop-1", "shop-2"]) {
      await waitFor(`row on ${pod}`, async () => ((await query<{ what: string }>(pod, password, "SELECT what FROM orders.items WHERE id = 1"))[0]?.what === marker ? true : undefined), 30_000, 200);
    }
    // Status reports the replicas caught up to the primary's GTID.
    const [{ pos } = { pos: "" }] = await query<{ pos: string }>("shop-0", password, "SELECT @@gtid_binlog_pos AS pos");
    await waitFor("status shows the replicas at the primary's GTID", async () => {
      await client.patch(MYC, ns, name, { metadata: { annotations: { "test/poke": marker } } });
      const c = await client.get<MySQLCluster>(MYC, ns, name);
      const replicas = (c.status?.members ?? []).filter((m) => m.role === "replica");
      return replicas.length === 2 && replicas.every((m) => m.gtidExecuted === pos && m.lagSeconds === 0) ? true : undefined;
    }, 60_000, 1000);
  }, 120_000);

  it("repoints a replica found replicating from another replica under a steady write load, never calling the primary's newest writes errant", async () => {
    // What a switchover leaves for a moment (a replica still fed through the old primary), made by hand:
    // shop-2 replicates from shop-1 while four clients write on the primary as fast as they can. shop-2
    // then holds the primary's newest transactions moments after the primary commits them; the operator
    // must repoint it, not take those for errant ones (which stops a rollout at its health gate).
    await query("shop-0", password, "CREATE TABLE orders.stream (id INT AUTO_INCREMENT PRIMARY KEY, at TIMESTAMP(6) DEFAULT CURRENT_TIMESTAMP(6))");
    const primary = await serverOf("shop-0");
    const middle = await serverOf("shop-1");
    let writing = true;
    const writers = Array.from({ length: 4 }, async () => {
      const conn = await connect(primary, password);
      try {
        while (writing) await conn.query("INSERT INTO orders.stream () VALUES ()");
      } finally {
        await conn.end();
      }
    });
    const errantSeen: string[] = [];
    try {
      const chained = await connect(await serverOf("shop-2"), password);
      try {
        await chained.query("STOP SLAVE");
        await chained.query("CHANGE MASTER TO MASTER_HOST = ?, MASTER_PORT = ?, MASTER_USER = 'root', MASTER_PASSWORD = ?, MASTER_USE_GTID = slave_pos", [middle.host, middle.port, password]);
        await chained.query("START SLAVE");
      } finally {
        await chained.end();
      }
      await waitFor("shop-2 repointed at the primary", async () => {
        const c = await client.get<MySQLCluster>(MYC, ns, name);
        const errant = findCondition(c.status?.conditions, "ErrantTransactions");
        if (errant?.status === "True") errantSeen.push(errant.message ?? "");
        for (const m of c.status?.members ?? []) if (/errant/.test(m.message ?? "")) errantSeen.push(`${m.name}: ${m.message}`);
        const [status] = await query<{ Master_Port: number }>("shop-2", password, "SHOW SLAVE STATUS");
        return Number(status?.Master_Port) === primary.port ? true : undefined;
      }, 120_000, 200);
    } finally {
      writing = false;
      await Promise.all(writers);
    }
    expect(errantSeen, "the operator called the primary's own transactions errant").toEqual([]);
    await waitFor("shop-2 caught up", async () => ((await checksum("shop-2", password, "orders.stream")) === (await checksum("shop-0", password, "orders.stream")) ? true : undefined), 30_000, 500);
    await running(name, 3);
  }, 180_000);

  it("lets DatabaseUser work on the published MySQLInstance (through the primary Service)", async () => {
    await client.create(builtin.secret, { metadata: { name: "app-password", namespace: ns }, stringData: { password: "app-Secret-1" } } as KubeObject);
    await client.create(DatabaseUserKind.resource, {
      apiVersion: DatabaseUserKind.apiVersion, kind: DatabaseUserKind.kind, metadata: { name: "app", namespace: ns },
      spec: { instanceRef: { name }, passwordSecretRef: { name: "app-password", key: "password" }, grants: [{ privileges: ["SELECT"], database: "orders" }] },
    } as KubeObject);
    await waitFor("DatabaseUser Ready", async () => {
      const u = await client.get<KubeObject & { status?: { conditions?: [] } }>(DatabaseUserKind.resource, ns, "app");
      return findCondition(u.status?.conditions, "Ready")?.status === "True" ? true : undefined;
    }, 60_000, 250);
    // Created on the primary, replicated: the account logs in on a replica.
    const replica = await serverOf("shop-2");
    await waitFor("account on a replica", async () => {
      const conn = await mysql.createConnection({ host: replica.host, port: replica.port, user: "app", password: "app-Secret-1" });
      const [rows] = await conn.query("SELECT what FROM orders.items");
      await conn.end();
      return (rows as unknown[]).length === 1 ? true : undefined;
    }, 30_000, 250);
  }, 120_000);

  it("recreates owned objects deleted by hand and reverts edits of fields it owns", async () => {
    await client.delete(builtin.service, ns, names.primaryService);
    await client.delete(builtin.configMap, ns, names.configMap);
    await client.patch(builtin.service, ns, names.readOnlyService, { spec: { selector: { [ROLE_LABEL]: "primary" } } });
    await client.patch(builtin.statefulSet, ns, names.statefulSet, { spec: { template: { spec: { terminationGracePeriodSeconds: 5 } } } });
    await waitFor("primary Service recreated", () => client.get(builtin.service, ns, names.primaryService).then((s) => (s.metadata.deletionTimestamp ? undefined : s)), 30_000, 200);
    const cm = await waitFor("ConfigMap recreated", () => client.get<KubeObject & { data: Record<string, string> }>(builtin.configMap, ns, names.configMap), 30_000, 200);
    expect(cm.data["my.cnf"]).toMatch(/max_connections = 250/);
    await waitFor("read-only Service selector reverted", async () => {
      const s = await client.get<KubeObject & { spec: { selector: Record<string, string> } }>(builtin.service, ns, names.readOnlyService);
      return s.spec.selector[ROLE_LABEL] === "replica" ? true : undefined;
    }, 30_000, 200);
    await waitFor("StatefulSet edit reverted", async () => {
      const s = await client.get<KubeObject & { spec: { template: { spec: { terminationGracePeriodSeconds: number } } } }>(builtin.statefulSet, ns, names.statefulSet);
      return s.spec.template.spec.terminationGracePeriodSeconds === 60 ? true : undefined;
    }, 30_000, 200);
  }, 90_000);

  it("refuses an unknown server setting without applying any of the change", async () => {
    const before = await client.get<KubeObject & { data: Record<string, string> }>(builtin.configMap, ns, names.configMap);
    await client.patch(MYC, ns, name, { spec: { config: { back_log: "100", no_such_setting_anywhere: "1" } } });
    const failed = await waitFor("InvalidConfig reported", async () => {
      const c = await client.get<MySQLCluster>(MYC, ns, name);
      const ready = findCondition(c.status?.conditions, "Ready");
      return ready?.reason === "InvalidConfig" && c.status?.observedGeneration === c.metadata.generation ? c : undefined;
    }, 30_000, 250);
    expect(failed.status?.phase).toBe("Failed");
    expect(findCondition(failed.status?.conditions, "Ready")?.message).toMatch(/no_such_setting_anywhere/);
    const after = await client.get<KubeObject & { data: Record<string, string> }>(builtin.configMap, ns, names.configMap);
    expect(after.data["my.cnf"]).toBe(before.data["my.cnf"]);
    const events = await client.list<KubeObject & { reason?: string; note?: string }>(builtin.event, { namespace: ns });
    expect(events.items.some((e) => e.reason === "InvalidConfig" && /no_such_setting_anywhere/.test(e.note ?? ""))).toBe(true);
    // Fixed: applied — back_log is read-only in the server, so by restarting every server — and the cluster is Running again.
    await client.patch(MYC, ns, name, { spec: { config: { back_log: "100", no_such_setting_anywhere: null } } });
    await running(name, 3, 60_000);
    await waitFor("ConfigMap updated", async () => {
      const cm = await client.get<KubeObject & { data: Record<string, string> }>(builtin.configMap, ns, names.configMap);
      return /back_log = 100/.test(cm.data["my.cnf"] ?? "") ? true : undefined;
    }, 30_000, 250);
  }, 120_000);

  it("scales 3 → 1: the leaving replicas stop replicating, no data changes, the primary stays (moved to shop-0 first if it was leaving)", async () => {
    // The config change above rolled the servers, with a switchover: the primary may be shop-1 now.
    const primaryBefore = (await client.get<MySQLCluster>(MYC, ns, name)).status?.currentPrimary;
    const [{ pos } = { pos: "" }] = await query<{ pos: string }>("shop-0", password, "SELECT @@gtid_current_pos AS pos");
    const sumBefore = await checksum("shop-0", password, "orders.items");
    const since = new Date().toISOString();
    await client.patch(MYC, ns, name, { spec: { replicas: 1 } });
    const c = await running(name, 1, 90_000);
    expect(c.status?.members?.map((m) => m.name)).toEqual(["shop-0"]);
    expect(c.status?.currentPrimary).toBe("shop-0");
    await waitGone(client, builtin.pod, ns, "shop-2", 60_000);
    await waitGone(client, builtin.pod, ns, "shop-1", 60_000);
    for (const pod of ["shop-1", "shop-2"]) {
      expect(await query(pod, password, "SHOW SLAVE STATUS"), `${pod} still replicates`).toEqual([]);
    }
    const [{ pos: after } = { pos: "" }] = await query<{ pos: string }>("shop-0", password, "SELECT @@gtid_current_pos AS pos");
    expect(after).toBe(pos);
    if (primaryBefore !== "shop-0") {
      const events = await client.list<KubeObject & { reason?: string; note?: string }>(builtin.event, { namespace: ns });
      expect(events.items.some((e) => e.reason === "SwitchedOver" && (e.note ?? "").startsWith(`shop-0 is the primary (was ${primaryBefore})`))).toBe(true);
    }
    expect(await checksum("shop-0", password, "orders.items")).toBe(sumBefore);
    const [{ ro } = { ro: 1 }] = await query<{ ro: number }>("shop-0", password, "SELECT @@read_only AS ro");
    expect(ro).toBe(0);
    // A scale keeps the pod template: no rollout is told of.
    const told = await client.list<KubeObject & { reason?: string; eventTime?: string }>(builtin.event, { namespace: ns });
    expect(told.items.filter((e) => e.reason === "RolloutComplete" && (e.eventTime ?? "") >= since)).toEqual([]);
  }, 150_000);

  it("deleting the cluster removes everything it owns but keeps the generated Secrets (Retain)", async () => {
    await client.delete(MYC, ns, name);
    await waitGone(client, MYC, ns, name, 30_000);
    for (const [rt, objName] of [
      [builtin.statefulSet, names.statefulSet],
      [builtin.service, names.primaryService],
      [builtin.configMap, names.configMap],
      [MySQLInstanceKind.resource, names.instance],
    ] as const) {
      await waitGone(client, rt, ns, objName, 60_000);
    }
    expect((await client.get(builtin.secret, ns, names.rootSecret)).metadata.name).toBe(names.rootSecret);
  }, 120_000);
});

describe("scaling out with the primary's binary logs purged", () => {
  const name = "ledger";
  const tables = ["ledger.entries", "ledger.notes"];

  it("seeds the new replicas from a snapshot: identical checksums, then replication", async () => {
    await client.create(MYC, cluster(name, { replicas: 1, secretDeletionPolicy: "Delete" }));
    await running(name, 1);
    const password = await rootPassword(client, ns, name);
    await query(`${name}-0`, password, "CREATE DATABASE ledger");
    await query(`${name}-0`, password, "CREATE TABLE ledger.entries (id INT AUTO_INCREMENT PRIMARY KEY, amount DECIMAL(12,2), memo TEXT, raw VARBINARY(16), at DATETIME(6))");
    await query(`${name}-0`, password, "CREATE TABLE ledger.notes (id INT PRIMARY KEY, body JSON)");
    await query(`${name}-0`, password, "CREATE VIEW ledger.totals AS SELECT SUM(amount) AS total FROM ledger.entries");
    for (let i = 0; i < 20; i++) {
      const values = Array.from({ length: 100 }, (_, j) => [((i * 100 + j) * 1.25).toFixed(2), `memo ${i}-${j} 'quoted' ? ünïcode`, randomBytes(16), new Date(Date.UTC(2026, 0, 1, 0, 0, j))]);
      await query(`${name}-0`, password, "INSERT INTO ledger.entries (amount, memo, raw, at) VALUES ?", [values]);
    }
    await query(`${name}-0`, password, `INSERT INTO ledger.notes VALUES (1, '{"a": [1, 2, "x"]}')`);
    // The history before now is gone from the primary's binary logs.
    // (MariaDB keeps a log until its binlog checkpoint has moved on: purge until only the newest is left.)
    await query(`${name}-0`, password, "FLUSH BINARY LOGS");
    await waitFor("older binary logs purged", async () => {
      const logs = await query<{ Log_name: string }>(`${name}-0`, password, "SHOW BINARY LOGS");
      if (logs.length === 1) return true;
      await query(`${name}-0`, password, "PURGE BINARY LOGS TO ?", [logs.at(-1)?.Log_name]);
      return undefined;
    }, 30_000, 500);

    await client.patch(MYC, ns, name, { spec: { replicas: 3 } });
    await running(name, 3, 240_000);
    // A write after the seed arrives by replication.
    await query(`${name}-0`, password, "INSERT INTO ledger.notes VALUES (2, '[]')");
    for (const pod of [`${name}-1`, `${name}-2`]) {
      await waitFor(`${pod} replicated the later write`, async () => ((await query(pod, password, "SELECT id FROM ledger.notes WHERE id = 2")).length === 1 ? true : undefined), 30_000, 200);
      for (const table of tables) expect(await checksum(pod, password, table), `${pod} ${table}`).toBe(await checksum(`${name}-0`, password, table));
      expect(await query(pod, password, "SELECT total FROM ledger.totals")).toEqual(await query(`${name}-0`, password, "SELECT total FROM ledger.totals"));
    }
    const events = await client.list<KubeObject & { reason?: string; note?: string; regarding?: { name?: string } }>(builtin.event, { namespace: ns });
    const seeded = events.items.filter((e) => e.regarding?.name === name && e.reason === "ReplicaSeeded").map((e) => /^Seeded (\S+):/.exec(e.note ?? "")?.[1]);
    expect(seeded.sort(), JSON.stringify(events.items.map((e) => [e.regarding?.name, e.reason, e.note]))).toEqual([`${name}-1`, `${name}-2`]);
  }, 360_000);

  it("deletes the generated Secrets with the cluster when asked to (secretDeletionPolicy Delete)", async () => {
    const names = clusterNames(name);
    expect((await client.get(builtin.secret, ns, names.rootSecret)).metadata.ownerReferences?.[0]?.kind).toBe("MySQLCluster");
    await client.delete(MYC, ns, name);
    await waitGone(client, builtin.secret, ns, names.rootSecret, 60_000);
    await waitGone(client, builtin.secret, ns, names.replicationSecret, 60_000);
  }, 90_000);
});

describe("bad input", () => {
  it("is refused by the schema: replicas out of range, operator-owned or malformed settings, a zero size", async () => {
    expect(await rejected(cluster("bad-a", { replicas: 0 }))).toMatch(/replicas/);
    expect(await rejected(cluster("bad-b", { replicas: 10 }))).toMatch(/replicas/);
    expect(await rejected(cluster("bad-c", { config: { "server-id": "7" } }))).toMatch(/operator manages/);
    expect(await rejected(cluster("bad-d", { config: { "max connections": "7" } }))).toMatch(/config names/);
    expect(await rejected(cluster("bad-e", { config: { init_connect: "SET x=1\n[client]" } }))).toMatch(/config/);
    expect(await rejected(cluster("bad-f", { storage: { size: "0" } }))).toMatch(/positive quantity/);
  });

  it("refuses a storage shrink and a storage class change", async () => {
    await client.create(MYC, cluster("sizes", { replicas: 1, storage: { size: "2Gi" } }));
    const shrink = (await client.patch(MYC, ns, "sizes", { spec: { storage: { size: "1Gi" } } }).then(() => undefined, (e: unknown) => e)) as ApiError | undefined;
    expect(isInvalid(shrink)).toBe(true);
    expect(shrink?.message).toMatch(/cannot shrink/);
    const cls = (await client.patch(MYC, ns, "sizes", { spec: { storage: { storageClassName: "fast" } } }).then(() => undefined, (e: unknown) => e)) as ApiError | undefined;
    expect(isInvalid(cls)).toBe(true);
    expect(cls?.message).toMatch(/storageClassName cannot be changed/);
    // Growing is allowed.
    await client.patch(MYC, ns, "sizes", { spec: { storage: { size: "3Gi" } } });
    await client.delete(MYC, ns, "sizes");
  });

  it("waits, Pending, for a root password Secret that does not exist, and goes on once it does", async () => {
    await client.create(MYC, cluster("byo", { replicas: 1, rootPasswordSecretRef: { name: "byo-root" } }));
    const pending = await waitFor("Pending", async () => {
      const c = await client.get<MySQLCluster>(MYC, ns, "byo");
      return c.status?.phase === "Pending" ? c : undefined;
    }, 30_000, 250);
    expect(findCondition(pending.status?.conditions, "Ready")).toMatchObject({ status: "False", reason: "SecretNotFound" });
    expect(findCondition(pending.status?.conditions, "Ready")?.message).toMatch(/byo-root/);
    await client.create(builtin.secret, { metadata: { name: "byo-root", namespace: ns }, stringData: { username: "root", password: "Byo-Root-Pass-1" } } as KubeObject);
    await running("byo", 1);
    expect(await query("byo-0", "Byo-Root-Pass-1", "SELECT 1 AS one")).toEqual([{ one: 1 }]);
    // No Secret value anywhere in the operator's output.
    expect(logs.text()).not.toContain("Byo-Root-Pass-1");
    expect(logs.text()).not.toContain(await rootPassword(client, ns, "shop"));
    await client.delete(MYC, ns, "byo");
  }, 240_000);
});
