// Seeding a new replica must neither freeze the primary nor loop:
//
//   a view in database `a` over a function and a table of database `z` (later
//   in sort order) is copied: views come after every database and routine;
//   a long write statement on the primary puts the seed off — the primary's writers
//   are never held up behind the snapshot's read lock — with a BackingOff
//   condition and an Event; once the statement ends, the seed completes;
//   a rollout started while a seed copies waits for it before restarting
//   that replica;
//   a seeded replica made the primary seeds the next new replica in turn: its
//   binary log says it holds everything up to the copy's position, so a new
//   replica is never left to replicate only what came after the copy.
import type mysql from "mysql2/promise";
import { builtin, findCondition, type KubeObject } from "@stateward/core";
import { MySQLClusterKind, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { eventsAbout } from "../../support/events.ts";
import { testClient } from "../../support/kube.ts";
import type { LocalPodServers } from "../../support/mysql-pods.ts";
import { waitFor } from "../../support/wait.ts";
import { clusterManifest, clusterRunning, connectPod, onPod as runOnPod, rootPassword, startClusterSuite, type ClusterSuite } from "../../support/mysql-cluster.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const MYC = MySQLClusterKind.resource;
const name = "feed";
let suite: ClusterSuite;
let ns: string;
let servers: LocalPodServers;
let password: string;

interface Event extends KubeObject {
  reason?: string;
  note?: string;
  regarding?: { name?: string };
}

async function running(replicas: number, timeoutMs: number): Promise<MySQLCluster> {
  return waitFor(`MySQLCluster ${name} Running with ${replicas} ready`, async () => {
    const c = await client.get<MySQLCluster>(MYC, ns, name);
    if (c.status?.phase === "Running" && c.status.readyReplicas === replicas && c.status.observedGeneration === c.metadata.generation) return c;
    throw new Error(`phase ${c.status?.phase}: ${findCondition(c.status?.conditions, "Ready")?.message}; Seeding: ${findCondition(c.status?.conditions, "Seeding")?.message}${servers.describeFailures()}`);
  }, timeoutMs, 500);
}

function connect(pod: string): Promise<mysql.Connection> {
  return connectPod(servers, pod, password);
}

function onPod(pod: string, ...statements: string[]): Promise<Record<string, unknown>[]> {
  return runOnPod(servers, pod, password, ...statements);
}

/** Only the newest binary log is left on the primary (`pod`, with its cluster's root password): a new replica must be seeded. */
async function purgeBinaryLogs(pod = `${name}-0`, rootPw = password): Promise<void> {
  await runOnPod(servers, pod, rootPw, "FLUSH BINARY LOGS");
  await waitFor("older binary logs purged", async () => {
    const logs = (await runOnPod(servers, pod, rootPw, "SHOW BINARY LOGS")) as { Log_name: string }[];
    if (logs.length === 1) return true;
    await runOnPod(servers, pod, rootPw, `PURGE BINARY LOGS TO '${logs.at(-1)?.Log_name ?? ""}'`);
    return undefined;
  }, 30_000, 500);
}

async function events(reason: string): Promise<Event[]> {
  return (await client.list<Event>(builtin.event, { namespace: ns })).items.filter((e) => e.regarding?.name === name && e.reason === reason);
}

beforeAll(async () => {
  suite = await startClusterSuite(client, env, "seeding");
  ({ ns, servers } = suite);
  await client.create(MYC, { apiVersion: MySQLClusterKind.apiVersion, kind: MySQLClusterKind.kind, metadata: { name, namespace: ns }, spec: { replicas: 1, storage: { size: "1Gi" } } });
  await running(1, 180_000);
  password = await rootPassword(client, ns, name);
}, 300_000);

afterAll(async () => {
  await suite?.stop();
}, 120_000);

describe("seeding a replica", () => {
  it("copies a view of database a that uses a function and a table of database z", async () => {
    await onPod(
      `${name}-0`,
      "CREATE DATABASE a",
      "CREATE DATABASE z",
      "CREATE TABLE z.t (id INT PRIMARY KEY, v INT)",
      "INSERT INTO z.t VALUES (1, 10), (2, 20)",
      "CREATE FUNCTION z.twice(x INT) RETURNS INT DETERMINISTIC RETURN x * 2",
      "CREATE VIEW a.v AS SELECT id, z.twice(v) AS doubled FROM z.t",
      "CREATE VIEW a.w AS SELECT doubled FROM a.v WHERE id = 2",
    );
    await purgeBinaryLogs();
    await client.patch(MYC, ns, name, { spec: { replicas: 2 } });
    // Before, each attempt failed on the view (1146/1305), dropped its copy and started over.
    await running(2, 120_000);
    expect(await onPod(`${name}-1`, "SELECT id, doubled FROM a.v ORDER BY id")).toEqual([{ id: 1, doubled: 20 }, { id: 2, doubled: 40 }]);
    expect(await onPod(`${name}-1`, "SELECT doubled FROM a.w")).toEqual([{ doubled: 40 }]);
    expect((await events("ReplicaSeeded")).some((e) => (e.note ?? "").startsWith(`Seeded ${name}-1:`))).toBe(true);
    expect(await events("SeedFailed")).toEqual([]);
  }, 300_000);

  it("does not hold up the primary's writes behind a long statement, backs off, and seeds once it ended", async () => {
    await onPod(`${name}-0`, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1)", "CREATE TABLE app.w (id INT PRIMARY KEY)");
    await purgeBinaryLogs();
    // A batch job whose statement runs for a minute. (A long SELECT would do on MySQL; MariaDB's
    // FTWRL does not wait for readers, but for every running write — and meanwhile blocks all others.)
    const reader = await connect(`${name}-0`);
    const [idRows] = (await reader.query("SELECT CONNECTION_ID() AS id")) as unknown as [{ id: number }[]];
    const readerId = idRows[0]?.id;
    const longQuery = reader.query("UPDATE app.t SET id = id + SLEEP(60)").catch((err: unknown) => err);
    await new Promise((r) => setTimeout(r, 1_500));
    await client.patch(MYC, ns, name, { spec: { replicas: 3 } });

    // An application keeps writing meanwhile; no write may wait more than 2 s.
    const writer = await connect(`${name}-0`);
    let slowest = 0;
    let written = 0;
    try {
      const until = Date.now() + 60_000;
      let backingOff: string | undefined;
      while (Date.now() < until) {
        const started = performance.now();
        await writer.query({ sql: "INSERT INTO app.w VALUES (?)", values: [++written], timeout: 5_000 });
        slowest = Math.max(slowest, performance.now() - started);
        const c = await client.get<MySQLCluster>(MYC, ns, name);
        const seeding = findCondition(c.status?.conditions, "Seeding");
        if (seeding?.reason === "BackingOff" && (await events("SeedingPutOff")).length > 0) {
          backingOff = seeding.message;
          // A few more writes while the seed waits for its next attempt.
          if (written > 20) break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(backingOff, "the Seeding condition says the seed is put off").toMatch(/feed-2: attempt \d+ put off: the primary is running long statements \(connection \d+ of root for \d+ s\)/);
    } finally {
      await writer.end();
    }
    expect(slowest, "the slowest write on the primary, ms").toBeLessThan(2_000);
    const putOff = await events("SeedingPutOff");
    expect(putOff[0]?.note).toMatch(/^Seeding feed-2 from feed-0 put off \(attempt 1\): .*; next attempt in 5 s$/);

    // The statement ends; the next attempt seeds.
    await onPod(`${name}-0`, `KILL QUERY ${readerId}`);
    await longQuery;
    await reader.end();
    const c = await running(3, 180_000);
    expect(findCondition(c.status?.conditions, "Seeding")).toMatchObject({ status: "False", reason: "Complete" });
    const count = async (pod: string) => Number((await onPod(pod, "SELECT COUNT(*) AS n FROM app.w"))[0]?.n);
    expect(await count(`${name}-2`)).toBe(await count(`${name}-0`));
    expect(await count(`${name}-2`)).toBeGreaterThanOrEqual(written);
  }, 400_000);

  it("is not cut short by a rollout: the seeding replica is restarted only once its copy is done", async () => {
    // ~8 MB of rows over the operator's link to the new replica slowed to 1 MB/s: the copy runs for
    // about 8 s on any machine, long enough to start a rollout in the middle of it.
    await onPod(`${name}-0`, "CREATE DATABASE bulk", "CREATE TABLE bulk.t (id INT PRIMARY KEY, v VARCHAR(200))", "INSERT INTO bulk.t SELECT seq, REPEAT(MD5(seq), 6) FROM bulk.seq_1_to_40000");
    await purgeBinaryLogs();
    servers.slowLink(`${name}-3`, 1_000_000);
    const since = new Date().toISOString();
    await client.patch(MYC, ns, name, { spec: { replicas: 4 } });
    const copying = async () => {
      const seeding = findCondition((await client.get<MySQLCluster>(MYC, ns, name)).status?.conditions, "Seeding");
      return seeding?.reason === "Copying" && seeding.message?.includes(`${name}-3`) === true;
    };
    await waitFor(`${name}-3 being seeded`, async () => ((await copying()) ? true : undefined), 120_000, 100);
    // A change that rolls every server, while the copy runs: the new replica runs the old template and is not Ready.
    await client.patch(MYC, ns, name, { spec: { image: "mariadb:11.4.9" } });
    expect(await copying(), "the copy still runs after the rollout began").toBe(true);
    const c = await running(4, 400_000);
    servers.slowLink(`${name}-3`, 0);
    expect(c.status?.currentImage).toBe("mariadb:11.4.9");
    const all = (await eventsAbout(client, ns, { name })).filter((e) => (e.eventTime ?? "") >= since);
    const seeded = all.findIndex((e) => e.reason === "ReplicaSeeded" && (e.note ?? "").startsWith(`Seeded ${name}-3:`));
    const restartedFirst = all.findIndex((e) => e.reason === "PodRestarted" && (e.note ?? "").startsWith(`Restarting ${name}-3 `));
    expect(seeded, "the seed of the new replica completed").toBeGreaterThanOrEqual(0);
    expect(restartedFirst, `${name}-3 restarted for the rollout, after its seed`).toBeGreaterThan(seeded);
    expect(all.filter((e) => e.reason === "SeedFailed").map((e) => e.note)).toEqual([]);
    const count = async (pod: string) => Number((await onPod(pod, "SELECT COUNT(*) AS n FROM bulk.t"))[0]?.n);
    expect(await count(`${name}-3`)).toBe(40_000);
  }, 600_000);
});

describe("a seeded replica made the primary", () => {
  const relay = "relay";

  it("seeds the next new replica too, which then holds the rows only the copy brought", async () => {
    await client.create(MYC, clusterManifest(ns, relay, { replicas: 1, storage: { size: "1Gi" } }));
    await clusterRunning(client, suite, relay, 1);
    const rootPw = await rootPassword(client, ns, relay);
    // Rows no binary log holds any more once purged: only a copy brings them to a new replica.
    await runOnPod(servers, `${relay}-0`, rootPw, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1), (2), (3)");
    await purgeBinaryLogs(`${relay}-0`, rootPw);
    await client.patch(MYC, ns, relay, { spec: { replicas: 2 } });
    await clusterRunning(client, suite, relay, 2);
    // Replicated after the copy, into a database of its own: a replica built from relay-1's binary log alone
    // replicates it without an error and is caught up, though it lacks app.t.
    await runOnPod(servers, `${relay}-0`, rootPw, "CREATE DATABASE later", "CREATE TABLE later.t (id INT PRIMARY KEY)", "INSERT INTO later.t VALUES (1)");
    await client.patch(MYC, ns, relay, { spec: { primary: 1 } });
    await clusterRunning(client, suite, relay, 2, { check: (c) => c.status?.currentPrimary === `${relay}-1` });

    await client.patch(MYC, ns, relay, { spec: { replicas: 3 } });
    await clusterRunning(client, suite, relay, 3);
    // Before, relay-1's oldest binary log began with an empty Gtid_list ("nothing purged"): relay-2 only
    // replicated, was Ready, and had no app.t.
    const tables = await runOnPod(servers, `${relay}-2`, rootPw, "SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA IN ('app', 'later') ORDER BY 1");
    expect(tables.map((r) => r.t)).toEqual(["app.t", "later.t"]);
    expect(await runOnPod(servers, `${relay}-2`, rootPw, "SELECT id FROM app.t ORDER BY id")).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
    expect(await runOnPod(servers, `${relay}-2`, rootPw, "SELECT id FROM later.t")).toEqual([{ id: 1 }]);
    const seeded = (await eventsAbout(client, ns, { name: relay })).filter((e) => e.reason === "ReplicaSeeded").map((e) => e.note ?? "");
    expect(seeded.some((note) => note.startsWith(`Seeded ${relay}-2:`)), `ReplicaSeeded Events: ${seeded.join(" | ")}`).toBe(true);
  }, 400_000);
});
