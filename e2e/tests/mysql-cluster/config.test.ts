// A `config` change reaches the servers without restarting them when they
// can take it at runtime (SET GLOBAL on every server), is applied again to a
// server that lost it, and restarts every server (a rollout) when a setting
// is read-only in the server.
import mysql from "mysql2/promise";
import { builtin, findCondition, type KubeObject } from "@stateward/core";
import { MySQLClusterKind, clusterNames, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { testClient } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import { rootPassword, startClusterSuite, type ClusterSuite } from "../../support/mysql-cluster.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const MYC = MySQLClusterKind.resource;
const name = "tuned";
const pods = [`${name}-0`, `${name}-1`];
let suite: ClusterSuite;
let ns: string;
let password: string;

async function running(): Promise<MySQLCluster> {
  return waitFor(`MySQLCluster ${name} Running`, async () => {
    const c = await client.get<MySQLCluster>(MYC, ns, name);
    if (c.status?.phase === "Running" && c.status.readyReplicas === 2 && c.status.updatedReplicas === 2 && c.status.observedGeneration === c.metadata.generation) return c;
    throw new Error(`phase ${c.status?.phase}: ${findCondition(c.status?.conditions, "Ready")?.message}${suite.servers.describeFailures()}`);
  }, 180_000, 500);
}

async function variable(pod: string, variableName: string): Promise<string> {
  const server = (await suite.servers.server(pod))!;
  const conn = await mysql.createConnection({ host: server.host, port: server.port, user: "root", password });
  try {
    const [rows] = await conn.query("SHOW GLOBAL VARIABLES WHERE Variable_name = ?", [variableName]);
    return String((rows as { Value: string }[])[0]?.Value);
  } finally {
    await conn.end();
  }
}

async function onServer(pod: string, sql: string): Promise<void> {
  const server = (await suite.servers.server(pod))!;
  const conn = await mysql.createConnection({ host: server.host, port: server.port, user: "root", password });
  await conn.query(sql);
  await conn.end();
}

const podUids = async () => Object.fromEntries((await client.list(builtin.pod, { namespace: ns, labelSelector: `app.kubernetes.io/instance=${name}` })).items.map((p) => [p.metadata.name ?? "", p.metadata.uid] as const));
const notes = async (reason: string) =>
  (await client.list<KubeObject & { reason?: string; note?: string; regarding?: { name?: string } }>(builtin.event, { namespace: ns })).items
    .filter((e) => e.regarding?.name === name && e.reason === reason)
    .map((e) => e.note ?? "");
const myCnf = async () => (await client.get<KubeObject & { data: Record<string, string> }>(builtin.configMap, ns, clusterNames(name).configMap)).data["my.cnf"] ?? "";

beforeAll(async () => {
  suite = await startClusterSuite(client, env, "cluster-config");
  ns = suite.ns;
  await client.create(MYC, { apiVersion: MySQLClusterKind.apiVersion, kind: MySQLClusterKind.kind, metadata: { name, namespace: ns }, spec: { replicas: 2, storage: { size: "1Gi" }, config: { max_connections: "250" } } });
  await running();
  password = await rootPassword(client, ns, name);
}, 240_000);

afterAll(async () => {
  await suite?.stop();
}, 120_000);

describe("a config change the servers can take at runtime", () => {
  it("is applied to every server with SET GLOBAL, and no server restarts", async () => {
    const before = await podUids();
    const revision = (await client.get<KubeObject & { status: { updateRevision: string } }>(builtin.statefulSet, ns, name)).status.updateRevision;
    await client.patch(MYC, ns, name, { spec: { config: { max_connections: "400", long_query_time: "0.5", tmp_table_size: "32M" } } });
    const applied = await waitFor("ConfigApplied", async () => (await notes("ConfigApplied"))[0], 60_000, 250);
    expect(applied).toBe("Applied long_query_time = 0.5, max_connections = 400, tmp_table_size = 32M to 2 server(s) without a restart");
    for (const pod of pods) {
      expect(await variable(pod, "max_connections"), pod).toBe("400");
      expect(await variable(pod, "long_query_time"), pod).toBe("0.500000");
      expect(await variable(pod, "tmp_table_size"), pod).toBe(String(32 * 1024 * 1024));
    }
    // Pods started later read it from the my.cnf.
    expect(await myCnf()).toMatch(/max_connections = 400/);
    const c = await running();
    expect(c.status?.updated).toBe("2/2");
    expect(await podUids()).toEqual(before);
    expect((await client.get<KubeObject & { status: { updateRevision: string } }>(builtin.statefulSet, ns, name)).status.updateRevision).toBe(revision);
  }, 120_000);

  it("is applied again to a server that restarted from an older my.cnf", async () => {
    // What a crashed container comes back with: the my.cnf its pod started with.
    await onServer(`${name}-1`, "SET GLOBAL max_connections = 250");
    // Any event on the cluster starts a reconcile; otherwise the check comes with the next (30 s) look.
    await client.patch(MYC, ns, name, { metadata: { annotations: { "test.stateward.io/poke": String(Date.now()) } } });
    const again = `${name}-1 had lost max_connections (it restarted from an older my.cnf): applied again`;
    // The Event comes right after the value is back.
    await waitFor("ConfigApplied again", async () => ((await notes("ConfigApplied")).includes(again) ? true : undefined), 45_000, 250);
    expect(await variable(`${name}-1`, "max_connections")).toBe("400");
    expect(await variable(`${name}-0`, "max_connections")).toBe("400");
  }, 90_000);
});

describe("a config change with a setting that is read-only in the server", () => {
  it("restarts every server, one at a time, with the new my.cnf", async () => {
    const before = await podUids();
    await client.patch(MYC, ns, name, { spec: { config: { back_log: "90" } } });
    await waitFor("every pod recreated", async () => {
      const now = await podUids();
      return pods.every((p) => now[p] !== undefined && now[p] !== before[p]) ? true : undefined;
    }, 180_000, 500);
    await running();
    for (const pod of pods) {
      expect(await variable(pod, "back_log"), pod).toBe("90");
      // The earlier runtime change is in the my.cnf they restarted with.
      expect(await variable(pod, "max_connections"), pod).toBe("400");
    }
    const cm = await client.get<KubeObject>(builtin.configMap, ns, clusterNames(name).configMap);
    expect(cm.metadata.annotations?.["stateward.io/runtime-settings"]).toBe("{}");
  }, 240_000);
});
