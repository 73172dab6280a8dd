// The database-user operator against the real control plane and MariaDB:
// create, edit grants (with a connection that keeps querying through the
// change), rotate the password, adopt an existing account, repair drift,
// make no writes when converged (nor after a restart), and drop or keep the
// account on delete. Every password used is checked to appear nowhere.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { builtin, type KubeObject } from "@stateward/core";
import type { DatabaseUser } from "@stateward/operator-database-user";
import type mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { tools } from "../../harness/index.ts";
import { freshNamespace, testClient, waitGone } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import {
  DBU,
  MYI,
  WRITE_VERBS,
  accountExists,
  adminConnection,
  cleanUp,
  createInstance,
  databaseUser,
  eventsFor,
  isSqlWrite,
  leftovers,
  q,
  readyOf,
  secret,
  showGrants,
  startManager,
  suffix,
  tryLogin,
  waitReady,
  type RunningManager,
} from "./support.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("database-user operator", () => {
  const id = suffix();
  const db = `dbu_${id}`; // "_" on purpose: a literal name, escaped as a grant pattern
  const otherDb = `dbu_${id}_other`;
  const passwords: string[] = [];
  const accounts: string[] = [];
  let ns: string;
  let admin: mysql.Connection;
  let running: RunningManager;
  const stoppedLogs: string[] = [];
  const left = leftovers();

  const password = () => {
    const p = `pw-${suffix()}${suffix()}'"\\x`; // quotes and a backslash: escaped as a value, never SQL
    passwords.push(p);
    return p;
  };
  const user = (name: string) => {
    const u = `${name}_${id}`;
    accounts.push(u);
    return u;
  };

  beforeAll(async () => {
    ns = await freshNamespace(client, "dbu");
    left.namespaces.push(ns);
    left.databases.push(db, otherDb);
    admin = await adminConnection(env.mysql);
    for (const d of [db, otherDb]) {
      await admin.query(`CREATE DATABASE ${q(d)}`);
      await admin.query(`CREATE TABLE ${q(d)}.orders (id INT PRIMARY KEY)`);
      await admin.query(`INSERT INTO ${q(d)}.orders VALUES (1), (2)`);
    }
    // The manager installs the CRDs.
    running = await startManager(env.kubeconfig, { namespaces: [ns], operator: { driftCheckIntervalMs: 2_000 } });
    await createInstance(client, env.mysql, ns, "db");
  });

  afterAll(async () => {
    left.managers.push(running);
    left.accounts.push(...accounts.map((a) => ({ user: a, host: "%" })));
    await admin.end();
    await cleanUp(client, env.mysql, left);
  });

  it("creates the account: it logs in with the Secret's password and SHOW GRANTS is exactly the spec", async () => {
    const name = user("app");
    const pw = password();
    await client.create(builtin.secret, secret(ns, "app-db", { password: pw }));
    await client.create(
      DBU,
      databaseUser(ns, "app", {
        instanceRef: { name: "db" },
        user: name,
        passwordSecretRef: { name: "app-db" },
        grants: [
          { privileges: ["SELECT", "INSERT"], database: db },
          { privileges: ["SELECT"], database: otherDb, table: "orders", withGrantOption: true },
        ],
      }),
    );
    const ready = await waitReady(client, ns, "app", 1);
    expect(readyOf(ready)).toMatchObject({ reason: "AccountReady" });
    expect(ready.status).toMatchObject({ user: name, host: "%" });
    expect(ready.metadata.finalizers).toContain("stateward.io/drop-account");

    expect(await tryLogin(env.mysql, name, pw)).toBe("ok");
    expect(await tryLogin(env.mysql, name, `${pw}x`)).toBe("ER_ACCESS_DENIED_ERROR");
    expect(await showGrants(admin, name)).toEqual([
      `GRANT SELECT, INSERT ON \`dbu\\_${id}\`.* TO \`${name}\`@\`%\``,
      `GRANT SELECT ON \`${otherDb}\`.\`orders\` TO \`${name}\`@\`%\` WITH GRANT OPTION`,
    ]);
    // The grant is on exactly that database: "_" is not a wildcard.
    await admin.query(`CREATE DATABASE IF NOT EXISTS ${q(`dbuX${id}`)}`);
    try {
      const [rows] = await admin.query(`SELECT 1 FROM mysql.db WHERE User = ? AND ? LIKE Db`, [name, `dbuX${id}`]);
      expect(rows).toEqual([]);
    } finally {
      await admin.query(`DROP DATABASE ${q(`dbuX${id}`)}`);
    }

    // Written in the background after Ready (as client-go's recorder does), so waited for.
    const updated = await waitFor("the AccountUpdated event", async () => (await eventsFor(client, ns, "app")).find((e) => e.reason === "AccountUpdated"));
    expect(updated.note).toMatch(/^Created the account; granted SELECT, INSERT on/);

    // kubectl shows the columns of the issue.
    const { stdout } = await run(tools.kubectl(), ["--kubeconfig", env.kubeconfig, "-n", ns, "get", "dbu", "app"]);
    const [header, row] = stdout.trim().split("\n");
    expect(header?.split(/\s+/)).toEqual(["NAME", "USER", "HOST", "INSTANCE", "READY", "REASON", "AGE"]);
    expect(row?.split(/\s+/).slice(0, 6)).toEqual(["app", name, "%", "db", "True", "AccountReady"]);
  });

  it("converges edited grants, granting before revoking, while a connection keeps querying", async () => {
    const name = user("worker");
    const pw = password();
    await client.create(builtin.secret, secret(ns, "worker-db", { password: pw }));
    await client.create(
      DBU,
      databaseUser(ns, "worker", {
        instanceRef: { name: "db" },
        user: name,
        passwordSecretRef: { name: "worker-db" },
        grants: [{ privileges: ["SELECT"], database: db, table: "orders" }],
      }),
    );
    await waitReady(client, ns, "worker", 1);

    // A client of the application: one connection, querying without pause.
    const mysql2 = await import("mysql2/promise");
    const app = await mysql2.createConnection({ host: env.mysql.host, port: env.mysql.port, user: name, password: pw });
    const errors: string[] = [];
    let queries = 0;
    let stop = false;
    const loop = (async () => {
      while (!stop) {
        try {
          await app.query(`SELECT COUNT(*) FROM ${q(db)}.orders`);
          queries++;
        } catch (err) {
          errors.push((err as Error).message);
        }
      }
    })();

    const steps: { grants: DatabaseUser["spec"]["grants"]; expected: string[] }[] = [
      {
        // Table -> database level, plus INSERT: SELECT must never lapse.
        grants: [{ privileges: ["SELECT", "INSERT"], database: db }],
        expected: [`GRANT SELECT, INSERT ON \`dbu\\_${id}\`.* TO \`${name}\`@\`%\``],
      },
      {
        // Remove INSERT, add another database.
        grants: [
          { privileges: ["SELECT"], database: db },
          { privileges: ["SELECT", "UPDATE"], database: otherDb },
        ],
        expected: [`GRANT SELECT ON \`dbu\\_${id}\`.* TO \`${name}\`@\`%\``, `GRANT SELECT, UPDATE ON \`dbu\\_${id}\\_other\`.* TO \`${name}\`@\`%\``],
      },
      {
        // Back to the table; the other database goes away.
        grants: [{ privileges: ["SELECT"], database: db, table: "orders" }],
        expected: [`GRANT SELECT ON \`${db}\`.\`orders\` TO \`${name}\`@\`%\``],
      },
      {
        // ALL PRIVILEGES, then all of them but DROP: only DROP is revoked.
        grants: [{ privileges: ["ALL PRIVILEGES"], database: db }],
        expected: [`GRANT ALL PRIVILEGES ON \`dbu\\_${id}\`.* TO \`${name}\`@\`%\``],
      },
    ];
    let generation = 1;
    for (const step of steps) {
      await client.patch(DBU, ns, "worker", { spec: { grants: step.grants } });
      generation++;
      await waitReady(client, ns, "worker", generation);
      expect((await showGrants(admin, name)).sort()).toEqual([...step.expected].sort());
    }
    stop = true;
    await loop;
    await app.end();
    expect(errors).toEqual([]);
    expect(queries).toBeGreaterThan(50);

    // In every transition, the grants were logged before the revokes.
    const order = running.logs
      .lines()
      .filter((l) => l.name === "worker" && (l.msg === "granted" || l.msg === "revoked"))
      .map((l) => `${String(l.reconcileID)}:${String(l.msg)}`);
    const byReconcile = new Map<string, string[]>();
    for (const entry of order) {
      const [rid, msg] = entry.split(":") as [string, string];
      byReconcile.set(rid, [...(byReconcile.get(rid) ?? []), msg]);
    }
    expect(byReconcile.size).toBeGreaterThanOrEqual(3);
    for (const msgs of byReconcile.values()) {
      expect(msgs.indexOf("revoked") === -1 || msgs.lastIndexOf("granted") < msgs.indexOf("revoked")).toBe(true);
    }
  });

  it("revokes from ALL PRIVILEGES only what is no longer wanted", async () => {
    const name = accounts.find((a) => a.startsWith("worker_"))!;
    await client.patch(DBU, ns, "worker", {
      spec: {
        grants: [
          {
            privileges: [
              "SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "REFERENCES", "INDEX", "ALTER", "CREATE TEMPORARY TABLES", "LOCK TABLES",
              "EXECUTE", "CREATE VIEW", "SHOW VIEW", "CREATE ROUTINE", "ALTER ROUTINE", "EVENT", "TRIGGER", "DELETE HISTORY",
            ],
            database: db,
          },
        ],
      },
    });
    const u = await waitFor("worker converged", async () => {
      const w = await client.get<DatabaseUser>(DBU, ns, "worker");
      return readyOf(w)?.status === "True" && readyOf(w)?.observedGeneration === w.metadata.generation ? w : undefined;
    });
    expect(u.status?.conditions).toBeDefined();
    const lines = await showGrants(admin, name);
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain("DROP");
    expect(lines[0]).toContain("DELETE HISTORY");
    const revoked = running.logs.lines().filter((l) => l.name === "worker" && l.msg === "revoked").at(-1);
    expect(revoked?.change).toBe(`revoked DROP on \`dbu\\_${id}\`.*`);
  });

  it("rotates the password within seconds of a Secret change: the old one stops working, the new one works", async () => {
    const name = accounts.find((a) => a.startsWith("app_"))!;
    const before = await client.get<DatabaseUser>(DBU, ns, "app");
    const old = passwords[0]!;
    const fresh = password();
    const started = Date.now();
    await client.patch(builtin.secret, ns, "app-db", { stringData: { password: fresh } });
    await waitFor("new password works", async () => ((await tryLogin(env.mysql, name, fresh)) === "ok" ? true : undefined), 15_000, 200);
    const seconds = (Date.now() - started) / 1000;
    expect(seconds).toBeLessThan(10);
    expect(await tryLogin(env.mysql, name, old)).toBe("ER_ACCESS_DENIED_ERROR");
    const after = await waitFor("status records the new Secret version", async () => {
      const u = await client.get<DatabaseUser>(DBU, ns, "app");
      return u.status?.passwordSecretVersion !== before.status?.passwordSecretVersion ? u : undefined;
    });
    expect(after.status?.passwordFingerprint).toMatch(/^hmac-sha256:/);
    expect(after.status?.passwordFingerprint).not.toBe(before.status?.passwordFingerprint);

    // A change to the Secret that keeps the password (a label) rotates nothing.
    const sqlBefore = running.statements.filter(isSqlWrite).length;
    await client.patch(builtin.secret, ns, "app-db", { metadata: { labels: { touched: "yes" } } });
    await waitFor("status records the relabelled Secret", async () => {
      const u = await client.get<DatabaseUser>(DBU, ns, "app");
      return u.status?.passwordSecretVersion !== after.status?.passwordSecretVersion ? u : undefined;
    });
    expect(running.statements.filter(isSqlWrite).length).toBe(sqlBefore);
  });

  it("repairs drift: a privilege granted by hand is revoked, one revoked by hand is restored, a password set by hand is reset", async () => {
    const name = accounts.find((a) => a.startsWith("app_"))!;
    const current = await client.get<KubeObject & { data: Record<string, string> }>(builtin.secret, ns, "app-db");
    const pw = Buffer.from(current.data.password ?? "", "base64").toString("utf8");
    await admin.query(`ALTER USER ${q(name)}@'%' IDENTIFIED BY 'set-by-hand'`);
    await admin.query(`GRANT DELETE ON ${q(db.replaceAll("_", "\\_"))}.* TO ${q(name)}@'%'`);
    await admin.query(`REVOKE SELECT ON ${q(otherDb)}.orders FROM ${q(name)}@'%'`);
    expect(await showGrants(admin, name)).toEqual([
      `GRANT SELECT, INSERT, DELETE ON \`dbu\\_${id}\`.* TO \`${name}\`@\`%\``,
      `GRANT USAGE ON \`${otherDb}\`.\`orders\` TO \`${name}\`@\`%\` WITH GRANT OPTION`,
    ]);
    await waitFor(
      "drift repaired",
      async () => {
        const lines = await showGrants(admin, name);
        return lines.length === 2 && lines[0] === `GRANT SELECT, INSERT ON \`dbu\\_${id}\`.* TO \`${name}\`@\`%\`` &&
          lines[1] === `GRANT SELECT ON \`${otherDb}\`.\`orders\` TO \`${name}\`@\`%\` WITH GRANT OPTION`
          ? true
          : undefined;
      },
      15_000,
    );
    await waitFor("password reset", async () => ((await tryLogin(env.mysql, name, pw)) === "ok" ? true : undefined), 15_000, 200);
    expect(await tryLogin(env.mysql, name, "set-by-hand")).toBe("ER_ACCESS_DENIED_ERROR");
  });

  it("adopts an account that already exists (adoptExisting), converging its password and grants", async () => {
    const name = user("legacy");
    await admin.query(`CREATE USER ${q(name)}@'%' IDENTIFIED BY 'old-legacy-password'`);
    await admin.query(`GRANT SELECT, DELETE ON ${q(otherDb)}.* TO ${q(name)}@'%'`);
    const pw = password();
    await client.create(builtin.secret, secret(ns, "legacy-db", { pass: pw }));
    await client.create(
      DBU,
      databaseUser(ns, "legacy", {
        instanceRef: { name: "db" },
        user: name,
        adoptExisting: true,
        passwordSecretRef: { name: "legacy-db", key: "pass" },
        grants: [{ privileges: ["SELECT"], database: otherDb }],
        maxUserConnections: 3,
        tlsRequirement: "SSL",
      }),
    );
    await waitReady(client, ns, "legacy", 1);
    expect(await tryLogin(env.mysql, name, "old-legacy-password")).toBe("ER_ACCESS_DENIED_ERROR");
    const [rows] = await admin.query("SELECT ssl_type AS t, max_user_connections AS m FROM mysql.user WHERE User = ? AND Host = '%'", [name]);
    expect(rows).toEqual([{ t: "ANY", m: 3 }]);
    expect(await showGrants(admin, name)).toEqual([`GRANT SELECT ON \`dbu\\_${id}\\_other\`.* TO \`${name}\`@\`%\``]);
    const adopted = await waitFor("the AccountUpdated event", async () => (await eventsFor(client, ns, "legacy")).find((e) => e.reason === "AccountUpdated"));
    expect(adopted.note).toMatch(/Adopted the existing account; set the password; set REQUIRE SSL and MAX_USER_CONNECTIONS 3/);

    // Limits back to none: the account can log in without TLS again.
    await client.patch(DBU, ns, "legacy", { spec: { maxUserConnections: 0, tlsRequirement: "None" } });
    await waitReady(client, ns, "legacy", 2);
    expect(await tryLogin(env.mysql, name, pw)).toBe("ok");
  });

  it("makes no API writes and no SQL writes once converged, and none after a restart either", async () => {
    for (const name of ["app", "worker", "legacy"]) await waitReady(client, ns, name);
    await sleep(1_000);
    const apiBefore = running.requests.filter((r) => WRITE_VERBS.has(r.verb)).length;
    const sqlBefore = running.statements.length;
    await sleep(3_000); // longer than the drift check interval: drift checks read, never write
    expect(running.requests.filter((r) => WRITE_VERBS.has(r.verb)).slice(apiBefore)).toEqual([]);
    const since = running.statements.slice(sqlBefore);
    expect(since.filter(isSqlWrite)).toEqual([]);
    expect(since.some((s) => s.sql.startsWith("SHOW GRANTS"))).toBe(true);

    await running.stop();
    left.managers.push(running);
    stoppedLogs.push(running.logs.text());
    running = await startManager(env.kubeconfig, { namespaces: [ns], operator: { driftCheckIntervalMs: 60_000 } });
    await sleep(3_000);
    expect(running.requests.filter((r) => WRITE_VERBS.has(r.verb))).toEqual([]);
    // Converged accounts are not even looked at until their drift check is due.
    expect(running.statements.filter((s) => !s.sql.startsWith("SELECT VERSION()"))).toEqual([]);
  });

  it("drops the account on delete, keeps it with deletionPolicy Retain; the object goes away in both cases", async () => {
    const app = accounts.find((a) => a.startsWith("app_"))!;
    const legacy = accounts.find((a) => a.startsWith("legacy_"))!;
    await client.delete(DBU, ns, "app");
    await waitGone(client, DBU, ns, "app");
    expect(await accountExists(admin, app)).toBe(false);

    await client.patch(DBU, ns, "legacy", { spec: { deletionPolicy: "Retain" } });
    await waitFor("finalizer released for Retain", async () => {
      const u = await client.get<DatabaseUser>(DBU, ns, "legacy");
      return (u.metadata.finalizers ?? []).length === 0 ? u : undefined;
    });
    await client.delete(DBU, ns, "legacy");
    await waitGone(client, DBU, ns, "legacy");
    expect(await accountExists(admin, legacy)).toBe(true);
    const events = await eventsFor(client, ns, "app");
    expect(events.some((e) => e.reason === "AccountDropped")).toBe(true);
  });

  it("never writes a password into a log line, an event, a condition or a status", async () => {
    const logs = [...stoppedLogs, running.logs.text()].join("\n");
    const objects = JSON.stringify([
      ...(await client.list<KubeObject>(DBU, { namespace: ns })).items,
      ...(await client.list<KubeObject>(MYI, { namespace: ns })).items,
      ...(await client.list<KubeObject>(builtin.event, { namespace: ns })).items,
    ]);
    expect(passwords.length).toBeGreaterThanOrEqual(4);
    for (const p of passwords) {
      for (const form of [p, JSON.stringify(p).slice(1, -1), Buffer.from(p).toString("base64")]) {
        expect(logs).not.toContain(form);
        expect(objects).not.toContain(form);
      }
    }
  });
});
