// Hostile input: names full of quotes, backticks, wildcards, unicode and SQL
// fragments are either refused by the CRD schema (422, naming the field) or
// applied literally — the account and grants exist with exactly those names,
// and none of the fragments ever ran.
import { execFile } from "node:child_process";
import { builtin, isInvalid, type ApiError } from "@stateward/core";
import type { DatabaseUser } from "@stateward/operator-database-user";
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { join } from "node:path";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { startMariaDB, stopMariaDB, tools, type MariaDBEndpoint } from "../../harness/index.ts";
import { freshNamespace, testClient } from "../../support/kube.ts";
import {
  DBU,
  MYI,
  adminConnection,
  cleanUp,
  createInstance,
  databaseUser,
  leftovers,
  q,
  instance,
  secret,
  showGrants,
  startManager,
  suffix,
  waitReady,
} from "./support.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);

describe("hostile input", () => {
  const id = suffix();
  const left = leftovers();
  let ns: string;
  let admin: mysql.Connection;

  const hostileDb = `d'b"q\`t%_é;DROP DATABASE mysql;--${id}`;
  const hostileTable = `t\`'"%_ü; DROP TABLE x`;
  const lookAlikeDb = `d'b"q\`tXXé;DROP DATABASE mysql;--${id}`; // what "%" and "_" would match as wildcards
  const password = `'; DROP USER root; -- \\' " \` ${id}`;

  beforeAll(async () => {
    ns = await freshNamespace(client, "dbu-hostile");
    left.namespaces.push(ns);
    left.databases.push(hostileDb, lookAlikeDb);
    admin = await adminConnection(env.mysql);
    for (const d of [hostileDb, lookAlikeDb]) {
      await admin.query(`CREATE DATABASE ${q(d)}`);
      await admin.query(`CREATE TABLE ${q(d)}.${q(hostileTable)} (id INT)`);
      await admin.query(`INSERT INTO ${q(d)}.${q(hostileTable)} VALUES (7)`);
    }
    const running = await startManager(env.kubeconfig, { namespaces: [ns] });
    left.managers.push(running);
    await createInstance(client, env.mysql, ns, "db");
    await client.create(builtin.secret, secret(ns, "hostile-pw", { password }));
  });

  afterAll(async () => {
    await admin.end();
    await cleanUp(client, env.mysql, left);
  });

  const users = [
    { object: "quotes", user: `h'q"b\`t_${id}` },
    { object: "wildcards", user: `%_${id}` },
    { object: "unicode", user: `ünï©ødé_用户_${id}` },
    { object: "sql", user: `x';DROP USER root;--${id}` },
  ];

  it.each(users)("applies user name $user literally, with grants on hostile names, and runs none of it", async ({ object, user }) => {
    left.accounts.push({ user, host: "%" });
    await client.create(
      DBU,
      databaseUser(ns, object, {
        instanceRef: { name: "db" },
        user,
        passwordSecretRef: { name: "hostile-pw" },
        grants: [
          { privileges: ["SELECT"], database: hostileDb },
          { privileges: ["INSERT"], database: hostileDb, table: hostileTable },
        ],
      }),
    );
    const ready = await waitReady(client, ns, object, 1);
    expect(ready.status?.user).toBe(user);

    // Exactly this account, and it logs in with the password full of quotes.
    const [rows] = await admin.query("SELECT User, Host FROM mysql.user WHERE User = ?", [user]);
    expect(rows).toEqual([{ User: user, Host: "%" }]);
    const pattern = hostileDb.replace(/[\\_%]/g, "\\$&");
    expect(await showGrants(admin, user)).toEqual([
      `GRANT SELECT ON ${q(pattern)}.* TO ${q(user)}@\`%\``,
      `GRANT INSERT ON ${q(hostileDb)}.${q(hostileTable)} TO ${q(user)}@\`%\``,
    ]);
    const conn = await mysql.createConnection({ host: env.mysql.host, port: env.mysql.port, user, password });
    try {
      const [data] = await conn.query(`SELECT id FROM ${q(hostileDb)}.${q(hostileTable)}`);
      expect(data).toEqual([{ id: 7 }]);
      // "%" and "_" in the database name were not wildcards: the look-alike is out of reach.
      const [dbs] = await conn.query("SHOW DATABASES");
      expect((dbs as { Database: string }[]).map((d) => d.Database)).toEqual(expect.arrayContaining([hostileDb]));
      expect((dbs as { Database: string }[]).map((d) => d.Database)).not.toContain(lookAlikeDb);
      await expect(conn.query(`SELECT id FROM ${q(lookAlikeDb)}.${q(hostileTable)}`)).rejects.toThrow(/denied/);
    } finally {
      await conn.end();
    }

    // Nothing the names carried was executed.
    const [root] = await admin.query("SELECT COUNT(*) AS n FROM mysql.user WHERE User = 'root'");
    expect((root as { n: number }[])[0]?.n).toBeGreaterThan(0);
    const [tables] = await admin.query(`SELECT COUNT(*) AS n FROM ${q(hostileDb)}.${q(hostileTable)}`);
    expect((tables as { n: number }[])[0]?.n).toBe(1);
  });

  const valid = (): DatabaseUser["spec"] => ({ instanceRef: { name: "db" }, passwordSecretRef: { name: "hostile-pw" } });
  const refusals: { what: string; name?: string; spec: DatabaseUser["spec"]; field: string; says: RegExp }[] = [
    { what: "a host with SQL in it", spec: { ...valid(), host: "%'; DROP USER root; --" }, field: "spec.host", says: /should match/ },
    { what: "a privilege with SQL in it", spec: { ...valid(), grants: [{ privileges: ["SELECT; DROP TABLE t" as "SELECT"], database: "d" }] }, field: "spec.grants[0].privileges[0]", says: /Unsupported value/ },
    { what: "a privilege outside the known list", spec: { ...valid(), grants: [{ privileges: ["USAGE" as "SELECT"], database: "d" }] }, field: "spec.grants[0].privileges[0]", says: /Unsupported value: "USAGE"/ },
    { what: "a user name longer than MySQL allows", spec: { ...valid(), user: "u".repeat(33) }, field: "spec.user", says: /at most 32|more than 32|Too long/ },
    { what: "a user name with a line break", spec: { ...valid(), user: "a\nb" }, field: "spec.user", says: /should match/ },
    { what: "a database name with a backslash", spec: { ...valid(), grants: [{ privileges: ["SELECT"], database: "a\\b" }] }, field: "spec.grants[0].database", says: /should match/ },
    { what: "a database name ending in a space", spec: { ...valid(), grants: [{ privileges: ["SELECT"], database: "ab " }] }, field: "spec.grants[0].database", says: /should match/ },
    { what: "a database name longer than 64", spec: { ...valid(), grants: [{ privileges: ["SELECT"], database: "d".repeat(65) }] }, field: "spec.grants[0].database", says: /at most 64|more than 64|Too long/ },
    { what: "a table on every database", spec: { ...valid(), grants: [{ privileges: ["SELECT"], database: "*", table: "t" }] }, field: "spec.grants[0].table", says: /a global grant \(database "\*"\) applies to every table/ },
    { what: "a database privilege on a table", spec: { ...valid(), grants: [{ privileges: ["EXECUTE"], database: "d", table: "t" }] }, field: "spec.grants[0].privileges", says: /cannot be granted on a single table/ },
    { what: "an administrative privilege on a database", spec: { ...valid(), grants: [{ privileges: ["PROCESS"], database: "d" }] }, field: "spec.grants[0].privileges", says: /can only be granted globally/ },
    { what: "ALL PRIVILEGES with others", spec: { ...valid(), grants: [{ privileges: ["ALL PRIVILEGES", "SELECT"], database: "d" }] }, field: "spec.grants[0].privileges", says: /list it alone/ },
    {
      what: "two grants for one database",
      spec: { ...valid(), grants: [{ privileges: ["SELECT"], database: "d" }, { privileges: ["INSERT"], database: "d" }] },
      field: "spec.grants[1]",
      says: /Duplicate value/,
    },
    { what: "a metadata.name too long to be the user name", name: `n${"x".repeat(33)}`, spec: valid(), field: "spec.user", says: /longer than 32 characters, the longest MySQL user name: set spec.user/ },
  ];

  it.each(refusals)("refuses $what with 422 naming $field", async ({ name, spec, field, says }) => {
    const err = await client.create(DBU, databaseUser(ns, name ?? `refused-${suffix()}`, spec)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isInvalid(err)).toBe(true);
    const message = (err as ApiError).message;
    expect(message).toContain(field);
    expect(message).toMatch(says);
  });

  it("refuses changing the account of an existing DatabaseUser", async () => {
    const err = await client.patch(DBU, ns, "quotes", { spec: { user: "someone-else" } }).then(() => undefined, (e: unknown) => e);
    expect(isInvalid(err)).toBe(true);
    expect((err as ApiError).message).toMatch(/spec\.user: Invalid value: .*user is immutable/);
    const hostErr = await client.patch(DBU, ns, "quotes", { spec: { host: "localhost" } }).then(() => undefined, (e: unknown) => e);
    expect((hostErr as ApiError).message).toMatch(/spec\.host: Invalid value: .*host is immutable/);
  });

  it("kubectl apply shows the refusal, naming the field", async () => {
    const manifest = JSON.stringify(
      databaseUser(ns, "via-kubectl", { ...valid(), grants: [{ privileges: ["SELECT", "DROP DATABASE mysql" as "SELECT"], database: "d" }] }),
    );
    const child = execFile(tools.kubectl(), ["--kubeconfig", env.kubeconfig, "apply", "-f", "-"]);
    const out = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      let stderr = "";
      child.stderr?.on("data", (d: string) => (stderr += d));
      child.on("exit", (code) => resolve({ code, stderr }));
      child.stdin?.end(manifest);
    });
    expect(out.code).not.toBe(0);
    expect(out.stderr).toMatch(/spec\.grants\[0\]\.privileges\[1\]: Unsupported value: "DROP DATABASE mysql"/);
  });
});

describe("hostile input on a server whose sql_mode changes how SQL text reads", () => {
  // NO_BACKSLASH_ESCAPES makes "\\" an ordinary character in string literals and
  // ANSI_QUOTES makes '"' quote identifiers: escaping that ignored them would
  // cut the password short and let its tail run as SQL.
  const left = leftovers();
  const dir = mkdtempSync(join(tmpdir(), "stateward-sqlmode-"));
  let server: MariaDBEndpoint;
  let ns: string;
  const user = `m"o\\d'e_${suffix()}`;
  const password = `\\'; DROP USER root; -- "\\\\"`;

  beforeAll(async () => {
    server = await startMariaDB({ dir, args: ["--sql-mode=NO_BACKSLASH_ESCAPES,ANSI_QUOTES,STRICT_TRANS_TABLES"] });
    ns = await freshNamespace(client, "dbu-sqlmode");
    left.namespaces.push(ns);
    left.managers.push(await startManager(env.kubeconfig, { namespaces: [ns] }));
    await client.create(builtin.secret, secret(ns, "admin", { username: server.user, password: server.password }));
    await client.create(MYI, instance(ns, "odd", { host: server.host, port: server.port, adminSecret: "admin" }));
    await client.create(builtin.secret, secret(ns, "pw", { password }));
  });

  afterAll(async () => {
    await cleanUp(client, env.mysql, left);
    if (server) await stopMariaDB(server);
    rmSync(dir, { recursive: true, force: true });
  });

  it("sets exactly the password and names given, and runs nothing else", async () => {
    await client.create(DBU, databaseUser(ns, "odd", { instanceRef: { name: "odd" }, user, passwordSecretRef: { name: "pw" }, grants: [{ privileges: ["SELECT"], database: "a_b" }] }));
    await waitReady(client, ns, "odd", 1);
    const conn = await mysql.createConnection({ host: server.host, port: server.port, user, password });
    await conn.end();
    const admin = await mysql.createConnection({ host: server.host, port: server.port, user: server.user, password: server.password });
    try {
      const [rows] = await admin.query("SELECT COUNT(*) AS n FROM mysql.user WHERE User = 'root'");
      expect((rows as { n: number }[])[0]?.n).toBeGreaterThan(0);
      const [global] = await admin.query("SELECT @@GLOBAL.sql_mode AS m");
      expect((global as { m: string }[])[0]?.m).toContain("NO_BACKSLASH_ESCAPES");
      const [grants] = await admin.query(`SHOW GRANTS FOR ${q(user)}@'%'`);
      expect((grants as Record<string, string>[]).map((r) => Object.values(r)[0])).toContain(`GRANT SELECT ON "a\\_b".* TO "${user.replaceAll('"', '""')}"@"%"`);
    } finally {
      await admin.end();
    }
  });
});
