// MySQLInstance: what `kubectl get` shows, a status that follows the server
// without writing when nothing changed, the admin Secret read once per
// resourceVersion, and a connection pool re-opened when the instance or its
// admin Secret changes.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { builtin, isInvalid, type ApiError } from "@stateward/core";
import { MySQLError, MySQLTokens, type MySQLConnector, type MySQLInstance } from "@stateward/mysql";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { tools } from "../../harness/index.ts";
import { freshNamespace, testClient } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import { MYI, WRITE_VERBS, adminConnection, cleanUp, createInstance, instance, leftovers, q, readyOf, startManager, suffix, type RunningManager } from "./support.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const run = promisify(execFile);

describe("MySQLInstance", () => {
  const id = suffix();
  const left = leftovers();
  let ns: string;
  let running: RunningManager;

  beforeAll(async () => {
    ns = await freshNamespace(client, "dbu-inst");
    left.namespaces.push(ns);
    running = await startManager(env.kubeconfig, { namespaces: [ns], operator: { instanceCheckIntervalMs: 500 } });
    left.managers.push(running);
    await createInstance(client, env.mysql, ns, "db");
  });

  afterAll(async () => {
    await cleanUp(client, env.mysql, left);
  });

  const ready = (generation?: number) =>
    waitFor("instance Ready", async () => {
      const i = await client.get<MySQLInstance>(MYI, ns, "db");
      const c = readyOf(i);
      return c?.status === "True" && (generation === undefined || c.observedGeneration === generation) ? i : undefined;
    });

  it("reports Ready, the flavor and the version; kubectl shows them", async () => {
    const i = await ready(1);
    expect(i.status).toMatchObject({ flavor: "MariaDB", serverVersion: expect.stringMatching(/^\d+\.\d+\.\d+$/) as unknown });
    expect(readyOf(i)?.message).toMatch(new RegExp(`^Connected as ${env.mysql.user} to MariaDB ${i.status?.serverVersion}`));
    const { stdout } = await run(tools.kubectl(), ["--kubeconfig", env.kubeconfig, "-n", ns, "get", "mysqlinstances"]);
    const [header, row] = stdout.trim().split("\n");
    expect(header?.split(/\s+/)).toEqual(["NAME", "HOST", "PORT", "FLAVOR", "VERSION", "READY", "AGE"]);
    expect(row?.split(/\s+/).slice(0, 6)).toEqual(["db", env.mysql.host, String(env.mysql.port), "MariaDB", i.status?.serverVersion, "True"]);
    // The category: `kubectl get stateward` lists it.
    const all = await run(tools.kubectl(), ["--kubeconfig", env.kubeconfig, "-n", ns, "get", "stateward", "-o", "name"]);
    expect(all.stdout).toContain("mysqlinstance.stateward.io/db");
  });

  it("checks the server periodically, and writes nothing while nothing changes", async () => {
    await ready();
    const writes = running.requests.filter((r) => WRITE_VERBS.has(r.verb)).length;
    const pings = running.statements.filter((s) => s.sql.startsWith("SELECT VERSION()")).length;
    await new Promise((r) => setTimeout(r, 2_500));
    expect(running.statements.filter((s) => s.sql.startsWith("SELECT VERSION()")).length - pings).toBeGreaterThanOrEqual(2);
    expect(running.requests.filter((r) => WRITE_VERBS.has(r.verb)).length).toBe(writes);
  });

  it("reads the admin Secret once while its resourceVersion stays the same, again when it changes", async () => {
    const connector = running.manager.container.get<MySQLConnector>(MySQLTokens.Connector);
    const live = await client.get<MySQLInstance>(MYI, ns, "db");
    const adminReads = () => running.requests.filter((r) => r.verb === "GET" && r.path === `/api/v1/namespaces/${ns}/secrets/db-admin`).length;
    await connector.connect(live);
    const before = adminReads();
    // Every DatabaseUser's reconcile asks for the connection; so do the instance's checks (every 500 ms here).
    for (let i = 0; i < 5; i++) await connector.connect(live);
    await new Promise((r) => setTimeout(r, 1_200));
    expect(adminReads()).toBe(before);

    // A change the cache's watch sees: fetched again, then answered from that read.
    await client.patch(builtin.secret, ns, "db-admin", { metadata: { annotations: { "stateward.test/touched": id } } });
    await waitFor("the changed admin Secret read again", async () => {
      await connector.connect(live);
      return adminReads() > before ? true : undefined;
    });
    const after = adminReads();
    for (let i = 0; i < 5; i++) await connector.connect(live);
    expect(adminReads()).toBe(after);
  });

  it("re-opens the pool when the admin Secret or the instance changes", async () => {
    const opened = () => running.logs.lines().filter((l) => l.msg === "connection pool opened" && l.instance === `${ns}/db`);
    const retired = () => running.logs.lines().filter((l) => l.msg === "connection pool retired" && l.instance === `${ns}/db`);
    expect(opened()).toHaveLength(1);

    // Another admin account: the Secret now names it.
    const adminUser = `adm_${id}`;
    left.accounts.push({ user: adminUser, host: "%" });
    const admin = await adminConnection(env.mysql);
    try {
      await admin.query(`CREATE USER ${q(adminUser)}@'%' IDENTIFIED BY 'adm-pw'`);
      await admin.query(`GRANT SELECT ON mysql.* TO ${q(adminUser)}@'%'`);
    } finally {
      await admin.end();
    }
    await client.patch(builtin.secret, ns, "db-admin", { stringData: { username: adminUser, password: "adm-pw" } });
    await waitFor("connected as the new admin", async () => {
      const i = await client.get<MySQLInstance>(MYI, ns, "db");
      return readyOf(i)?.message.startsWith(`Connected as ${adminUser} `) ? i : undefined;
    });
    expect(opened()).toHaveLength(2);
    expect(opened()[1]).toMatchObject({ user: adminUser });
    expect(retired()).toHaveLength(1);

    // A change of the spec: the same server by another name.
    await client.patch(MYI, ns, "db", { spec: { host: "localhost" } });
    await ready(2);
    expect(opened()).toHaveLength(3);
    expect(opened()[2]).toMatchObject({ host: "localhost" });
    expect(JSON.stringify(running.logs.lines())).not.toContain("adm-pw");
  });

  it("lends other operators the pool: statements, and a session of their own with a pinned sql_mode", async () => {
    const connector = running.manager.container.get<MySQLConnector>(MySQLTokens.Connector);
    const live = await client.get<MySQLInstance>(MYI, ns, "db");
    const conn = await connector.connect(live);
    expect(await connector.connect(live)).toBe(conn); // one pool per instance, shared
    expect(conn.server.flavor).toBe("MariaDB");
    const mode = await conn.withConnection(async (session) => {
      await session.query("SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, ',ANSI_QUOTES')");
      await session.query("START TRANSACTION WITH CONSISTENT SNAPSHOT");
      const [rows] = await session.query("SELECT @@SESSION.sql_mode AS m");
      await session.query("COMMIT");
      return (rows as { m: string }[])[0]?.m;
    });
    expect(mode).toContain("ANSI_QUOTES");
    // ...and the session goes back to the pool re-checked: no statement after it reads SQL text differently.
    for (let i = 0; i < 6; i++) {
      const [row] = await conn.query<{ m: string }>("SELECT @@SESSION.sql_mode AS m");
      expect(row?.m).not.toContain("ANSI_QUOTES");
    }
    const err = await conn.query("SELECT * FROM no_such_db.t WHERE secret = ?", ["s3cr3t-value"], ["s3cr3t-value"]).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(MySQLError);
    expect(JSON.stringify(err)).not.toContain("s3cr3t-value");
    expect(Object.keys(err as object)).not.toContain("sql");
    const inside = await conn.withConnection((session) => session.query("SELEKT 1")).then(() => undefined, (e: unknown) => e);
    expect(inside).toMatchObject({ failure: "InvalidStatement", code: "ER_PARSE_ERROR" });
  });

  it("refuses a CA without a verifying TLS mode, naming the field", async () => {
    const err = await client
      .create(MYI, instance(ns, "bad-tls", { adminSecret: "db-admin", tls: { mode: "preferred", caSecretRef: { name: "ca" } } }))
      .then(() => undefined, (e: unknown) => e);
    expect(isInvalid(err)).toBe(true);
    expect((err as ApiError).message).toMatch(/spec\.tls\.caSecretRef: Invalid value: .*caSecretRef is only used with mode verify-ca or verify-identity/);
  });
});
