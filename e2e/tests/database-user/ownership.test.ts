// Which accounts a DatabaseUser may take over, against the real control plane
// and MariaDB: never the instance's admin account or a system account (refused, the
// account untouched and still usable); an account that already exists only
// with spec.adoptExisting (otherwise AccountExists, its password and grants
// unchanged, and deleting the DatabaseUser leaves it); with the opt-in it is
// adopted and, on delete, dropped. The account it creates is claimed on the
// object right before CREATE USER, in the request that adds the finalizer (3 API
// writes per new account): a status write lost after CREATE USER leaves the
// account its own; a claim copied from another object claims nothing; a CREATE USER the server
// refuses leaves no claim behind.
import { builtin } from "@stateward/core";
import { ACCOUNT_CREATED_BY, type DatabaseUser } from "@stateward/operator-database-user";
import type mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freshNamespace, testClient, waitGone } from "../../support/kube.ts";
import { refuseWrites } from "../../support/refused-writes.ts";
import { waitFor } from "../../support/wait.ts";
import {
  DBU,
  MYI,
  WRITE_VERBS,
  accountExists,
  adminConnection,
  cleanUp,
  databaseUser,
  eventsFor,
  instance,
  leftovers,
  q,
  readyOf,
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

  /** Deletes the DatabaseUser, waits until it is gone, and says what became of its account. */
  const deleteUser = async (name: string, account: string): Promise<"dropped" | "kept"> => {
    await client.delete(DBU, ns, name);
    await waitGone(client, DBU, ns, name);
    return (await accountExists(admin, account)) ? "kept" : "dropped";
  };

  afterAll(async () => {
    await admin.end();
    await cleanUp(client, env.mysql, left);
  });

  // System accounts by name on hosts where the shared server has none: mysql.infoschema@localhost,
  // which MariaDB does not have, and mysql@% (MariaDB's `mysql` superuser is mysql@localhost) — on a
  // release without protection the test then only creates and drops them, where root or mysql@localhost
  // would lose their password and grants on the shared server.
  it("refuses the instance's admin account and the system accounts: nothing changes, deleting the DatabaseUser drops nothing", async () => {
    left.accounts.push({ user: "mysql", host: "%" });
    await client.create(builtin.secret, secret(ns, "hijack", { password: "Hijacked-1" }));
    const grantsBefore = await showGrants(admin, adminUser);
    await client.create(DBU, databaseUser(ns, "hijack-admin", { instanceRef: { name: "db" }, user: adminUser, passwordSecretRef: { name: "hijack" }, grants: [] }));
    await client.create(DBU, databaseUser(ns, "hijack-system", { instanceRef: { name: "db" }, user: "mysql.infoschema", host: "localhost", passwordSecretRef: { name: "hijack" }, grants: [] }));
    await client.create(DBU, databaseUser(ns, "hijack-mariadb", { instanceRef: { name: "db" }, user: "mysql", adoptExisting: true, passwordSecretRef: { name: "hijack" }, grants: [] }));

    const refused = await waitNotReady(client, ns, "hijack-admin", "ProtectedAccount");
    expect(refused.status?.conditions?.find((c) => c.type === "Ready")?.message).toMatch(/admin account of the MySQLInstance/);
    await waitNotReady(client, ns, "hijack-system", "ProtectedAccount");
    expect(readyOf(await waitNotReady(client, ns, "hijack-mariadb", "ProtectedAccount"))?.message).toMatch(/'mysql' is a system account of the server/);
    expect((await eventsFor(client, ns, "hijack-admin")).some((e) => e.reason === "ProtectedAccount" && e.type === "Warning")).toBe(true);

    await sleep(3_000); // past a drift check
    expect(await tryLogin(env.mysql, adminUser, adminPassword)).toBe("ok");
    expect(await tryLogin(env.mysql, adminUser, "Hijacked-1")).toBe("ER_ACCESS_DENIED_ERROR");
    expect(await showGrants(admin, adminUser)).toEqual(grantsBefore);

    // The default deletionPolicy is Delete: still, no account is dropped.
    for (const name of ["hijack-admin", "hijack-system", "hijack-mariadb"]) {
      await client.delete(DBU, ns, name);
      await waitGone(client, DBU, ns, name);
    }
    expect(await accountExists(admin, adminUser)).toBe(true);
    expect(await tryLogin(env.mysql, adminUser, adminPassword)).toBe("ok");
    expect(await accountExists(admin, "mysql.infoschema", "localhost")).toBe(false); // never created either
    expect(await accountExists(admin, "mysql")).toBe(false);
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

    expect(await deleteUser("legacy", name)).toBe("kept");
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

    expect(await deleteUser("adopted", name)).toBe("dropped");
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
    expect(await deleteUser("upgraded", name)).toBe("dropped");
  });

  it("records an account it created as Created, and drops it on delete", async () => {
    const name = `fresh_${id}`;
    left.accounts.push({ user: name, host: "%" });
    await client.create(builtin.secret, secret(ns, "fresh", { password: "Fresh-Password-1" }));
    await client.create(DBU, databaseUser(ns, "fresh", { instanceRef: { name: "db" }, user: name, passwordSecretRef: { name: "fresh" }, grants: [] }));
    expect((await waitReady(client, ns, "fresh")).status?.accountOrigin).toBe("Created");
    expect(await deleteUser("fresh", name)).toBe("dropped");
  });

  it("creates an account with 3 API writes (the finalizer with the creation claim, the status, the event) in one reconcile", async () => {
    const name = `counted_${id}`;
    left.accounts.push({ user: name, host: "%" });
    await client.create(builtin.secret, secret(ns, "counted", { password: "Counted-Password-1" }));
    await sleep(500); // the Secret's event reaches no DatabaseUser: nothing of it is counted below
    const before = running.requests.length;
    await client.create(DBU, databaseUser(ns, "counted", { instanceRef: { name: "db" }, user: name, passwordSecretRef: { name: "counted" }, grants: [{ privileges: ["SELECT"], database: db }] }));
    const ready = await waitReady(client, ns, "counted");
    // A reconcile its own writes cause runs right after the one that made them; the drift check
    // (driftCheckIntervalMs, 2 s) only later: counted here, in between (the manager logs each at debug).
    await sleep(700);
    const reconciled = running.logs.lines().filter((l) => l.controller === "databaseuser" && l.name === "counted" && l.msg === "reconciled").length;
    await waitFor("the AccountUpdated event", async () => ((await eventsFor(client, ns, "counted")).some((e) => e.reason === "AccountUpdated") ? true : undefined));
    await sleep(1_500); // the reconciles its own writes cause: converged, they write nothing
    const own = `/namespaces/${ns}/databaseusers/counted`;
    const writes = running.requests
      .slice(before)
      .filter((r) => WRITE_VERBS.has(r.verb))
      // The fingerprint key's Secret is written once per operator, by whichever user needs it first.
      .filter((r) => !r.path.includes("/secrets"))
      .map((r) => `${r.verb} ${r.path.replace(own, "/<user>").replace(`/namespaces/${ns}/`, "/<ns>/")}`);
    expect(writes).toEqual(["PATCH /apis/stateward.io/v1alpha1/<user>", "PUT /apis/stateward.io/v1alpha1/<user>/status", "POST /apis/events.k8s.io/v1/<ns>/events"]);
    // Its own writes (the claim, the status) wake it no more: one reconcile, as controller-runtime's.
    expect(reconciled).toBe(1);
    expect(ready.metadata.annotations?.[ACCOUNT_CREATED_BY]).toBe(ready.metadata.uid);
    expect(ready.metadata.finalizers).toContain("stateward.io/drop-account");
    expect(ready.status?.accountOrigin).toBe("Created");
    expect(await tryLogin(env.mysql, name, "Counted-Password-1")).toBe("ok");
  });

  // The crash window the claim is for, for real: CREATE USER runs, then every status write is refused
  // (a ValidatingAdmissionPolicy on databaseusers/status), as if the operator had stopped before it.
  it("keeps an account it created when the status saying so was never written, and drops it on delete", async () => {
    const name = `unrecorded_${id}`;
    const policy = `dbu-status-refused-${id}`;
    const label = "test.stateward.io/status-refused";
    left.accounts.push({ user: name, host: "%" });
    // In force once a status write on a labelled object in a namespace no manager watches is refused.
    const probeNs = await freshNamespace(client, "dbu-probe");
    left.namespaces.push(probeNs);
    await client.create<DatabaseUser>(DBU, databaseUser(probeNs, "probe", { instanceRef: { name: "none" }, passwordSecretRef: { name: "none" } }, { [label]: id }));
    const refused = await refuseWrites(
      client,
      { name: policy, resource: "databaseusers/status", allowedWhen: "false", message: "status writes refused by the test", label: { key: label, value: id } },
      async () => client.updateStatus(DBU, { ...(await client.get<DatabaseUser>(DBU, probeNs, "probe")), status: { user: `probe-${Date.now()}` } }),
    );
    try {
      await client.create(builtin.secret, secret(ns, "unrecorded", { password: "Unrecorded-1" }));
      await client.create(DBU, databaseUser(ns, "unrecorded", { instanceRef: { name: "db" }, user: name, passwordSecretRef: { name: "unrecorded" }, grants: [] }, { [label]: id }));
      await waitFor("CREATE USER", async () => ((await accountExists(admin, name)) ? true : undefined));
      await sleep(1_000);
      const unrecorded = await client.get<DatabaseUser>(DBU, ns, "unrecorded");
      expect(unrecorded.status?.accountOrigin).toBeUndefined();
      expect(unrecorded.metadata.annotations?.[ACCOUNT_CREATED_BY]).toBe(unrecorded.metadata.uid);
    } finally {
      await refused.lift();
    }

    // Status writes allowed again: the account is its own (no AccountExists), recorded as Created.
    const ready = await waitReady(client, ns, "unrecorded", undefined, 60_000);
    expect(ready.status?.accountOrigin).toBe("Created");
    expect((await eventsFor(client, ns, "unrecorded")).map((e) => e.reason)).not.toContain("AccountExists");
    expect(await tryLogin(env.mysql, name, "Unrecorded-1")).toBe("ok");
    expect(await deleteUser("unrecorded", name)).toBe("dropped");
  });

  it("claims nothing with a creation claim copied from another object: an existing account stays untouched and is not dropped", async () => {
    const name = `copied_${id}`;
    left.accounts.push({ user: name, host: "%" });
    await admin.query(`CREATE USER ${q(name)}@'%' IDENTIFIED BY 'Copied-Old-1'`);
    await client.create(builtin.secret, secret(ns, "copied", { password: "Copied-New-1" }));
    // As `kubectl get -o yaml` of another DatabaseUser, applied under a new name: its annotation comes along.
    const copied = databaseUser(ns, "copied", { instanceRef: { name: "db" }, user: name, passwordSecretRef: { name: "copied" }, grants: [] });
    copied.metadata.annotations = { [ACCOUNT_CREATED_BY]: "0f6b3a52-8d1e-4c57-9a0e-5b1f2c3d4e5f" };
    await client.create(DBU, copied);
    await waitNotReady(client, ns, "copied", "AccountExists");
    await sleep(1_000);
    expect(await tryLogin(env.mysql, name, "Copied-Old-1")).toBe("ok");
    expect(await deleteUser("copied", name)).toBe("kept");
    expect((await eventsFor(client, ns, "copied")).map((e) => e.reason)).toContain("AccountNotDropped");
  });

  // A CREATE USER the server refuses, for real: the instance's admin may read the grant tables but not
  // create accounts. While the DatabaseUser waits, someone creates an account of that name by hand, and
  // the instance is given an admin that may change it: that account is not the DatabaseUser's to take.
  it("withdraws its creation claim when the server refuses CREATE USER: an account made by hand meanwhile is not taken over", async () => {
    const name = `refused_${id}`;
    const limited = `lim_${id}`;
    const limitedPassword = `Lim-${suffix()}${suffix()}`;
    left.accounts.push({ user: name, host: "%" }, { user: limited, host: "%" });
    await admin.query(`CREATE USER ${q(limited)}@'%' IDENTIFIED BY ?`, [limitedPassword]);
    await admin.query(`GRANT SELECT ON mysql.* TO ${q(limited)}@'%'`);
    await client.create(builtin.secret, secret(ns, "limited-admin", { username: limited, password: limitedPassword }));
    await client.create(MYI, instance(ns, "limited", { host: env.mysql.host, port: env.mysql.port, adminSecret: "limited-admin" }));
    await client.create(builtin.secret, secret(ns, "refused", { password: "Refused-New-1" }));
    await client.create(DBU, databaseUser(ns, "refused", { instanceRef: { name: "limited" }, user: name, passwordSecretRef: { name: "refused" }, grants: [] }));

    const failed = await waitNotReady(client, ns, "refused", "InsufficientPrivileges");
    expect(readyOf(failed)?.message).toMatch(/CREATE USER/);
    expect(await accountExists(admin, name)).toBe(false);

    await admin.query(`CREATE USER ${q(name)}@'%' IDENTIFIED BY 'Refused-Old-1'`);
    await client.patch(MYI, ns, "limited", { spec: { adminSecretRef: { name: "db-admin" } } }); // wakes the DatabaseUser
    const refused = await waitNotReady(client, ns, "refused", "AccountExists");
    await sleep(3_000); // past a drift check
    expect(await tryLogin(env.mysql, name, "Refused-Old-1")).toBe("ok");
    expect(await tryLogin(env.mysql, name, "Refused-New-1")).toBe("ER_ACCESS_DENIED_ERROR");
    expect(refused.metadata.annotations?.[ACCOUNT_CREATED_BY]).toBeUndefined(); // nothing was created: nothing is claimed
    expect(await deleteUser("refused", name)).toBe("kept");
  });
});
