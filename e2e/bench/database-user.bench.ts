// The database-user operator: 1,000 DatabaseUsers (each with its own
// password Secret and one grant) against the environment's MariaDB.
//
//  1. a manager with the operator on a fresh namespace, one MySQLInstance;
//  2. create the Secrets and DatabaseUsers (20 requests in flight), until all
//     are Ready and the manager is idle: time, users per second, and the SQL
//     statements and API writes each user cost;
//  3. an idle manager writes nothing, to the API server or to MySQL;
//  4. a new manager on the converged users (a restart) must write nothing —
//     and, as converged accounts are trusted until their drift check, not
//     even read an account;
//  5. delete them all: the manager drops every account, then the namespace;
//  6. with STATEWARD_PEER_DIR, the same workload against a controller-runtime
//     peer and against our manager as a separate process, side by side
//     (database-user-peer.ts): the "vs peer" rows, ours / peer.
//
// In 1-5 the manager runs in this process, with its API requests and SQL
// statements observed (statements as SQL text with placeholders, never values).
import { setTimeout as sleep } from "node:timers/promises";
import {
  Cache,
  Manager,
  builtin,
  captureLogs,
  messageOf,
  resourcePath,
  type KubeClient,
  type RequestObservation,
} from "@stateward/core";
import { MySQLInstanceKind, type StatementObservation } from "@stateward/mysql";
import { DatabaseUserKind, createDatabaseUserOperator, type DatabaseUser } from "@stateward/operator-database-user";
import mysql from "mysql2/promise";
import type { EnvironmentInfo } from "../harness/index.ts";
import { createDatabaseUsers, databaseUserReady, releaseInUse } from "../support/database-users.ts";
import { deleteNamespace, freshNamespace, kubeConfigFrom, testClient, waitGone } from "../support/kube.ts";
import { waitFor } from "../support/wait.ts";
import type { BenchResult, BenchRow, Benchmark } from "./benchmark.ts";
import { sampleSum } from "./metrics-text.ts";
import { comparePeer } from "./database-user-peer.ts";

/** The issue's figure; BENCH_DBU_USERS sets another (e.g. a few hundred under a profiler). */
const USERS = usersSetting(process.env.BENCH_DBU_USERS, 1_000);
const CREATES_IN_FLIGHT = 20;
/** The operator's default: as many workers as connections in an instance's pool. */
const MAX_CONCURRENT_RECONCILES = 4;
/**
 * The fewest SQL statements a new account with one grant costs: read the
 * account, CREATE USER, GRANT, SHOW GRANTS (the check that the grants
 * converged; what a just-created account holds needs no SHOW GRANTS before
 * the GRANT). Two of them write.
 */
const MIN_STATEMENTS_PER_USER = 4;
const MIN_SQL_WRITES_PER_USER = 2;
/** Finalizer, status, and the event saying what was done. */
const MIN_API_WRITES_PER_USER = 3;
const STEADY_STATE_MS = 3_000;
const RESTART_SETTLE_MS = 3_000;
const ALL_READY_TIMEOUT_MS = 300_000;
const DELETE_TIMEOUT_MS = 300_000;
const USERS_TEXT = USERS.toLocaleString("en-US");
const WRITE_VERBS = new Set(["POST", "PUT", "PATCH", "DELETE"]);
const SQL_WRITE = /^\s*(CREATE|ALTER|DROP|GRANT|REVOKE)\b/i;

const DBU = DatabaseUserKind.resource;

/** A count from the environment; NaN when the value is not a positive whole number (run() refuses it). */
function usersSetting(raw: string | undefined, fallback: number): number {
  const text = raw?.replaceAll("_", "").trim();
  if (text === undefined || text === "") return fallback;
  const n = Number(text);
  return Number.isSafeInteger(n) && n >= 1 ? n : NaN;
}

interface Observed {
  manager: Manager;
  requests: RequestObservation[];
  statements: StatementObservation[];
  stop(): Promise<void>;
}

async function startManager(kubeconfig: string, namespace: string): Promise<Observed> {
  const requests: RequestObservation[] = [];
  const statements: StatementObservation[] = [];
  const manager = new Manager({
    kubeConfig: kubeConfigFrom(kubeconfig),
    namespaces: [namespace],
    logger: captureLogs({ level: "error" }).logger,
    onRequest: (o) => requests.push(o),
    gracefulShutdownMs: 10_000,
  }).load(
    createDatabaseUserOperator({
      maxConcurrentReconciles: MAX_CONCURRENT_RECONCILES,
      connector: { onStatement: (o) => statements.push(o) },
    }),
  );
  await manager.start();
  return {
    manager,
    requests,
    statements,
    stop: async () => {
      await manager.stop();
      // Manager.stop unbinds the container, which closes the connector's pools.
    },
  };
}

/** Queue empty and no reconcile counted for `windowMs`: the controller is idle. Returns the reconcile count. */
async function waitIdle(manager: Manager, minReconciles: number, timeoutMs: number, windowMs = 500): Promise<number> {
  const until = performance.now() + timeoutMs;
  let last = -1;
  let quietSince = 0;
  for (;;) {
    const text = (await manager.metrics.exposition()).body;
    const reconciles = sampleSum(text, "controller_runtime_reconcile_total", { controller: "databaseuser" });
    const depth = sampleSum(text, "workqueue_depth", { name: "databaseuser" });
    const active = sampleSum(text, "controller_runtime_active_workers", { controller: "databaseuser" });
    const quiet = depth === 0 && active === 0 && reconciles >= minReconciles && reconciles === last;
    if (!quiet) quietSince = performance.now();
    else if (performance.now() - quietSince >= windowMs) return reconciles;
    last = reconciles;
    if (performance.now() > until) throw new Error(`the databaseuser controller was not idle after ${timeoutMs} ms (${reconciles} reconciles)`);
    await sleep(50);
  }
}

async function run(env: EnvironmentInfo): Promise<BenchResult> {
  if (Number.isNaN(USERS)) throw new Error(`BENCH_DBU_USERS must be a positive whole number of DatabaseUsers, not ${process.env.BENCH_DBU_USERS}`);
  const own = await runInProcess(env);
  const peer = await comparePeer(env, USERS);
  if (peer.skipped) console.log(`  note: ${peer.skipped}`);
  return { rows: [...own.rows, ...peer.rows], failures: [...own.failures, ...peer.failures], details: { ...own.details, ...peer.details } };
}

async function runInProcess(env: EnvironmentInfo): Promise<BenchResult> {
  const client: KubeClient = testClient(env.kubeconfig);
  const ns = await freshNamespace(client, "bench-dbu");
  const prefix = `bench_${ns.slice(-6)}_`;
  const rows: BenchRow[] = [];
  const failures: string[] = [];
  const row = (metric: string, value: number, unit: string, reference?: number, note?: string) => rows.push({ metric, value, unit, reference, note });
  const running: Observed[] = [];
  const watch = new Cache(client, { namespaces: [ns] });
  const ready = new Set<string>();
  let allReadyAt: number | undefined;
  const admin = await mysql.createConnection({ host: env.mysql.host, port: env.mysql.port, user: env.mysql.user, password: env.mysql.password });

  try {
    const first = await startManager(env.kubeconfig, ns);
    running.push(first);
    watch.onEvent<DatabaseUser>(DBU, (e) => {
      const name = e.obj.metadata.name ?? "";
      if (e.type !== "delete" && databaseUserReady(e.obj)) ready.add(name);
      else ready.delete(name);
      if (ready.size >= USERS) allReadyAt ??= performance.now();
    });
    watch.start();
    await watch.waitForSync();
    await client.create(builtin.secret, { metadata: { name: "admin", namespace: ns }, stringData: { username: env.mysql.user, password: env.mysql.password } });
    await client.create(MySQLInstanceKind.resource, {
      apiVersion: MySQLInstanceKind.apiVersion,
      kind: MySQLInstanceKind.kind,
      metadata: { name: "db", namespace: ns },
      spec: { host: env.mysql.host, port: env.mysql.port, adminSecretRef: { name: "admin" } },
    });
    row("DatabaseUsers (each with its own Secret and one grant)", USERS, "");
    row("maxConcurrentReconciles", MAX_CONCURRENT_RECONCILES, "workers");

    // 2. Create, until all Ready and idle.
    const t0 = performance.now();
    await createDatabaseUsers(client, { namespace: ns, count: USERS, instance: "db", accountPrefix: prefix, inFlight: CREATES_IN_FLIGHT });
    const createdS = (performance.now() - t0) / 1000;
    await waitFor(`all ${USERS} DatabaseUsers Ready`, () => (allReadyAt !== undefined ? true : undefined), ALL_READY_TIMEOUT_MS, 100).catch((err: unknown) => {
      throw new Error(`${messageOf(err)} (${ready.size} Ready)`);
    });
    const allReadyS = ((allReadyAt ?? performance.now()) - t0) / 1000;
    const reconciles = await waitIdle(first.manager, USERS, ALL_READY_TIMEOUT_MS);
    const statements = first.statements.filter((s) => s.instance === `${ns}/db`);
    const userStatements = statements.filter((s) => !s.sql.startsWith("SELECT VERSION()"));
    const apiWrites = first.requests.filter((r) => WRITE_VERBS.has(r.verb));

    row(`create ${USERS_TEXT} Secrets + DatabaseUsers (benchmark client)`, createdS, "s");
    row(`time until all ${USERS_TEXT} Ready (from the first create)`, allReadyS, "s", createdS, "reference: creating them");
    row("users Ready per second", USERS / allReadyS, "/s");
    row("reconciles per user", reconciles / USERS, "");
    row("SQL statements per user", userStatements.length / USERS, "", MIN_STATEMENTS_PER_USER, "reference: read, CREATE USER, GRANT, SHOW GRANTS");
    row("SQL writes per user", userStatements.filter((s) => SQL_WRITE.test(s.sql)).length / USERS, "", MIN_SQL_WRITES_PER_USER, "reference: CREATE USER + GRANT");
    row("mean SQL statement time", (userStatements.reduce((a, s) => a + s.seconds, 0) / userStatements.length) * 1000, "ms");
    row("API writes per user", apiWrites.length / USERS, "requests", MIN_API_WRITES_PER_USER, "reference: finalizer + status + event");

    const [accounts] = await admin.query("SELECT COUNT(*) AS n FROM mysql.user WHERE User LIKE ?", [`${prefix.replaceAll("_", "\\_")}%`]);
    const count = Number((accounts as { n: number }[])[0]?.n ?? 0);
    if (count !== USERS) failures.push(`MariaDB has ${count} accounts, not ${USERS}`);

    // 3. Steady state.
    const apiBefore = first.requests.filter((r) => WRITE_VERBS.has(r.verb)).length;
    const sqlBefore = first.statements.filter((s) => SQL_WRITE.test(s.sql)).length;
    await sleep(STEADY_STATE_MS);
    const idleApi = first.requests.filter((r) => WRITE_VERBS.has(r.verb)).length - apiBefore;
    const idleSql = first.statements.filter((s) => SQL_WRITE.test(s.sql)).length - sqlBefore;
    row(`API writes while idle (${STEADY_STATE_MS / 1000} s)`, idleApi, "requests", 0);
    row(`SQL writes while idle (${STEADY_STATE_MS / 1000} s)`, idleSql, "", 0);
    if (idleApi + idleSql > 0) failures.push(`the idle manager wrote: ${idleApi} API requests, ${idleSql} SQL statements`);

    // 4. Restart on converged users.
    await first.stop();
    running.splice(running.indexOf(first), 1);
    const restartAt = performance.now();
    const second = await startManager(env.kubeconfig, ns);
    running.push(second);
    const syncedMs = performance.now() - restartAt;
    const resyncReconciles = await waitIdle(second.manager, USERS, ALL_READY_TIMEOUT_MS);
    const idleMs = performance.now() - restartAt;
    await sleep(RESTART_SETTLE_MS);
    const restartApi = second.requests.filter((r) => WRITE_VERBS.has(r.verb));
    const restartSql = second.statements.filter((s) => !s.sql.startsWith("SELECT VERSION()"));
    row("restart: new manager -> caches synced", syncedMs, "ms");
    row(`restart: every user reconciled, manager idle`, idleMs, "ms");
    row("restart: reconciles", resyncReconciles, "");
    row("restart: API writes", restartApi.length, "requests", 0);
    row("restart: SQL statements on accounts (converged ones are not read until their drift check)", restartSql.length, "", 0);
    if (restartApi.length > 0 || restartSql.some((s) => SQL_WRITE.test(s.sql))) {
      failures.push(
        `the restarted manager wrote on ${USERS} converged users: ${restartApi.length} API requests ` +
          `(${restartApi.slice(0, 5).map((r) => `${r.verb} ${r.path}`).join(", ")}), ${restartSql.filter((s) => SQL_WRITE.test(s.sql)).length} SQL writes`,
      );
    }

    // 5. Delete: the manager drops every account and releases the finalizers.
    const deleteStarted = performance.now();
    await client.request("DELETE", resourcePath(DBU, ns), { verb: "DELETE" });
    await waitFor("every DatabaseUser deleted", () => (watch.list(DBU).length === 0 ? true : undefined), DELETE_TIMEOUT_MS, 100);
    row(`delete ${USERS_TEXT} DatabaseUsers (accounts dropped by the manager)`, (performance.now() - deleteStarted) / 1000, "s");
    const [leftover] = await admin.query("SELECT COUNT(*) AS n FROM mysql.user WHERE User LIKE ?", [`${prefix.replaceAll("_", "\\_")}%`]);
    const remaining = Number((leftover as { n: number }[])[0]?.n ?? 0);
    if (remaining !== 0) failures.push(`${remaining} accounts were left after deleting every DatabaseUser`);
    return { rows, failures, details: { namespace: ns, requestsByVerb: second.manager.requests.byVerb } };
  } finally {
    // Whatever is left: accounts by prefix, finalizers by hand, then the namespace.
    const [left] = await admin.query("SELECT User AS u, Host AS h FROM mysql.user WHERE User LIKE ?", [`${prefix.replaceAll("_", "\\_")}%`]);
    for (const { u, h } of left as { u: string; h: string }[]) await admin.query(`DROP USER IF EXISTS \`${u.replaceAll("`", "``")}\`@\`${h.replaceAll("`", "``")}\``);
    await admin.end();
    for (const m of running) await m.stop().catch(() => undefined);
    for (const u of watch.list<DatabaseUser>(DBU)) {
      await client.patch(DBU, ns, u.metadata.name ?? "", { metadata: { finalizers: null } }).catch(() => undefined);
    }
    await watch.stop();
    await releaseInUse(client, ns);
    await deleteNamespace(client, ns);
    await waitGone(client, builtin.namespace, undefined, ns, DELETE_TIMEOUT_MS).catch(() => undefined);
  }
}

export const databaseUserBenchmark: Benchmark = {
  name: "database-user",
  description: `database-user operator: ${USERS_TEXT} DatabaseUsers against one MariaDB (maxConcurrentReconciles ${MAX_CONCURRENT_RECONCILES}), then a restart; with STATEWARD_PEER_DIR, side by side with a controller-runtime peer`,
  run,
};
