// Helpers of the database-user suites: a manager running the operator with
// its logs, API requests and SQL statements recorded; the objects a test
// declares; and an admin connection to check what the server really has.
import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";
import { Manager, builtin, captureLogs, findCondition, type CapturedLogs, type KubeClient, type KubeObject, type RequestObservation, type SecretAccess } from "@stateward/core";
import { MySQLInstanceKind, type MySQLInstance, type StatementObservation } from "@stateward/mysql";
import { DatabaseUserKind, createDatabaseUserOperator, type DatabaseUser, type DatabaseUserOperatorOptions } from "@stateward/operator-database-user";
import type { MariaDBEndpoint } from "../../harness/index.ts";
import { releaseInUse } from "../../support/database-users.ts";
import { kubeConfigFrom } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";

export const DBU = DatabaseUserKind.resource;
export const MYI = MySQLInstanceKind.resource;

export interface RunningManager {
  manager: Manager;
  logs: CapturedLogs;
  requests: RequestObservation[];
  statements: StatementObservation[];
  stop(): Promise<void>;
}

/** Starts a manager with the database-user operator; `stop` also closes its MySQL pools. */
export async function startManager(
  kubeconfig: string,
  opts: { namespaces?: string[]; target?: string; secrets?: SecretAccess; operator?: DatabaseUserOperatorOptions } = {},
): Promise<RunningManager> {
  const logs = captureLogs();
  const requests: RequestObservation[] = [];
  const statements: StatementObservation[] = [];
  const operator = createDatabaseUserOperator({
    ...opts.operator,
    connector: { ...opts.operator?.connector, onStatement: (o) => statements.push(o) },
  });
  const manager = new Manager({
    kubeConfig: kubeConfigFrom(kubeconfig),
    namespaces: opts.namespaces,
    target: opts.target,
    secrets: opts.secrets,
    logger: logs.logger,
    onRequest: (o) => requests.push(o),
    gracefulShutdownMs: 5_000,
  }).load(operator);
  await manager.start();
  let stopped = false;
  return {
    manager,
    logs,
    requests,
    statements,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await manager.stop();
      // Manager.stop unbinds the container, which closes the connector's pools.
    },
  };
}

export const WRITE_VERBS = new Set(["POST", "PUT", "PATCH", "DELETE"]);
/** Statements that change accounts or grants (SHOW and SELECT only read). */
export const isSqlWrite = (o: StatementObservation) => /^\s*(CREATE|ALTER|DROP|GRANT|REVOKE|SET PASSWORD|RENAME)\b/i.test(o.sql);

export function suffix(): string {
  return randomBytes(3).toString("hex");
}

export function secret(namespace: string, name: string, data: Record<string, string>, labels?: Record<string, string>): KubeObject & { stringData: Record<string, string> } {
  return { apiVersion: "v1", kind: "Secret", metadata: { name, namespace, labels }, stringData: data };
}

export function instance(namespace: string, name: string, spec: Partial<MySQLInstance["spec"]> & { adminSecret: string }, labels?: Record<string, string>): MySQLInstance {
  const { adminSecret, ...rest } = spec;
  return {
    apiVersion: MySQLInstanceKind.apiVersion,
    kind: MySQLInstanceKind.kind,
    metadata: { name, namespace, labels },
    spec: { host: "127.0.0.1", port: 3306, adminSecretRef: { name: adminSecret }, ...rest },
  };
}

export function databaseUser(namespace: string, name: string, spec: DatabaseUser["spec"], labels?: Record<string, string>): DatabaseUser {
  return { apiVersion: DatabaseUserKind.apiVersion, kind: DatabaseUserKind.kind, metadata: { name, namespace, labels }, spec };
}

/** The admin Secret and a MySQLInstance for the environment's MariaDB. */
export async function createInstance(
  client: KubeClient,
  db: MariaDBEndpoint,
  namespace: string,
  name: string,
  labels?: Record<string, string>,
): Promise<void> {
  await client.create(builtin.secret, secret(namespace, `${name}-admin`, { username: db.user, password: db.password }));
  await client.create(MYI, instance(namespace, name, { host: db.host, port: db.port, adminSecret: `${name}-admin` }, labels));
}

export const readyOf = (o: { status?: { conditions?: Parameters<typeof findCondition>[0] } } | undefined) => findCondition(o?.status?.conditions, "Ready");

/** Waits for Ready=True computed for `generation` (the current one when not given). */
export async function waitReady(client: KubeClient, namespace: string, name: string, generation?: number, timeoutMs = 30_000): Promise<DatabaseUser> {
  return waitFor(
    `DatabaseUser ${namespace}/${name} Ready`,
    async () => {
      const u = await client.get<DatabaseUser>(DBU, namespace, name);
      const c = readyOf(u);
      const want = generation ?? u.metadata.generation;
      return c?.status === "True" && c.observedGeneration === want ? u : undefined;
    },
    timeoutMs,
  );
}

/** Waits for Ready=False with `reason`. */
export async function waitNotReady(client: KubeClient, namespace: string, name: string, reason: string, timeoutMs = 30_000): Promise<DatabaseUser> {
  return waitFor(
    `DatabaseUser ${namespace}/${name} Ready=False ${reason}`,
    async () => {
      const u = await client.get<DatabaseUser>(DBU, namespace, name);
      const c = readyOf(u);
      return c?.status === "False" && c.reason === reason ? u : undefined;
    },
    timeoutMs,
  );
}

export interface EventObject extends KubeObject {
  reason?: string;
  note?: string;
  type?: string;
  regarding?: { name?: string; kind?: string };
}

export async function eventsFor(client: KubeClient, namespace: string, name: string): Promise<EventObject[]> {
  const list = await client.list<EventObject>(builtin.event, { namespace });
  return list.items.filter((e) => e.regarding?.name === name);
}

/** An admin connection to the environment's MariaDB, to check what the operator did. */
export async function adminConnection(db: MariaDBEndpoint): Promise<mysql.Connection> {
  return mysql.createConnection({ host: db.host, port: db.port, user: db.user, password: db.password });
}

/** Backtick-quotes an identifier for the test's own SQL. */
export const q = (name: string) => `\`${name.replaceAll("`", "``")}\``;

export async function showGrants(admin: mysql.Connection, user: string, host = "%"): Promise<string[]> {
  const [rows] = await admin.query(`SHOW GRANTS FOR ${q(user)}@${q(host)}`);
  return (rows as Record<string, string>[]).map((r) => String(Object.values(r)[0])).filter((l) => !l.startsWith("GRANT USAGE ON *.*"));
}

export async function accountExists(admin: mysql.Connection, user: string, host = "%"): Promise<boolean> {
  const [rows] = await admin.query("SELECT 1 FROM mysql.user WHERE User = ? AND Host = ?", [user, host]);
  return (rows as unknown[]).length > 0;
}

/** Logs in as the account; resolves to "ok", or to the error code when refused. */
export async function tryLogin(db: MariaDBEndpoint, user: string, password: string): Promise<string> {
  try {
    const conn = await mysql.createConnection({ host: db.host, port: db.port, user, password, connectTimeout: 5_000 });
    await conn.query("SELECT 1");
    await conn.end();
    return "ok";
  } catch (err) {
    return String((err as { code?: string }).code ?? err);
  }
}

/** Counts the controller's failed reconciles of one object from the captured logs. */
export function failedReconciles(logs: CapturedLogs, controller: string, name: string): number {
  return logs.lines().filter((l) => l.controller === controller && l.name === name && String(l.msg).startsWith("reconcile failed")).length;
}

/** What a suite created, removed by `cleanUp` even when a test failed half-way. */
export interface Leftovers {
  namespaces: string[];
  accounts: { user: string; host: string }[];
  databases: string[];
  managers: RunningManager[];
}

export function leftovers(): Leftovers {
  return { namespaces: [], accounts: [], databases: [], managers: [] };
}

/**
 * Deletes the DatabaseUsers while a manager still runs (so finalizers finish),
 * stops the managers, then drops the accounts and databases and deletes the
 * namespaces. Every step runs even if an earlier one failed.
 */
export async function cleanUp(client: KubeClient, db: MariaDBEndpoint, left: Leftovers): Promise<void> {
  const attempt = async (what: () => Promise<unknown>) => {
    try {
      await what();
    } catch {
      // best effort: the next step still runs
    }
  };
  for (const ns of left.namespaces) {
    const users = await client.list<DatabaseUser>(DBU, { namespace: ns }).then((l) => l.items, () => []);
    for (const u of users) {
      await attempt(() => client.patch(DBU, ns, u.metadata.name!, { spec: { deletionPolicy: "Retain" } }));
      await attempt(() => client.delete(DBU, ns, u.metadata.name!));
    }
    const deadline = Date.now() + 15_000;
    for (const u of users) {
      while (Date.now() < deadline) {
        const gone = await client.get(DBU, ns, u.metadata.name!).then(() => false, () => true);
        if (gone) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      // No manager may be left to release it: take the finalizer off by hand.
      await attempt(() => client.patch(DBU, ns, u.metadata.name!, { metadata: { finalizers: null } }));
    }
  }
  for (const m of left.managers) await attempt(() => m.stop());
  for (const ns of left.namespaces) await attempt(() => releaseInUse(client, ns));
  const admin = await adminConnection(db).catch(() => undefined);
  if (admin) {
    for (const a of left.accounts) await attempt(() => admin.query(`DROP USER IF EXISTS ${q(a.user)}@${q(a.host)}`));
    for (const d of left.databases) await attempt(() => admin.query(`DROP DATABASE IF EXISTS ${q(d)}`));
    await attempt(() => admin.end());
  }
  for (const ns of left.namespaces) await attempt(() => client.delete(builtin.namespace, undefined, ns));
}

