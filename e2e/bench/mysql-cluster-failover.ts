// What the mysql-cluster benchmark measures of durability and failover, on one
// 3-server cluster of stand-in servers (KWOK pods with a local mariadbd each,
// e2e/support/mysql-pods.ts) and an in-process manager:
//
//  1. commit latency through the primary Service, SemiSync against Async:
//     single-row autocommit INSERTs by an application account, in alternating
//     rounds of each mode so a change in the machine's load hits both alike;
//  2. per mode, FAILOVER_TRIALS failovers: the primary's server killed and its
//     pod not Ready (a lost node) while an application writes every 10 ms
//     through the primary Service; the time from the loss to the first write
//     the new primary acknowledges, and the acknowledged writes it lacks;
//  3. per mode, SWITCHOVER_TRIALS planned switchovers (spec.primary) under the
//     same writes: the longest time between two acknowledged writes (the
//     writes refused or waiting meanwhile), and the acknowledged writes lost.
//
// Failover includes detection: failover.detectionSeconds (the schema's
// minimum, DETECTION_SECONDS) before the operator acts at all; "promotion" is
// the time to writable minus that.
import { loadavg } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import mysql from "mysql2/promise";
import { findCondition, type KubeClient } from "@stateward/core";
import { MySQLClusterKind, primaryHost, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import type { EnvironmentInfo } from "../harness/index.ts";
import type { AcknowledgedWriter } from "../support/acknowledged-writes.ts";
import { clusterManifest, clusterRunning, onPod, rootPassword, startClusterSuite, type ClusterSuite } from "../support/mysql-cluster.ts";
import { WRITER, loseNode, newPrimary, nodeBack, prepareApp, rejoinedOrKeptOut, reseed, startPrimaryWriter, storedIds } from "../support/mysql-failover.ts";
import { waitFor } from "../support/wait.ts";
import type { BenchRow } from "./benchmark.ts";

const FAILOVER_TRIALS = 5;
const SWITCHOVER_TRIALS = 5;
/** Commits timed per mode, in LATENCY_ROUNDS rounds alternating with the other mode. */
const LATENCY_COMMITS = 2_000;
const LATENCY_ROUNDS = 2;
/** Untimed commits first in each round: the connection and the table warm. */
const WARM_UP_COMMITS = 50;
/** The shortest detection the schema allows. */
const DETECTION_SECONDS = 5;
/** Acknowledged writes before the primary is lost or switched: the writer is in its stride. */
const WRITES_BEFORE = 30;
const MODES = ["SemiSync", "Async"] as const;
type Mode = (typeof MODES)[number];
const NAME = "bench";
const SERVERS = 3;

export interface FailoverTrial {
  from: string;
  to: string;
  /** From the kill to the first write the new primary acknowledged. */
  writableMs: number;
  acknowledged: number;
  lost: number;
  refused: number;
  /** The old primary, back, held a transaction the new one lacks: kept out, reseeded. */
  keptOut: boolean;
  detectedAt?: string;
  promotedAt?: string;
}

export interface SwitchoverTrial {
  from: string;
  to: string;
  /** The longest time between two acknowledged writes around the switchover. */
  unavailableMs: number;
  acknowledged: number;
  lost: number;
  refused: number;
}

export interface ModeFigures {
  latencyMs: { p50: number; p99: number; mean: number; commits: number };
  failovers: FailoverTrial[];
  switchovers: SwitchoverTrial[];
  /** The 1-minute load average when the mode's failovers started and when its switchovers ended. */
  load: number[];
}

export interface FailoverFigures {
  detectionSeconds: number;
  /** The 1-minute load average before and after the latency rounds. */
  latencyLoad: number[];
  modes: Record<Mode, ModeFigures>;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

const median = (xs: number[]) => quantile([...xs].sort((a, b) => a - b), 0.5);
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

class Bench {
  private readonly client: KubeClient;
  private readonly suite: ClusterSuite;
  private password = "";
  private tables = 0;

  constructor(client: KubeClient, suite: ClusterSuite) {
    this.client = client;
    this.suite = suite;
  }

  private async get(): Promise<MySQLCluster> {
    return this.client.get<MySQLCluster>(MySQLClusterKind.resource, this.suite.ns, NAME);
  }

  /** Running with every server Ready, and the primary in `mode`: semi-sync acknowledged, or off. */
  private async steady(mode: Mode): Promise<MySQLCluster> {
    const semiSync = (c: MySQLCluster) => findCondition(c.status?.conditions, "SemiSync");
    const check = (c: MySQLCluster) => (mode === "SemiSync" ? semiSync(c)?.status === "True" : semiSync(c)?.reason === "Async");
    return clusterRunning(this.client, this.suite, NAME, SERVERS, { check, timeoutMs: 300_000 });
  }

  /** A new table on the primary, for one trial or round: writers number their rows from 1. */
  private async newTable(primary: string): Promise<string> {
    const table = `app.t${++this.tables}`;
    await onPod(this.suite.servers, primary, this.password, `CREATE TABLE ${table} (id INT PRIMARY KEY)`);
    return table;
  }

  private async writing(primary: string): Promise<{ writer: AcknowledgedWriter; table: string }> {
    const table = await this.newTable(primary);
    const writer = startPrimaryWriter(this.suite.servers, this.suite.ns, NAME, table);
    await waitFor("writes acknowledged", () => (writer.acknowledged.length >= WRITES_BEFORE ? true : undefined), 60_000, 20);
    return { writer, table };
  }

  /** Stops the writer a second after `afterCount` acknowledged writes were exceeded; the acknowledged writes `pod` lacks. */
  private async finish(writer: AcknowledgedWriter, afterCount: number, pod: string, table: string): Promise<number> {
    await waitFor("a write acknowledged by the new primary", () => (writer.acknowledged.length > afterCount ? true : undefined), 60_000, 5);
    await sleep(1000);
    await writer.stop();
    const stored = await storedIds(this.suite.servers, pod, this.password, table);
    return writer.acknowledged.filter((id) => !stored.has(id)).length;
  }

  async create(): Promise<void> {
    await this.client.create(
      MySQLClusterKind.resource,
      clusterManifest(this.suite.ns, NAME, { replicas: SERVERS, storage: { size: "1Gi" }, failover: { detectionSeconds: DETECTION_SECONDS } }),
    );
    await this.steady("SemiSync");
    this.password = await rootPassword(this.client, this.suite.ns, NAME);
    await prepareApp(this.client, this.suite.servers, this.suite.ns, NAME, this.password);
  }

  /** Sets replication.mode and waits until the primary runs in it. */
  async setMode(mode: Mode): Promise<void> {
    await this.client.patch(MySQLClusterKind.resource, this.suite.ns, NAME, { spec: { replication: { mode } } });
    const c = await this.steady(mode);
    await waitFor(`the primary's semi-sync side ${mode === "SemiSync" ? "on" : "off"}`, async () => {
      const [row] = await onPod(this.suite.servers, c.status?.currentPrimary ?? "", this.password, "SELECT @@GLOBAL.rpl_semi_sync_master_enabled AS on_");
      return Number(row?.on_) === (mode === "SemiSync" ? 1 : 0) ? true : undefined;
    }, 60_000, 200);
  }

  /** `count` single-row autocommit INSERTs, one after another, through the primary Service; each one's time. */
  async commitTimes(count: number): Promise<number[]> {
    const primary = (await this.get()).status?.currentPrimary ?? "";
    const table = await this.newTable(primary);
    const conn = await mysql.createConnection({ ...(await this.suite.servers.resolve({ host: primaryHost(NAME, this.suite.ns), port: 3306 })), ...WRITER });
    try {
      const times: number[] = [];
      for (let id = 1; id <= WARM_UP_COMMITS + count; id++) {
        const t0 = performance.now();
        await conn.query(`INSERT INTO ${table} (id) VALUES (?)`, [id]);
        if (id > WARM_UP_COMMITS) times.push(performance.now() - t0);
      }
      return times;
    } finally {
      await conn.end();
    }
  }

  async failover(mode: Mode): Promise<FailoverTrial> {
    const old = (await this.steady(mode)).status?.currentPrimary ?? "";
    const { writer, table } = await this.writing(old);
    const lostAt = Date.now();
    await loseNode(this.suite.servers, old);
    // Whatever is acknowledged from here on, the new primary acknowledged: the old one's server is dead.
    const count = writer.acknowledged.length;
    const promoted = await newPrimary(this.client, this.suite.ns, NAME, old);
    const to = promoted.status?.currentPrimary ?? "";
    const lost = await this.finish(writer, count, to, table);
    const writableMs = (writer.acknowledgedAt[count] ?? Number.NaN) - lostAt;
    const refused = writer.failures.filter((t) => t >= lostAt).length;
    await nodeBack(this.suite.servers, old);
    const { errant } = await rejoinedOrKeptOut(this.client, this.suite.ns, NAME, old);
    if (errant !== undefined) await reseed(this.suite.servers, old);
    const record = promoted.status?.lastFailover;
    return { from: old, to, writableMs, acknowledged: writer.acknowledged.length, lost, refused, keptOut: errant !== undefined, detectedAt: record?.detectedAt, promotedAt: record?.promotedAt };
  }

  async switchover(mode: Mode): Promise<SwitchoverTrial> {
    const c = await this.steady(mode);
    const old = c.status?.currentPrimary ?? "";
    const to = c.status?.members?.find((m) => m.role === "replica" && m.ready)?.name ?? "";
    const { writer, table } = await this.writing(old);
    const askedAt = Date.now();
    const first = writer.acknowledged.length - 1;
    await this.client.patch(MySQLClusterKind.resource, this.suite.ns, NAME, { spec: { primary: Number(to.slice(NAME.length + 1)) } });
    await waitFor(`${to} the primary`, async () => ((await this.get()).status?.currentPrimary === to ? true : undefined), 120_000, 100);
    const lost = await this.finish(writer, writer.acknowledged.length, to, table);
    const at = writer.acknowledgedAt.slice(first);
    const unavailableMs = Math.max(...at.slice(1).map((t, i) => t - (at[i] ?? t)));
    return { from: old, to, unavailableMs, acknowledged: writer.acknowledged.length, lost, refused: writer.failures.filter((t) => t >= askedAt).length };
  }

  /** spec.primary unset again: a failover is the operator's choice, not bound to an ordinal. */
  async releasePrimary(): Promise<void> {
    await this.client.patch(MySQLClusterKind.resource, this.suite.ns, NAME, { spec: { primary: null } });
  }
}

export async function measureFailover(client: KubeClient, env: EnvironmentInfo, log: (line: string) => void): Promise<FailoverFigures> {
  const suite = await startClusterSuite(client, env, "bench-failover");
  try {
    const bench = new Bench(client, suite);
    await bench.create();
    log(`cluster of ${SERVERS} Running; commit latency, ${LATENCY_COMMITS} commits per mode in ${LATENCY_ROUNDS} rounds each ...`);
    const times: Record<Mode, number[]> = { SemiSync: [], Async: [] };
    const latencyLoad = [loadavg()[0] ?? 0];
    for (let round = 0; round < LATENCY_ROUNDS; round++) {
      for (const mode of MODES) {
        await bench.setMode(mode);
        times[mode].push(...(await bench.commitTimes(LATENCY_COMMITS / LATENCY_ROUNDS)));
      }
    }
    latencyLoad.push(loadavg()[0] ?? 0);
    log(`load average (1 min) during the latency rounds: ${latencyLoad.map((l) => l.toFixed(1)).join(" -> ")}`);
    const modes = {} as Record<Mode, ModeFigures>;
    for (const mode of MODES) {
      await bench.setMode(mode);
      const load = [loadavg()[0] ?? 0];
      const failovers: FailoverTrial[] = [];
      for (let i = 1; i <= FAILOVER_TRIALS; i++) {
        const t = await bench.failover(mode);
        failovers.push(t);
        log(`${mode} failover ${i}/${FAILOVER_TRIALS}: ${t.from} -> ${t.to}, writable after ${t.writableMs} ms, ${t.acknowledged} acknowledged, ${t.lost} lost${t.keptOut ? `; ${t.from} kept out (errant), reseeded` : ""}`);
      }
      const switchovers: SwitchoverTrial[] = [];
      for (let i = 1; i <= SWITCHOVER_TRIALS; i++) {
        const t = await bench.switchover(mode);
        switchovers.push(t);
        log(`${mode} switchover ${i}/${SWITCHOVER_TRIALS}: ${t.from} -> ${t.to}, longest without an acknowledged write ${t.unavailableMs} ms, ${t.refused} refused, ${t.acknowledged} acknowledged, ${t.lost} lost`);
      }
      await bench.releasePrimary();
      load.push(loadavg()[0] ?? 0);
      log(`load average (1 min) during the ${mode} trials: ${load.map((l) => l.toFixed(1)).join(" -> ")}`);
      const sorted = [...times[mode]].sort((a, b) => a - b);
      modes[mode] = { latencyMs: { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), mean: sum(sorted) / sorted.length, commits: sorted.length }, failovers, switchovers, load };
    }
    return { detectionSeconds: DETECTION_SECONDS, latencyLoad, modes };
  } finally {
    await suite.stop();
  }
}

/** The table's rows, and the broken promises: an acknowledged write lost where none may be. */
export function failoverRows(f: FailoverFigures): { rows: BenchRow[]; failures: string[] } {
  const rows: BenchRow[] = [];
  const failures: string[] = [];
  const detectionMs = f.detectionSeconds * 1000;
  for (const mode of MODES) {
    const m = f.modes[mode];
    const writable = m.failovers.map((t) => t.writableMs);
    const unavailable = m.switchovers.map((t) => t.unavailableMs);
    const n = `${m.failovers.length} trials`;
    rows.push(
      { metric: `${mode} failover: primary loss to writable, median (${n})`, value: median(writable), unit: "ms", reference: median(unavailable), note: `planned switchover under the same writes: longest time without an acknowledged write, median of ${m.switchovers.length}` },
      { metric: `${mode} failover: primary loss to writable, min`, value: Math.min(...writable), unit: "ms" },
      { metric: `${mode} failover: primary loss to writable, max`, value: Math.max(...writable), unit: "ms" },
      { metric: `${mode} failover: promotion (writable - detectionSeconds), median`, value: median(writable) - detectionMs, unit: "ms", reference: detectionMs, note: `detectionSeconds ${f.detectionSeconds} (the minimum), part of every failover` },
      { metric: `${mode} failover: acknowledged writes lost (${n})`, value: sum(m.failovers.map((t) => t.lost)), unit: "writes", reference: sum(m.failovers.map((t) => t.acknowledged)), note: "writes acknowledged in those trials" },
      { metric: `${mode} switchover: longest time without an acknowledged write, max`, value: Math.max(...unavailable), unit: "ms" },
      { metric: `${mode} switchover: writes refused (${m.switchovers.length} trials)`, value: sum(m.switchovers.map((t) => t.refused)), unit: "writes" },
      { metric: `${mode} switchover: acknowledged writes lost`, value: sum(m.switchovers.map((t) => t.lost)), unit: "writes", reference: sum(m.switchovers.map((t) => t.acknowledged)), note: "writes acknowledged in those trials" },
    );
    for (const t of m.switchovers) if (t.lost > 0) failures.push(`${mode} switchover ${t.from} -> ${t.to} lost ${t.lost} acknowledged writes`);
    if (mode === "SemiSync") for (const t of m.failovers) if (t.lost > 0) failures.push(`SemiSync failover ${t.from} -> ${t.to} lost ${t.lost} acknowledged writes`);
  }
  const semi = f.modes.SemiSync.latencyMs;
  const async = f.modes.Async.latencyMs;
  const note = `Async, the same cluster; ${semi.commits} single-row autocommit INSERTs per mode through the primary Service`;
  rows.push(
    { metric: "commit latency, SemiSync, p50", value: semi.p50, unit: "ms", reference: async.p50, note },
    { metric: "commit latency, SemiSync, p99", value: semi.p99, unit: "ms", reference: async.p99, note },
    { metric: "commit latency, Async, p50", value: async.p50, unit: "ms" },
    { metric: "commit latency, Async, p99", value: async.p99, unit: "ms" },
  );
  return { rows, failures };
}
