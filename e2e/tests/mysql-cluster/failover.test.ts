// A lost primary replaced without losing an acknowledged write. The primary's
// server is killed and its pod marked not Ready (as a lost node's pods are)
// while an application writes through the primary Service every 10 ms: a
// replica is promoted and takes writes, and with SemiSync (the default) every
// write the old primary acknowledged is on it — over FAILOVER_TRIALS trials.
// The old primary, revived, rejoins as a replica and catches up, unless it
// holds transactions the new primary lacks (then it is named and kept out).
// The new primary waits for acknowledgements before it is made writable.
// A primary only the operator cannot reach (a partition between them: the
// replicas and the application still reach it) is not failed over on the
// operator's own word — the pod's readiness that its own readiness gate took
// away does not count — but is once its Node is not Ready, with every write it
// acknowledged on the new primary; healed, it rejoins read-only — and one its
// application kept writing to after the failover is made read-only the moment
// the operator reaches it again, and kept out with those writes.
// With Async replication a failover may lose acknowledged writes: it names
// them (everything the old primary committed beyond what the new one
// received), and that is exactly what the writer lost. A blip shorter than
// detectionSeconds fails nothing over; with the Manual policy nothing is
// promoted until spec.primary names a replica. A rollout stopped at its
// health gate does not hold a failover back, nor does one whose last
// restarted replica was promoted since, and a rollout restarts no replica
// while the primary does not answer. A primary whose pod is stuck Terminating
// is failed over as one that vanished; a promotion whose decision cannot be
// written leaves its candidate a replica, promoted once it can be.
import { setTimeout as sleep } from "node:timers/promises";
import mysql from "mysql2/promise";
import { builtin, findCondition, type KubeObject } from "@stateward/core";
import { MySQLClusterKind, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { eventsAbout, type KubeEvent } from "../../support/events.ts";
import { deleteNamespace, freshNamespace, testClient } from "../../support/kube.ts";
import { NotReadyNode } from "../../support/kwok-nodes.ts";
import type { LocalPodServers } from "../../support/mysql-pods.ts";
import { waitFor } from "../../support/wait.ts";
import { clusterManifest, clusterRunning, onPod, rootPassword, startClusterSuite, type ClusterSuite } from "../../support/mysql-cluster.ts";
import { refuseWrites, statusFieldUnchanged } from "../../support/refused-writes.ts";
import { loseNode, newPrimary, nodeBack, partitionFromOperator, prepareApp, rejoinedOrKeptOut, reseed, startPrimaryWriter, storedIds, WRITER } from "../../support/mysql-failover.ts";

/** Failovers in a row on one cluster: each about 10 s on the stand-ins (detection, promotion, the old primary's rejoin). */
const FAILOVER_TRIALS = 10;
/** The shortest detection the schema allows: the tests wait for it. */
const DETECTION_SECONDS = 5;

const env = inject("environment");
const client = testClient(env.kubeconfig);
const MYC = MySQLClusterKind.resource;
let suite: ClusterSuite;
let ns: string;
let servers: LocalPodServers;

async function get(name: string): Promise<MySQLCluster> {
  return client.get<MySQLCluster>(MYC, ns, name);
}

async function events(name: string, since = ""): Promise<KubeEvent[]> {
  return (await eventsAbout(client, ns, { name })).filter((e) => (e.eventTime ?? "") >= since);
}

/**
 * The FailedOver condition once it tells of the failover from `old`: status.lastFailover is
 * recorded with the promotion, the condition by the status report of the reconcile after it.
 */
async function failedOverCondition(name: string, old: string): Promise<{ message?: string }> {
  return waitFor(`the FailedOver condition about ${old}`, async () => {
    const cond = findCondition((await get(name)).status?.conditions, "FailedOver");
    return cond?.message?.startsWith(`${old} was lost`) ? cond : undefined;
  }, 30_000, 200);
}

/** The FailedOver Event since `since`: recorded just after the promotion, so waited for once the new primary is on record. */
async function failedOverEvent(name: string, since = ""): Promise<KubeEvent> {
  return waitFor("the FailedOver Event", async () => (await events(name, since)).find((e) => e.reason === "FailedOver"), 30_000, 200);
}

/** A Running 3-server cluster (`spec` added) with row 1 in app.t, written on its primary: the primary and the root password. */
async function runningWithOneRow(name: string, spec: Partial<MySQLCluster["spec"]>): Promise<{ old: string; password: string }> {
  await client.create(MYC, clusterManifest(ns, name, { replicas: 3, storage: { size: "1Gi" }, ...spec }));
  const old = (await clusterRunning(client, suite, name, 3)).status?.currentPrimary ?? "";
  const password = await rootPassword(client, ns, name);
  await onPod(servers, old, password, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1)");
  return { old, password };
}

/** Waits until `pod` is the primary on record and writable; it has runningWithOneRow's row. */
async function promotedWithTheRow(name: string, pod: string, password: string): Promise<void> {
  await waitFor(`${pod} primary and writable`, async () => {
    if ((await get(name)).status?.currentPrimary !== pod) return undefined;
    const [row] = await onPod(servers, pod, password, "SELECT @@read_only AS ro");
    return Number(row?.ro) === 0 ? true : undefined;
  }, 90_000, 300);
  expect([...(await storedIds(servers, pod, password, "app.t"))]).toEqual([1]);
}

/** The FailoverNeeded condition once it is True. */
async function failoverNeeded(name: string, timeoutMs = 90_000): Promise<{ reason?: string; message?: string }> {
  return waitFor("FailoverNeeded", async () => {
    const cond = findCondition((await get(name)).status?.conditions, "FailoverNeeded");
    return cond?.status === "True" ? cond : undefined;
  }, timeoutMs, 300);
}

/** The first of `pods` seen writable (each looked at every few milliseconds from now on), with its @@rpl_semi_sync_master_enabled then. */
async function firstWritable(pods: string[], password: string): Promise<{ pod: string; semiSync: number }> {
  const conns = await Promise.all(
    pods.map(async (pod) => {
      const server = await servers.server(pod);
      if (!server) throw new Error(`no server for ${pod}`);
      return { pod, conn: await mysql.createConnection({ host: server.host, port: server.port, user: "root", password }) };
    }),
  );
  try {
    const until = Date.now() + 60_000;
    while (Date.now() < until) {
      for (const { pod, conn } of conns) {
        const [rows] = (await conn.query("SELECT @@read_only AS ro, @@rpl_semi_sync_master_enabled AS m")) as unknown as [{ ro: number; m: number }[]];
        if (Number(rows[0]?.ro) === 0) return { pod, semiSync: Number(rows[0]?.m) };
      }
      await sleep(2);
    }
    throw new Error(`none of ${pods.join(", ")} writable within 60 s`);
  } finally {
    await Promise.all(conns.map(({ conn }) => conn.end().catch(() => undefined)));
  }
}

/** The sequence number of a MariaDB GTID ("0-1000-57" → 57n). */
function sequenceOf(gtid: string): bigint {
  return BigInt(gtid.split("-")[2] ?? "-1");
}

beforeAll(async () => {
  suite = await startClusterSuite(client, env, "failover");
  ({ ns, servers } = suite);
}, 120_000);

afterAll(async () => {
  await suite?.stop();
}, 120_000);

describe("a 3-server SemiSync cluster losing its primary", () => {
  const name = "fo";
  let password: string;

  it("is semi-synchronous without configuration, and every server but the primary is read-only", async () => {
    await client.create(MYC, clusterManifest(ns, name, { replicas: 3, storage: { size: "1Gi" }, failover: { detectionSeconds: DETECTION_SECONDS } }));
    const c = await clusterRunning(client, suite, name, 3, { check: (x) => findCondition(x.status?.conditions, "SemiSync")?.status === "True" });
    expect(findCondition(c.status?.conditions, "SemiSync")?.reason).toBe("Acknowledged");
    password = await rootPassword(client, ns, name);
    for (const pod of ["fo-0", "fo-1", "fo-2"]) {
      const [row] = await onPod(servers, pod, password, "SELECT @@read_only AS ro, @@rpl_semi_sync_master_enabled AS m");
      expect(Number(row?.ro), `${pod} read-only`).toBe(pod === c.status?.currentPrimary ? 0 : 1);
      expect(Number(row?.m), `${pod} waits for acknowledgements`).toBe(pod === c.status?.currentPrimary ? 1 : 0);
    }
    await prepareApp(client, servers, ns, name, password);
  }, 240_000);

  for (let trial = 1; trial <= FAILOVER_TRIALS; trial++) {
    it(`trial ${trial}/${FAILOVER_TRIALS}: promotes a replica, loses no acknowledged write, and the old primary rejoins`, async () => {
      const before = await clusterRunning(client, suite, name, 3, { check: (x) => findCondition(x.status?.conditions, "SemiSync")?.status === "True" });
      const old = before.status?.currentPrimary ?? "";
      const since = new Date().toISOString();
      // A table per trial: the writer numbers its writes from 1.
      const table = `app.writes_${trial}`;
      await onPod(servers, old, password, `CREATE TABLE ${table} (id INT PRIMARY KEY)`);
      const writer = startPrimaryWriter(servers, ns, name, table);
      // Writing before the loss: a few dozen acknowledged (how fast depends on the machine's load).
      await waitFor("writes acknowledged before the loss", () => Promise.resolve(writer.acknowledged.length >= 30 ? true : undefined), 60_000, 20);
      const lostAt = Date.now();
      await loseNode(servers, old);
      // Made writable only once it waits for acknowledgements: the replicas looked at from the loss on.
      const writable = firstWritable(["fo-0", "fo-1", "fo-2"].filter((p) => p !== old), password);
      writable.catch(() => undefined); // awaited below
      const promoted = await newPrimary(client, ns, name, old);
      const next = promoted.status?.currentPrimary ?? "";
      expect(await writable, `${next} waited for acknowledgements when it was made writable`).toEqual({ pod: next, semiSync: 1 });
      // Writable: the writer's next write through the primary Service is acknowledged.
      const count = writer.acknowledged.length;
      await waitFor("a write acknowledged by the new primary", () => Promise.resolve(writer.acknowledged.length > count ? true : undefined), 60_000, 20);
      const writableMs = Date.now() - lostAt;
      await sleep(1000);
      await writer.stop();

      const stored = await storedIds(servers, next, password, table);
      const lost = writer.acknowledged.filter((id) => !stored.has(id));
      expect(lost, `acknowledged writes missing on ${next} after losing ${old}`).toEqual([]);
      const failedOver = await failedOverEvent(name, since);
      expect(failedOver.note).toMatch(new RegExp(`^${next} is the primary \\(was ${old}, lost: `));
      const c = await get(name);
      expect(c.status?.lastFailover).toMatchObject({ from: old, to: next });
      expect((await failedOverCondition(name, old)).message).toContain(`promoted`);
      console.log(`failover trial ${trial}: ${old} -> ${next}, writable again ${writableMs} ms after the loss (detection ${DETECTION_SECONDS} s); ${writer.acknowledged.length} writes acknowledged, none lost`);

      // The node comes back: the old primary stays read-only and rejoins, unless it kept a write it never got acknowledged.
      await nodeBack(servers, old);
      const rejoined = await rejoinedOrKeptOut(client, ns, name, old);
      const [row] = await onPod(servers, old, password, "SELECT @@read_only AS ro");
      expect(Number(row?.ro), `${old} took writes on its own`).toBe(1);
      if (rejoined.errant === undefined) {
        const caughtUp = await storedIds(servers, old, password, table);
        expect(writer.acknowledged.filter((id) => !caughtUp.has(id))).toEqual([]);
      } else {
        // Its last write was on disk but never acknowledged (killed between the two): named, not rejoined; reseeded as a DBA would.
        console.log(`failover trial ${trial}: ${old} kept out: ${rejoined.errant}`);
        await reseed(servers, old);
      }
    }, 300_000);
  }
});

describe("an Async cluster losing its primary", () => {
  it("names what it lost: exactly the acknowledged writes the new primary lacks", async () => {
    const name = "asy";
    // allowDataLoss: the operator saw the primary ahead of every replica (their I/O threads stopped), so no candidate is safe.
    await client.create(MYC, clusterManifest(ns, name, { replicas: 3, storage: { size: "1Gi" }, replication: { mode: "Async" }, failover: { detectionSeconds: DETECTION_SECONDS, allowDataLoss: true } }));
    const c = await clusterRunning(client, suite, name, 3);
    expect(findCondition(c.status?.conditions, "SemiSync")?.reason).toBe("Async");
    const old = c.status?.currentPrimary ?? "";
    const replicas = ["asy-0", "asy-1", "asy-2"].filter((p) => p !== old);
    const password = await rootPassword(client, ns, name);
    await prepareApp(client, servers, ns, name, password);
    const table = "app.writes";
    await onPod(servers, old, password, `CREATE TABLE ${table} (id INT PRIMARY KEY)`);
    const writer = startPrimaryWriter(servers, ns, name, table, true);
    await waitFor("writes acknowledged and replicated", async () => {
      if (writer.acknowledged.length < 20) return undefined;
      const everywhere = await Promise.all(replicas.map(async (r) => (await storedIds(servers, r, password, table).catch(() => new Set<number>())).has(writer.acknowledged[9] ?? -1)));
      return everywhere.every(Boolean) ? true : undefined;
    }, 60_000, 100);
    // The replicas stop receiving: what the primary acknowledges from now on is on it alone (asynchronous: nothing waits).
    for (const r of replicas) await onPod(servers, r, password, "STOP SLAVE IO_THREAD");
    const cut = writer.acknowledged.length;
    await waitFor("writes acknowledged by the primary alone", () => Promise.resolve(writer.acknowledged.length >= cut + 20 ? true : undefined), 60_000, 20);
    const since = new Date().toISOString();
    await loseNode(servers, old);
    const promoted = await newPrimary(client, ns, name, old);
    const next = promoted.status?.currentPrimary ?? "";
    const count = writer.acknowledged.length;
    await waitFor("a write acknowledged by the new primary", () => Promise.resolve(writer.acknowledged.length > count ? true : undefined), 60_000, 20);
    await writer.stop();

    const stored = await storedIds(servers, next, password, table);
    const lost = writer.acknowledged.filter((id) => !stored.has(id));
    expect(lost.length, "acknowledged writes the replicas never received").toBeGreaterThan(0);
    // What the operator reports: everything the old primary committed beyond what the new one received.
    const dataLoss = (await get(name)).status?.lastFailover?.dataLoss ?? "";
    const reported = new RegExp(`^every transaction ${old} committed beyond (\\S+) \\(what ${next} received\\)`).exec(dataLoss);
    expect(reported, `status.lastFailover.dataLoss: ${dataLoss}`).not.toBeNull();
    // MariaDB: one position per domain (the writer's is 0), possibly listed twice (received, executed).
    const boundary = (reported?.[1] ?? "").split(",").filter((g) => g.startsWith("0-")).map(sequenceOf).reduce((a, b) => (a > b ? a : b), -1n);
    // ... which is exactly the writes the client saw acknowledged and the new primary lacks (by their GTIDs):
    // the old primary's (server id 1000 + ordinal) — the new primary's own writes continue the sequence too.
    const oldOrigin = `0-${1000 + Number(old.slice(-1))}-`;
    const beyond = writer.acknowledged.filter((id) => writer.gtids.get(id)?.startsWith(oldOrigin) && sequenceOf(writer.gtids.get(id) ?? "") > boundary);
    expect(lost.filter((id) => writer.gtids.has(id))).toEqual(beyond);
    expect(lost.filter((id) => !writer.gtids.has(id)).length, "lost writes whose GTID the writer could not ask for").toBeLessThanOrEqual(1);
    const failedOver = await failedOverEvent(name, since);
    expect(failedOver.note).toContain(`beyond ${reported?.[1]}`);
    expect((await failedOverCondition(name, old)).message).toContain(`lost: ${dataLoss}`);
    console.log(`async failover ${old} -> ${next}: ${writer.acknowledged.length} writes acknowledged, ${lost.length} lost, reported as ${dataLoss}`);

    // Back, the old primary holds them: named as errant, not rejoined.
    await nodeBack(servers, old);
    const errant = await waitFor("ErrantTransactions", async () => {
      const cond = findCondition((await get(name)).status?.conditions, "ErrantTransactions");
      return cond?.status === "True" ? cond : undefined;
    }, 90_000, 300);
    const last = /holds (\d+-\d+-\d+)/.exec(errant.message ?? "")?.[1] ?? "";
    expect(last.startsWith(oldOrigin), errant.message).toBe(true);
    expect(sequenceOf(last)).toBeGreaterThanOrEqual(sequenceOf(writer.gtids.get(lost.at(-1) ?? -1) ?? "0-0-0"));
  }, 300_000);
});

describe("a blip", () => {
  it("shorter than detectionSeconds fails nothing over", async () => {
    const name = "blip";
    await client.create(MYC, clusterManifest(ns, name, { replicas: 2, storage: { size: "1Gi" }, failover: { detectionSeconds: 20 } }));
    const c = await clusterRunning(client, suite, name, 2);
    const primary = c.status?.currentPrimary ?? "";
    const since = new Date().toISOString();
    // The server restarts (a crash and a quick restart); its pod stays Ready.
    await servers.kill(primary);
    await sleep(3000);
    await servers.revive(primary);
    await clusterRunning(client, suite, name, 2, { check: (x) => x.status?.currentPrimary === primary });
    await sleep(20_000);
    const after = await get(name);
    expect(after.status?.currentPrimary).toBe(primary);
    expect((await events(name, since)).filter((e) => e.reason === "FailedOver" || e.reason === "FailoverNeeded")).toEqual([]);
  }, 180_000);
});

describe("the Manual policy", () => {
  it("promotes nothing on its own; spec.primary promotes a replica with the old primary dead", async () => {
    const name = "man";
    const { old, password } = await runningWithOneRow(name, { failover: { policy: "Manual", detectionSeconds: DETECTION_SECONDS } });
    await loseNode(servers, old);
    const needed = await failoverNeeded(name);
    expect(needed.message).toMatch(/failover\.policy is Manual: set spec\.primary/);
    expect((await events(name)).some((e) => e.reason === "FailoverNeeded")).toBe(true);
    await sleep(3000);
    expect((await get(name)).status?.currentPrimary).toBe(old);

    const target = ["man-0", "man-1", "man-2"].find((p) => p !== old) ?? "";
    await client.patch(MYC, ns, name, { spec: { primary: Number(target.slice(-1)) } });
    await promotedWithTheRow(name, target, password);
  }, 240_000);
});

describe("a rollout stopped at its health gate", () => {
  it("does not hold back the failover of a primary lost meanwhile", async () => {
    const name = "rgate";
    const { old, password } = await runningWithOneRow(name, { updateStrategy: { healthGateSeconds: 10 }, failover: { detectionSeconds: DETECTION_SECONDS } });
    // A change that breaks a server: the rollout restarts the highest replica, which never comes back.
    await client.patch(MYC, ns, name, { spec: { image: "mariadb:broken" } });
    const stopped = await waitFor("HealthGateFailed", async () => {
      const cond = findCondition((await get(name)).status?.conditions, "Upgrading");
      return cond?.reason === "HealthGateFailed" ? cond : undefined;
    }, 120_000, 500);
    const broken = /^(\S+) did not become Ready/.exec(stopped.message ?? "")?.[1] ?? "";
    const survivor = ["rgate-0", "rgate-1", "rgate-2"].find((p) => p !== old && p !== broken) ?? "";
    expect(broken).not.toBe(old);

    // The primary lost while the rollout stays stopped: its loss is detected and said, not waited out.
    await loseNode(servers, old);
    const needed = await failoverNeeded(name, 60_000);
    // SemiSync: the broken replica does not answer, and may have acknowledged commits the survivor lacks.
    expect(needed.reason).toBe("NoSafeCandidate");
    expect(needed.message).toContain(`acknowledged by ${broken}`);
    expect(needed.message).toContain(`set failover.allowDataLoss: true to promote ${survivor} anyway`);

    await client.patch(MYC, ns, name, { spec: { failover: { allowDataLoss: true } } });
    const promoted = await newPrimary(client, ns, name, old);
    expect(promoted.status?.currentPrimary).toBe(survivor);
    await promotedWithTheRow(name, survivor, password);
  }, 300_000);
});

describe("a rollout while the primary does not answer", () => {
  it("restarts no replica (one of them is what a failover promotes) until a primary answers", async () => {
    const name = "rdown";
    // Manual: nothing is promoted on its own, so the rollout meets a primary that stays gone.
    const { old, password } = await runningWithOneRow(name, { failover: { policy: "Manual", detectionSeconds: DETECTION_SECONDS } });
    await loseNode(servers, old);
    await failoverNeeded(name, 60_000);
    const since = new Date().toISOString();
    // Its replicas are not Ready now (nothing to replicate from): to the rollout they would look broken.
    await client.patch(MYC, ns, name, { spec: { image: "mariadb:11.4.9" } });
    await waitFor("the new image's rollout under way", async () => ((await get(name)).status?.targetImage === "mariadb:11.4.9" ? true : undefined), 60_000, 300);
    await sleep(10_000);
    expect((await events(name, since)).filter((e) => e.reason === "PodRestarted").map((e) => e.note)).toEqual([]);
    expect(findCondition((await get(name)).status?.conditions, "Upgrading")?.message).toContain(`waiting for the primary ${old} to answer`);

    // A replica promoted (spec.primary, as the condition says): the rollout goes on from it, and nothing was lost.
    const target = ["rdown-0", "rdown-1", "rdown-2"].find((p) => p !== old) ?? "";
    await client.patch(MYC, ns, name, { spec: { primary: Number(target.slice(-1)) } });
    await newPrimary(client, ns, name, old);
    await waitFor("the rollout restarting pods again", async () => ((await events(name, since)).some((e) => e.reason === "PodRestarted") ? true : undefined), 60_000, 300);
    expect([...(await storedIds(servers, target, password, "app.t"))]).toEqual([1]);
  }, 300_000);
});

describe("a replica the rollout restarted, the primary by now", () => {
  it("is failed over when it is lost: its restart for the rollout is long over", async () => {
    const name = "rprom";
    const pods = ["rprom-0", "rprom-1", "rprom-2"];
    // Manual: each promotion is the test's choice, and a loss the operator sees is said in FailoverNeeded.
    const { old, password } = await runningWithOneRow(name, { failover: { policy: "Manual", detectionSeconds: DETECTION_SECONDS } });
    await client.patch(MYC, ns, name, { spec: { image: "mariadb:11.4.9" } });
    const restarted = await waitFor("the rollout's first restart", async () => (await get(name)).status?.rollout?.pod, 60_000, 100);
    // Stopped after that step (a paused rollout: the same as a backup gate waiting, or an operator
    // that is gone), and the primary lost: the restarted replica is promoted in its place.
    await client.patch(MYC, ns, name, { spec: { updateStrategy: { paused: true } } });
    await loseNode(servers, old);
    await failoverNeeded(name, 60_000);
    await client.patch(MYC, ns, name, { spec: { primary: Number(restarted.slice(-1)) } });
    await promotedWithTheRow(name, restarted, password);
    await nodeBack(servers, old);
    expect((await rejoinedOrKeptOut(client, ns, name, old)).errant).toBeUndefined();
    // Its step is over once it is back Ready on the new template, whatever it is now.
    await waitFor("the rollout's step over", async () => ((await get(name)).status?.rollout === undefined ? true : undefined), 30_000, 300);

    // The new primary lost: a loss like any other, not "the rollout restarts it".
    await loseNode(servers, restarted);
    const needed = await waitFor(`FailoverNeeded about ${restarted}`, async () => {
      const cond = findCondition((await get(name)).status?.conditions, "FailoverNeeded");
      return cond?.status === "True" && cond.message?.startsWith(`${restarted} has not answered`) ? cond : undefined;
    }, 60_000, 300);
    expect(needed.message).toMatch(/failover\.policy is Manual: set spec\.primary/);
    const survivor = pods.find((p) => p !== old && p !== restarted) ?? "";
    await client.patch(MYC, ns, name, { spec: { primary: Number(survivor.slice(-1)) } });
    await promotedWithTheRow(name, survivor, password);
  }, 300_000);
});

describe("a replica whose pod is stuck Terminating (evicted from a lost node)", () => {
  it("still counts as one that may have acknowledged the last commits: no promotion is called safe without it", async () => {
    const name = "evict";
    const { old } = await runningWithOneRow(name, { failover: { detectionSeconds: DETECTION_SECONDS } });
    const [survivor = "", evicted = ""] = ["evict-0", "evict-1", "evict-2"].filter((p) => p !== old);
    // Its node is gone: the server with it, and the pod, evicted, stays Terminating (no kubelet confirms it).
    await servers.kill(evicted);
    await client.patch(builtin.pod, ns, evicted, { metadata: { finalizers: ["stateward.io/test-node-lost"] } });
    await client.delete(builtin.pod, ns, evicted);
    try {
      await loseNode(servers, old);
      const decided = await waitFor("a promotion, or FailoverNeeded", async () => {
        const c = await get(name);
        return c.status?.currentPrimary !== old || findCondition(c.status?.conditions, "FailoverNeeded")?.status === "True" ? c : undefined;
      }, 60_000, 300);
      expect(decided.status?.currentPrimary, `promoted while ${evicted}, which may hold acknowledged commits, was not heard`).toBe(old);
      const needed = findCondition(decided.status?.conditions, "FailoverNeeded");
      expect(needed?.reason).toBe("NoSafeCandidate");
      expect(needed?.message).toContain(`acknowledged by ${evicted} (its pod is being deleted) only`);
      expect(needed?.message).toContain(`to promote ${survivor} anyway`);
    } finally {
      await client.patch(builtin.pod, ns, evicted, { metadata: { finalizers: null } }).catch(() => undefined);
    }
  }, 240_000);
});

describe("a primary whose pod is stuck Terminating (evicted from a lost node)", () => {
  it("is failed over all the same: its last position stays on record while it has no pod", async () => {
    const name = "gone";
    const { old, password } = await runningWithOneRow(name, { failover: { detectionSeconds: DETECTION_SECONDS } });
    // Its node is lost and the pod evicted within the detection time: it stays Terminating, as no kubelet confirms it.
    await loseNode(servers, old);
    await client.patch(builtin.pod, ns, old, { metadata: { finalizers: ["stateward.io/test-node-lost"] } });
    await client.delete(builtin.pod, ns, old);
    try {
      // Before, the first status written without its pod dropped its position, and no failover ever started.
      const promoted = await newPrimary(client, ns, name, old);
      await promotedWithTheRow(name, promoted.status?.currentPrimary ?? "", password);
      expect((await failedOverEvent(name)).note).toContain("its pod is gone");
    } finally {
      await client.patch(builtin.pod, ns, old, { metadata: { finalizers: null } }).catch(() => undefined);
    }
  }, 240_000);
});

describe("a promotion whose decision cannot be recorded", () => {
  it("leaves the candidate a replica, and promotes it once the decision can be written", async () => {
    const name = "unrec";
    const id = `${Date.now()}`;
    const label = "test.stateward.io/primary-change-refused";
    const policy = `mysqlcluster-primary-refused-${id}`;
    const manifest = clusterManifest(ns, name, { replicas: 2, storage: { size: "1Gi" }, failover: { detectionSeconds: DETECTION_SECONDS } });
    manifest.metadata.labels = { [label]: id };
    await client.create(MYC, manifest);
    const old = (await clusterRunning(client, suite, name, 2)).status?.currentPrimary ?? "";
    const candidate = [`${name}-0`, `${name}-1`].find((p) => p !== old) ?? "";
    const password = await rootPassword(client, ns, name);
    await onPod(servers, old, password, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1)");
    // Every status write that would change currentPrimary is refused, as if the operator stopped right before it.
    // In force once a probe cluster in a namespace no manager watches is refused such a write.
    const probeNs = await freshNamespace(client, "failover-probe");
    const probe = clusterManifest(probeNs, "probe", { replicas: 1, storage: { size: "1Gi" } });
    probe.metadata.labels = { [label]: id };
    await client.create(MYC, probe);
    const refused = await refuseWrites(
      client,
      { name: policy, resource: "mysqlclusters/status", allowedWhen: statusFieldUnchanged("currentPrimary"), message: "currentPrimary changes refused by the test", label: { key: label, value: id } },
      async () => client.updateStatus(MYC, { ...(await client.get<MySQLCluster>(MYC, probeNs, "probe")), status: { currentPrimary: `probe-${Date.now()}` } }),
    );
    await deleteNamespace(client, probeNs);
    try {
      await loseNode(servers, old);
      await waitFor("the promotion's decision refused", () => Promise.resolve(suite.logs.text().includes("currentPrimary changes refused by the test") ? true : undefined), 60_000, 300);
      await sleep(3_000);
      // Still a replica of the lost primary: before, its replication was reset first, and it was a candidate no more.
      const [replica] = await onPod(servers, candidate, password, "SHOW SLAVE STATUS");
      expect(replica?.Master_Host, `${candidate} still set up as a replica`).toBeTruthy();
      expect((await get(name)).status?.currentPrimary).toBe(old);
    } finally {
      await refused.lift();
    }
    await promotedWithTheRow(name, candidate, password);
  }, 240_000);
});

describe("an old primary with a transaction the new one lacks", () => {
  it("is named and not rejoined", async () => {
    const name = "err";
    await client.create(MYC, clusterManifest(ns, name, { replicas: 2, storage: { size: "1Gi" }, replication: { semiSyncTimeoutSeconds: 1 }, failover: { detectionSeconds: DETECTION_SECONDS, allowDataLoss: true } }));
    const c = await clusterRunning(client, suite, name, 2);
    const old = c.status?.currentPrimary ?? "";
    const replica = old === "err-0" ? "err-1" : "err-0";
    const password = await rootPassword(client, ns, name);
    await onPod(servers, old, password, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1)");
    await waitFor("row 1 on the replica", async () => ((await storedIds(servers, replica, password, "app.t").catch(() => new Set<number>())).has(1) ? true : undefined), 30_000, 200);
    // The replica stops receiving; the primary commits without it (after the 1 s semi-sync timeout), then its node is lost.
    await onPod(servers, replica, password, "STOP SLAVE IO_THREAD");
    await onPod(servers, old, password, "INSERT INTO app.t VALUES (2)");
    const [{ pos } = { pos: "" }] = (await onPod(servers, old, password, "SELECT @@gtid_binlog_state AS pos")) as { pos: string }[];
    await loseNode(servers, old);
    await waitFor(`${replica} promoted`, async () => ((await get(name)).status?.currentPrimary === replica ? true : undefined), 90_000, 300);
    const failedOver = await failedOverEvent(name);
    expect(failedOver.note).toMatch(/may lose|lost/);

    await nodeBack(servers, old);
    const errant = await waitFor("ErrantTransactions", async () => {
      const cond = findCondition((await get(name)).status?.conditions, "ErrantTransactions");
      return cond?.status === "True" ? cond : undefined;
    }, 90_000, 300);
    const last = pos.split(",").find((g) => g.startsWith(`0-${1000 + Number(old.slice(-1))}-`)) ?? "?";
    expect(errant.message).toContain(`${old} holds ${last}`);
    const member = (await get(name)).status?.members?.find((m) => m.name === old);
    expect(member?.ready).toBe(false);
    expect(member?.message).toMatch(/not rejoined/);
    expect([...(await storedIds(servers, old, password, "app.t"))].sort()).toEqual([1, 2]);
    const [row] = await onPod(servers, old, password, "SELECT @@read_only AS ro");
    expect(Number(row?.ro)).toBe(1);
  }, 240_000);
});

describe("a primary the operator cannot reach", () => {
  let lostNode: NotReadyNode | undefined;
  let cut: string | undefined;

  afterAll(async () => {
    // As it was for the suites after this one: the node Ready (KWOK manages it again), the partition healed.
    await lostNode?.restore();
    if (cut) servers.partition(cut, false);
  }, 60_000);

  it("is not failed over on the operator's word alone, and is once its Node is not Ready, losing no acknowledged write", async () => {
    const name = "par";
    await client.create(MYC, clusterManifest(ns, name, { replicas: 3, storage: { size: "1Gi" }, failover: { detectionSeconds: DETECTION_SECONDS } }));
    const c = await clusterRunning(client, suite, name, 3, { check: (x) => findCondition(x.status?.conditions, "SemiSync")?.status === "True" });
    const old = c.status?.currentPrimary ?? "";
    const password = await rootPassword(client, ns, name);
    await prepareApp(client, servers, ns, name, password);
    const table = "app.writes";
    await onPod(servers, old, password, `CREATE TABLE ${table} (id INT PRIMARY KEY)`);
    const writer = startPrimaryWriter(servers, ns, name, table);
    await waitFor("writes acknowledged before the partition", () => Promise.resolve(writer.acknowledged.length >= 30 ? true : undefined), 60_000, 20);

    // The operator cannot reach the primary; the replicas and the application still do.
    const since = new Date().toISOString();
    const cutAt = Date.now();
    await partitionFromOperator(servers, old, password);
    cut = old;
    // Noticed at its next reconcile: at the latest the steady one, 30 s on.
    await waitFor("the operator not reaching the primary", async () => ((await get(name)).status?.members?.find((m) => m.name === old)?.ready === false ? true : undefined), 60_000, 200);
    const noticedMs = Date.now() - cutAt;
    // A kubelet then turns the pod not Ready for the readiness gate the operator clears (KWOK does not): the operator's own view.
    await servers.setPodReady(old, false, "ReadinessGatesNotReady");
    await sleep(3 * DETECTION_SECONDS * 1000);
    expect((await get(name)).status?.currentPrimary, "failed over while the primary was only unreachable from the operator").toBe(old);
    expect((await events(name, since)).filter((e) => e.reason === "FailedOver" || e.reason === "FailoverNeeded")).toEqual([]);
    // Held back by the rule, not by the operator still reaching it: past detectionSeconds with no second signal.
    expect(suite.logs.lines().some((l) => JSON.stringify(l).includes(`${old} has not answered for`) && JSON.stringify(l).includes("nothing else says it is gone"))).toBe(true);
    // Still the primary for everyone else: writable, its commits acknowledged by a replica still connected to it.
    const count = writer.acknowledged.length;
    await waitFor("writes acknowledged during the partition", () => Promise.resolve(writer.acknowledged.length >= count + 20 ? true : undefined), 30_000, 20);
    expect(writer.failures.filter((t) => t >= cutAt), "writes refused during the partition").toEqual([]);
    const semiSync = Object.fromEntries(
      (await onPod(servers, old, password, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Rpl_semi_sync_master_status', 'Rpl_semi_sync_master_clients')")).map((r) => [String(r.Variable_name), String(r.Value)]),
    );
    expect(semiSync).toMatchObject({ Rpl_semi_sync_master_status: "ON" });
    expect(Number(semiSync.Rpl_semi_sync_master_clients), "replicas connected to the partitioned primary").toBeGreaterThanOrEqual(1);
    const heldMs = Date.now() - cutAt;
    // The application stops before the node is lost: the old primary stays alive, and the operator, cut off from it,
    // cannot make it read-only — what it acknowledged after the promotion would not be on the new primary.
    await writer.stop();

    // Its node turns not Ready (its kubelet says so): a second signal, and the only one (the replicas stay connected).
    const nodeName = (await client.get<KubeObject & { spec: { nodeName?: string } }>(builtin.pod, ns, old)).spec.nodeName ?? "";
    expect(nodeName).not.toBe("");
    const notReadyAt = Date.now();
    lostNode = await NotReadyNode.take(client, nodeName);
    const promoted = await newPrimary(client, ns, name, old);
    const failedOverMs = Date.now() - notReadyAt;
    const next = promoted.status?.currentPrimary ?? "";
    expect(promoted.status?.lastFailover).toMatchObject({ from: old, to: next });
    const failedOver = await failedOverEvent(name, since);
    expect(failedOver.note).toContain(` and its node ${nodeName} is not Ready (False, KubeletNotReady)); detected `);
    const stored = await storedIds(servers, next, password, table);
    expect(writer.acknowledged.filter((id) => !stored.has(id)), `acknowledged writes missing on ${next}`).toEqual([]);
    const [unfenced] = await onPod(servers, old, password, "SELECT @@read_only AS ro");
    console.log(
      `partition: ${old} cut off from the operator for ${Math.round(heldMs / 1000)} s (noticed after ${Math.round(noticedMs / 1000)} s, detection ${DETECTION_SECONDS} s) without a failover; ` +
        `its node not Ready: ${next} on record ${failedOverMs} ms later; ${writer.acknowledged.length} writes acknowledged, none lost; ` +
        `${old} meanwhile read_only=${Number(unfenced?.ro)} (the operator cannot reach it)`,
    );

    // Healed: the node Ready, the operator reaches the old primary again: it rejoins as a read-only replica with every write.
    await lostNode.restore();
    lostNode = undefined;
    servers.partition(old, false);
    cut = undefined;
    await servers.setPodReady(old, true);
    const rejoined = await rejoinedOrKeptOut(client, ns, name, old);
    expect(rejoined.errant, "the old primary kept out").toBeUndefined();
    const [row] = await onPod(servers, old, password, "SELECT @@read_only AS ro");
    expect(Number(row?.ro), `${old} writable after the failover`).toBe(1);
    const caughtUp = await storedIds(servers, old, password, table);
    expect(writer.acknowledged.filter((id) => !caughtUp.has(id))).toEqual([]);
  }, 240_000);
});

describe("an old primary its application still writes to after the failover", () => {
  let lostNode: NotReadyNode | undefined;
  let cut: string | undefined;
  let app: mysql.Connection | undefined;

  afterAll(async () => {
    await app?.end().catch(() => undefined);
    await lostNode?.restore();
    if (cut) servers.partition(cut, false);
  }, 60_000);

  it("is made read-only as soon as the operator reaches it again, and kept out with the writes it took", async () => {
    const name = "fen";
    await client.create(MYC, clusterManifest(ns, name, { replicas: 3, storage: { size: "1Gi" }, replication: { semiSyncTimeoutSeconds: 1 }, failover: { detectionSeconds: DETECTION_SECONDS } }));
    const c = await clusterRunning(client, suite, name, 3, { check: (x) => findCondition(x.status?.conditions, "SemiSync")?.status === "True" });
    const old = c.status?.currentPrimary ?? "";
    const password = await rootPassword(client, ns, name);
    await prepareApp(client, servers, ns, name, password);
    await onPod(servers, old, password, "CREATE TABLE app.t (id INT PRIMARY KEY)");
    // The application's session on the primary, opened before the partition (it is not the operator's: it stays).
    const server = await waitFor(`server of ${old}`, () => servers.server(old), 60_000, 200);
    app = await mysql.createConnection({ host: server.host, port: server.port, user: WRITER.user, password: WRITER.password });
    await app.query("INSERT INTO app.t VALUES (1)");

    // Cut off from the operator, its node not Ready: failed over while it still runs.
    const since = new Date().toISOString();
    await partitionFromOperator(servers, old, password);
    cut = old;
    await servers.setPodReady(old, false, "ReadinessGatesNotReady");
    const nodeName = (await client.get<KubeObject & { spec: { nodeName?: string } }>(builtin.pod, ns, old)).spec.nodeName ?? "";
    lostNode = await NotReadyNode.take(client, nodeName);
    const next = (await newPrimary(client, ns, name, old)).status?.currentPrimary ?? "";
    // Nobody told the application: its write still goes to the old primary, which takes it (its replicas left;
    // semi-sync gives up after 1 s). Nothing the operator can do while it cannot reach the server.
    await app.query("INSERT INTO app.t VALUES (2)");
    const [taken] = await onPod(servers, old, password, "SELECT @@read_only AS ro, (SELECT COUNT(*) FROM app.t) AS n");
    expect({ ro: Number(taken?.ro), n: Number(taken?.n) }).toEqual({ ro: 0, n: 2 });

    // Healed: the operator reaches it again. It holds a write the new primary lacks (kept out), and from then on
    // the application's writes are refused — not taken by a server whose data no longer counts.
    await lostNode.restore();
    lostNode = undefined;
    servers.partition(old, false);
    cut = undefined;
    await servers.setPodReady(old, true);
    const kept = await rejoinedOrKeptOut(client, ns, name, old);
    expect(kept.errant, "the old primary's write after the failover is errant").toContain(old);
    const [row] = await onPod(servers, old, password, "SELECT @@read_only AS ro");
    expect(Number(row?.ro), `${old} writable while ${next} is the primary`).toBe(1);
    await expect(app.query("INSERT INTO app.t VALUES (3)")).rejects.toThrow(/read-only/);
    const fenced = await waitFor("the Fenced Event", async () => (await events(name, since)).find((e) => e.reason === "Fenced"), 30_000, 200);
    expect(fenced.type).toBe("Warning");
    expect(fenced.note).toContain(`${old} was writable but ${next} is the primary`);
    expect([...(await storedIds(servers, next, password, "app.t"))]).toEqual([1]);
  }, 240_000);
});
