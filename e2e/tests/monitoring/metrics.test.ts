// The metrics the chart's alerts and dashboard read, scraped from a real manager's /metrics
// (README: Monitoring): a manager running every operator, with a MySQLBackupSchedule, a
// MySQLBackup and a MySQLRestore against the environment's MariaDB and S3, a 2-server
// MySQLCluster on local servers, and a DatabaseUser that fails. Every metric of
// e2e/support/monitoring-metrics.ts is exported, under exactly its labels; the series of the
// promtool unit tests (hack/monitoring/rules.test.yaml) are named and labelled as exported;
// the healthy state scraped here, fed to promtool as it is, raises no alert; and a deleted
// object's series go with it.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import mysql from "mysql2/promise";
import { Manager, captureLogs, type KubeObject } from "@stateward/core";
import { DatabaseUserKind, databaseUserOperator } from "@stateward/operator-database-user";
import { MySQLBackupKind, MySQLBackupScheduleKind, MySQLRestoreKind, createMySQLBackupOperator } from "@stateward/operator-mysql-backup";
import { MySQLClusterKind, createMySQLClusterOperator } from "@stateward/operator-mysql-cluster";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { repoRoot, tools } from "../../harness/index.ts";
import { createBackupPrerequisites } from "../../support/backup-setup.ts";
import { deleteNamespace, freshNamespace, kubeConfigFrom, testClient } from "../../support/kube.ts";
import { LocalPodServers } from "../../support/mysql-pods.ts";
import { waitFor } from "../../support/wait.ts";
import { exportedMetrics, scrapeSeries, seriesNames } from "../../support/monitoring-metrics.ts";
import { clusterManifest, clusterRunning } from "../../support/mysql-cluster.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
let ns: string;
let servers: LocalPodServers;
let manager: Manager;
const suffix = randomBytes(3).toString("hex");
/** The database the backups dump and the restore rewrites, on the environment's MariaDB. */
const db = `monitoring_${suffix}`;
const root = { host: env.mysql.host, port: env.mysql.port, user: env.mysql.user, password: env.mysql.password };

/** One scraped sample: its metric name and labels. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

async function scrape(): Promise<Sample[]> {
  const address = manager.metricsAddress;
  if (!address) throw new Error("the manager serves no /metrics");
  const res = await fetch(`http://127.0.0.1:${address.port}/metrics`);
  expect(res.status).toBe(200);
  const samples: Sample[] = [];
  for (const line of (await res.text()).split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m?.[1]) continue;
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k ?? ""] = v ?? "";
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

const labelNames = (labels: Record<string, string>, ignore: string[] = []) => Object.keys(labels).filter((k) => !ignore.includes(k)).sort().join(",");

/** Which of the catalogue's series the scrape lacks, or has under other labels. */
function missing(samples: Sample[]): string[] {
  const problems: string[] = [];
  for (const metric of exportedMetrics) {
    for (const series of seriesNames(metric)) {
      const found = samples.filter((s) => s.name === series && (metric.name.startsWith("controller_runtime") || metric.name === "stateward_manager_ready" || s.labels.namespace === ns));
      const want = [...metric.labels, ...(series.endsWith("_bucket") ? ["le"] : [])].sort().join(",");
      if (found.length === 0) problems.push(`${series}: not exported`);
      else if (found.some((s) => labelNames(s.labels) !== want)) problems.push(`${series}: labels ${labelNames(found[0]!.labels)}, want ${want}`);
    }
  }
  return problems;
}

beforeAll(async () => {
  ns = await freshNamespace(client, "monitoring");
  servers = new LocalPodServers(client, join(env.dir, "monitoring"), ns).start();
  manager = new Manager({ kubeConfig: kubeConfigFrom(env.kubeconfig), namespaces: [ns], logger: captureLogs().logger, gracefulShutdownMs: 10_000, metricsAddr: "127.0.0.1:0" })
    .load(createMySQLClusterOperator({ addresses: servers }), databaseUserOperator, createMySQLBackupOperator());
  await manager.start();
  const conn = await mysql.createConnection(root);
  for (const sql of [`CREATE DATABASE ${db}`, `CREATE TABLE ${db}.t (id INT PRIMARY KEY, v VARCHAR(20))`, `INSERT INTO ${db}.t VALUES (1, 'a'), (2, 'b')`]) await conn.query(sql);
  await conn.end();
  await createBackupPrerequisites(client, ns, env);
}, 120_000);

afterAll(async () => {
  await manager?.stop();
  await servers?.stop();
  const conn = await mysql.createConnection(root);
  await conn.query(`DROP DATABASE IF EXISTS ${db}`);
  await conn.end();
  if (ns) await deleteNamespace(client, ns);
}, 120_000);

describe("the metrics the alerts and the dashboard read", () => {
  it("are exported by a manager running a schedule, a backup, a restore, a cluster and a failing DatabaseUser", async () => {
    const storage = { s3: { bucket: env.s3.bucket, prefix: `monitoring-${suffix}`, endpoint: env.s3.endpoint, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } };
    const backupSpec = { instanceRef: { name: "db" }, databases: [db], deletionPolicy: "Delete", storage };
    await client.create(MySQLBackupScheduleKind.resource, {
      apiVersion: MySQLBackupScheduleKind.apiVersion, kind: MySQLBackupScheduleKind.kind, metadata: { name: "often", namespace: ns },
      spec: { schedule: "*/5 * * * * *", retention: { keepLast: 2 }, backupTemplate: backupSpec },
    } as KubeObject);
    await client.create(MySQLBackupKind.resource, { apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name: "once", namespace: ns }, spec: backupSpec } as KubeObject);
    await client.create(MySQLRestoreKind.resource, {
      apiVersion: MySQLRestoreKind.apiVersion, kind: MySQLRestoreKind.kind, metadata: { name: "back", namespace: ns },
      spec: { instanceRef: { name: "db" }, source: { backupRef: { name: "once" } } },
    } as KubeObject);
    await client.create(DatabaseUserKind.resource, {
      apiVersion: DatabaseUserKind.apiVersion, kind: DatabaseUserKind.kind, metadata: { name: "orphan", namespace: ns },
      spec: { instanceRef: { name: "missing" }, user: `mon_${suffix}`, passwordSecretRef: { name: "nowhere" } },
    } as KubeObject);
    await client.create(MySQLClusterKind.resource, clusterManifest(ns, "mc", { replicas: 2, storage: { size: "1Gi" } }));
    await clusterRunning(client, { ns, servers }, "mc", 2);

    const samples = await waitFor("every metric of e2e/support/monitoring-metrics.ts exported", async () => {
      const s = await scrape();
      const problems = missing(s);
      if (problems.length > 0) throw new Error(problems.join("; "));
      return s;
    }, 120_000, 1_000);

    const value = (name: string, labels: Record<string, string>) =>
      samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
    expect(value("stateward_mysqlcluster_writable_primary", { namespace: ns, name: "mc" })).toBe(1);
    expect(value("stateward_mysqlcluster_replication_thread_running", { namespace: ns, name: "mc", thread: "sql" })).toBe(1);
    expect(value("stateward_mysqlcluster_max_lag_seconds", { namespace: ns, name: "mc" })).toBe(30);
    expect(value("stateward_mysqlbackupschedule_interval_seconds", { namespace: ns, name: "often" })).toBe(5);
    expect(value("stateward_mysqlbackupschedule_last_success_size_bytes", { namespace: ns, name: "often" })).toBeGreaterThan(0);
    expect(value("stateward_mysqlbackup_throughput_bytes_per_second", { namespace: ns, name: "once" })).toBeGreaterThan(0);
    expect(value("stateward_databaseuser_failures_total", { namespace: ns, name: "orphan", reason: "InstanceNotFound" })).toBeGreaterThanOrEqual(1);
    expect(value("stateward_manager_ready", {})).toBe(1);
    // Nothing read from a Secret or a spec string is a label value: only names and fixed words.
    for (const s of samples.filter((x) => x.name.startsWith("stateward_"))) {
      for (const v of Object.values(s.labels)) expect(v, `${s.name} label`).toMatch(/^[a-z0-9][a-z0-9.-]*$|^[A-Z][A-Za-z]+$|^[0-9.e+Inf]+$|^$/);
    }

    // The promtool unit tests use these series, under these labels (plus the scrape's job and instance).
    const tests = parse(readFileSync(join(repoRoot, "hack/monitoring/rules.test.yaml"), "utf8")) as { tests: { input_series: { series: string }[] }[] };
    const catalogue = new Map(exportedMetrics.map((m) => [m.name, m.labels.slice().sort().join(",")]));
    for (const { series } of tests.tests.flatMap((t) => t.input_series)) {
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\}$/.exec(series);
      const name = m?.[1] ?? "";
      const labels: Record<string, string> = {};
      for (const [, k] of (m?.[2] ?? "").matchAll(/([a-zA-Z_]+)="[^"]*"/g)) labels[k ?? ""] = "";
      if (scrapeSeries.includes(name)) continue;
      expect(catalogue.has(name), `${name} in rules.test.yaml is not an exported metric`).toBe(true);
      expect(labelNames(labels, ["job", "instance"]), `labels of ${series}`).toBe(catalogue.get(name));
      expect(samples.some((s) => s.name === name), `${name} scraped`).toBe(true);
    }

    // The state scraped here is healthy: fed to promtool as it is (held for an hour), no alert fires.
    const ours = samples.filter((s) => exportedMetrics.some((m) => seriesNames(m).includes(s.name)) && (s.labels.namespace === ns || s.labels.namespace === undefined));
    const quote = (v: string) => `"${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
    const input = ours.map((s) => ({
      series: `${s.name}{${Object.entries({ ...s.labels, job: "stateward", instance: "manager:8080" }).map(([k, v]) => `${k}=${quote(v)}`).join(",")}}`,
      values: `${s.value}x60`,
    }));
    const dir = join(env.dir, "monitoring-promtool");
    mkdirSync(dir, { recursive: true });
    const alerts = ["StatewardBackupTooOld", "StatewardReplicationBroken", "StatewardReplicationLagging", "StatewardClusterNotWritable", "StatewardFailover", "StatewardManagerNotReady"];
    writeFileSync(join(dir, "scraped.test.yaml"), JSON.stringify({
      rule_files: [join(repoRoot, "charts/stateward/files/prometheus-rules.yaml")],
      evaluation_interval: "1m",
      tests: [{
        interval: "1m",
        input_series: [...input, { series: 'up{job="stateward",instance="manager:8080"}', values: "1x60" }],
        alert_rule_test: alerts.map((alertname) => ({ eval_time: "30m", alertname, exp_alerts: [] })),
      }],
    }));
    execFileSync(tools.promtool(), ["test", "rules", join(dir, "scraped.test.yaml")], { stdio: "pipe" });
  }, 600_000);

  it("drops a deleted object's series", async () => {
    await client.delete(DatabaseUserKind.resource, ns, "orphan");
    await waitFor("the deleted DatabaseUser's series gone", async () => {
      const left = (await scrape()).filter((s) => s.labels.namespace === ns && s.labels.name === "orphan");
      if (left.length > 0) throw new Error(`still exported: ${left.map((s) => s.name).join(", ")}`);
      return true;
    }, 60_000, 500);
  }, 120_000);
});
