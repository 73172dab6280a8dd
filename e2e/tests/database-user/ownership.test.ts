// Which accounts a DatabaseUser may take over, against the real control plane
// and MariaDB: never the instance's admin account or a system account (refused, the
// account untouched and still usable); an account that already exists only
// with spec.adoptExisting (otherwise AccountExists, its password and grants
// unchanged, and deleting the DatabaseUser leaves it); with the opt-in it is
// adopted and, on delete, dropped.
import { builtin } from "@stateward/core";
import type { DatabaseUser } from "@stateward/operator-database-user";
import type mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freshNamespace, testClient, waitGone } from "../../support/kube.ts";
import {
  DBU,
  MYI,
  accountExists,
  adminConnection,
  cleanUp,
  databaseUser,
  eventsFor,
  instance,
  leftovers,
  q,
  secret,
  showGrants,
  startManager,
  suffix,
  tryLogin,
  waitNotReady,
  waitReady,
  type RunningManager,
} from "./support.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("database-user: accounts it does not own", () => {
  const id = suffix();
  const db = `own_${id}`;
  const adminUser = `adm_${id}`;
  const adminPassword = `Adm-${suffix()}${suffix()}`;
  let ns: string;
  let admin: mysql.Connection;
  let running: RunningManager;
  const left = leftovers();

  beforeAll(async () => {
    ns = await freshNamespace(client, "dbu-own");
    left.namespaces.push(ns);
    left.databases.push(db);
    left.accounts.push({ user: adminUser, host: "%" });
    admin = await adminConnection(env.mysql);
    await admin.query(`CREATE DATABASE ${q(db)}`);
    // The instance's admin account: an account of its own, so that refusing it is not refusing "root".
    await admin.query(`CREATE USER ${q(adminUser)}@'%' IDENTIFIED BY ?`, [adminPassword]);
    await admin.query(`GRANT ALL PRIVILEGES ON *.* TO ${q(adminUser)}@'%' WITH GRANT OPTION`);
    running = await startManager(env.kubeconfig, { namespaces: [ns], operator: { driftCheckIntervalMs: 2_000 } });
    left.managers.push(running);
    await client.create(builtin.secret, secret(ns, "db-admin", { username: adminUser, password: adminPassword }));
    await client.create(MYI, instance(ns, "db", { host: env.mysql.host, port: env.mysql.port, adminSecret: "db-admin" }));
  });

  afterAll(async () => {
    await admin.end();
    await cleanUp(client, env.mysql, left);
  });

  // A system account by name: mysql.infoschema, which MariaDB does not have — on a release without
  // protection the test then only creates and drops it, where root would lose its password and
  // grants on the shared server.
  it("refuses the instance's admin account and the system accounts: nothing changes, deleting the DatabaseUser drops nothing", async () => {
    await client.create(builtin.secret, secret(ns, "hijack", { password: "Hijacked-1" }));
    const grantsBefore = await showGrants(admin, adminUser);
    await client.create(DBU, databaseUser(ns, "hijack-admin", { instanceRef: { name: "db" }, user: adminUser, passwordSecretRef: { name: "hijack" }, grants: [] }));
    await client.create(DBU, databaseUser(ns, "hijack-system", { instanceRef: { name: "db" }, user: "mysql.infoschema", host: "localhost", passwordSecretRef: { name: "hijack" }, grants: [] }));

    const refused = await waitNotReady(client, ns, "hijack-admin", "ProtectedAccount");
    expect(refused.status?.conditions?.find((c) => c.type === "Ready")?.message).toMatch(/admin account of the MySQLInstance/);
    await waitNotReady(client, ns, "hijack-system", "ProtectedAccount");
    expect((await eventsFor(client, ns, "hijack-admin")).some((e) => e.reason === "ProtectedAccount" && e.type === "Warning")).toBe(true);

    await sleep(3_000); // past a drift check
    expect(await tryLogin(env.mysql, adminUser, adminPassword)).toBe("ok");
    expect(await tryLogin(env.mysql, adminUser, "Hijacked-1")).toBe("ER_ACCESS_DENIED_ERROR");
    expect(await showGrants(admin, adminUser)).toEqual(grantsBefore);

    // The default deletionPolicy is Delete: still, neither account is dropped.
    for (const name of ["hijack-admin", "hijack-system"]) {
      await client.delete(DBU, ns, name);
      await waitGone(client, DBU, ns, name);
    }
    expect(await accountExists(admin, adminUser)).toBe(true);
    expect(await tryLogin(env.mysql, adminUser, adminPassword)).toBe("ok");
    expect(await accountExists(admin, "mysql.infoschema", "localhost")).toBe(false); // never created either
    expect((await client.get(MYI, ns, "db")).metadata.name).toBe("db");
  });

  it("leaves an existing account alone without adoptExisting (AccountExists), and does not drop it on delete", async () => {
    const name = `legacy_${id}`;
    left.accounts.push({ user: name, host: "%" });
    await admin.query(`CREATE USER ${q(name)}@'%' IDENTIFIED BY 'Old-Password-1'`);
    await admin.query(`GRANT SELECT, DELETE ON ${q(db)}.* TO ${q(name)}@'%'`);
    const grantsBefore = await showGrants(admin, name);
    await client.create(builtin.secret, secret(ns, "legacy", { password: "New-Password-1" }));
    await client.create(DBU, databaseUser(ns, "legacy", { instanceRef: { name: "db" }, user: name, passwordSecretRef: { name: "legacy" }, grants: [{ privileges: ["SELECT"], database: db }] }));

    const refused = await waitNotReady(client, ns, "legacy", "AccountExists");
    expect(refused.status?.conditions?.find((c) => c.type === "Ready")?.message).toMatch(/adoptExisting/);
    expect(refused.status?.accountOrigin).toBeUndefined();
    await sleep(3_000);
    expect(await tryLogin(env.mysql, name, "Old-Password-1")).toBe("ok");
    expect(await showGrants(admin, name)).toEqual(grantsBefore);

    await client.delete(DBU, ns, "legacy");
    await waitGone(client, DBU, ns, "legacy");
    expect(await accountExists(admin, name)).toBe(true);
    expect(await tryLogin(env.mysql, name, "Old-Password-1")).toBe("ok");
    expect((await eventsFor(client, ns, "legacy")).map((e) => e.reason)).toContain("AccountNotDropped");
  });

  it("adopts an existing account with adoptExisting, and drops it on delete", async () => {
    const name = `adopted_${id}`;
    left.accounts.push({ user: name, host: "%" });
    await admin.query(`CREATE USER ${q(name)}@'%' IDENTIFIED BY 'Old-Password-2'`);
    await admin.query(`GRANT SELECT, DELETE ON ${q(db)}.* TO ${q(name)}@'%'`);
    await client.create(builtin.secret, secret(ns, "adopted", { password: "New-Password-2" }));
    await client.create(
      DBU,
      databaseUser(ns, "adopted", { instanceRef: { name: "db" }, user: name, adoptExisting: true, passwordSecretRef: { name: "adopted" }, grants: [{ privileges: ["SELECT"], database: db }] }),
    );
    const ready = await waitReady(client, ns, "adopted");
    expect(ready.status?.accountOrigin).toBe("Adopted");
    expect(await tryLogin(env.mysql, name, "New-Password-2")).toBe("ok");
    expect(await tryLogin(env.mysql, name, "Old-Password-2")).toBe("ER_ACCESS_DENIED_ERROR");
    expect(await showGrants(admin, name)).toEqual([`GRANT SELECT ON ${q(db.replaceAll("_", "\\_"))}.* TO ${q(name)}@\`%\``]);

    await client.delete(DBU, ns, "adopted");
    await waitGone(client, DBU, ns, "adopted");
    expect(await accountExists(admin, name)).toBe(false);
  });

  it("keeps managing an account converged by a release without accountOrigin (upgrade), and drops it on delete", async () => {
    const name = `upgraded_${id}`;
    left.accounts.push({ user: name, host: "%" });
    await client.create(builtin.secret, secret(ns, "upgraded", { password: "Upgraded-1" }));
    await client.create(DBU, databaseUser(ns, "upgraded", { instanceRef: { name: "db" }, user: name, passwordSecretRef: { name: "upgraded" }, grants: [] }));
    const converged = await waitReady(client, ns, "upgraded");
    // What an earlier release left: the same status without accountOrigin.
    const { accountOrigin: _origin, ...legacy } = converged.status ?? {};
    await client.updateStatus(DBU, { ...converged, status: legacy });
    expect((await client.get<DatabaseUser>(DBU, ns, "upgraded")).status?.accountOrigin).toBeUndefined();

    // A spec change makes it look at the server again: the account is still its own.
    await client.patch(DBU, ns, "upgraded", { spec: { grants: [{ privileges: ["SELECT"], database: db }] } });
    const again = await waitReady(client, ns, "upgraded", 2);
    expect(again.status?.accountOrigin).toBe("Adopted");
    expect(await tryLogin(env.mysql, name, "Upgraded-1")).toBe("ok");
    await client.delete(DBU, ns, "upgraded");
    await waitGone(client, DBU, ns, "upgraded");
    expect(await accountExists(admin, name)).toBe(false);
  });

  it("records an account it created as Created, and drops it on delete", async () => {
    const name = `fresh_${id}`;
    left.accounts.push({ user: name, host: "%" });
    await client.create(builtin.secret, secret(ns, "fresh", { password: "Fresh-Password-1" }));
    await client.create(DBU, databaseUser(ns, "fresh", { instanceRef: { name: "db" }, user: name, passwordSecretRef: { name: "fresh" }, grants: [] }));
    expect((await waitReady(client, ns, "fresh")).status?.accountOrigin).toBe("Created");
    await client.delete(DBU, ns, "fresh");
    await waitGone(client, DBU, ns, "fresh");
    expect(await accountExists(admin, name)).toBe(false);
  });
});
