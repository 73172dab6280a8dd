// A MySQLInstance and the Secrets it logs in with stay while DatabaseUsers that
// drop their accounts on delete need them: deleting the namespace drops the
// accounts (before, the instance and its admin Secret were usually gone first
// and the accounts were left on the server, InstanceGone); an instance being
// deleted gets no new account; an admin Secret deleted or replaced is released
// once nothing needs it; a namespace whose server goes with it is not held for
// ever.
import { builtin, type KubeObject, type SecretAccess } from "@stateward/core";
import type { MySQLInstance } from "@stateward/mysql";
import { IN_USE_FINALIZER } from "@stateward/operator-database-user";
import type mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { TcpProxy } from "../../harness/index.ts";
import { freshNamespace, testClient, waitGone } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import {
  DBU,
  MYI,
  accountExists,
  adminConnection,
  cleanUp,
  createInstance,
  databaseUser,
  eventsFor,
  instance,
  leftovers,
  readyOf,
  secret,
  startManager,
  suffix,
  tryLogin,
  waitNotReady,
  waitReady,
} from "./support.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const holdsInUse = (o: KubeObject) => o.metadata.finalizers?.includes(IN_USE_FINALIZER) ?? false;

describe.each<{ secrets: SecretAccess }>([{ secrets: "watch" }, { secrets: "get" }])("deleting a namespace (--secrets $secrets)", ({ secrets }) => {
  const id = suffix();
  const left = leftovers();
  let admin: mysql.Connection;

  beforeAll(async () => {
    admin = await adminConnection(env.mysql);
  });

  afterAll(async () => {
    await admin.end();
    await cleanUp(client, env.mysql, left);
  });

  it("drops its DatabaseUsers' accounts: the instance and its admin Secret stay until they are dropped", async () => {
    const ns = await freshNamespace(client, "dbu-inuse");
    left.namespaces.push(ns);
    left.managers.push(await startManager(env.kubeconfig, { namespaces: [ns], secrets }));
    await createInstance(client, env.mysql, ns, "db");
    const users = [`ns_a_${id}`, `ns_b_${id}`];
    for (const [i, user] of users.entries()) {
      left.accounts.push({ user, host: "%" });
      await client.create(builtin.secret, secret(ns, `pw-${i}`, { password: `pw-${i}-${id}` }));
      await client.create(DBU, databaseUser(ns, `app-${i}`, { instanceRef: { name: "db" }, user, passwordSecretRef: { name: `pw-${i}` } }));
    }
    for (const [i, user] of users.entries()) {
      await waitReady(client, ns, `app-${i}`, 1);
      expect(await tryLogin(env.mysql, user, `pw-${i}-${id}`)).toBe("ok");
    }
    expect(holdsInUse(await client.get<MySQLInstance>(MYI, ns, "db"))).toBe(true);
    expect(holdsInUse(await client.get(builtin.secret, ns, "db-admin"))).toBe(true);

    // Everything in the namespace is deleted at once, in no order the operator chooses.
    await client.delete(builtin.namespace, undefined, ns);
    await waitGone(client, builtin.namespace, undefined, ns, 90_000);
    for (const user of users) expect(await accountExists(admin, user)).toBe(false);
  });
});

describe("a MySQLInstance and its Secrets in use", () => {
  const id = suffix();
  const left = leftovers();
  let ns: string;
  let admin: mysql.Connection;
  const account = (name: string) => {
    const user = `${name}_${id}`;
    left.accounts.push({ user, host: "%" });
    return user;
  };
  const user = async (name: string, instance: string) => {
    const u = account(name);
    await client.create(builtin.secret, secret(ns, `${name}-pw`, { password: `${name}-${id}` }));
    await client.create(DBU, databaseUser(ns, name, { instanceRef: { name: instance }, user: u, passwordSecretRef: { name: `${name}-pw` } }));
    return u;
  };

  beforeAll(async () => {
    ns = await freshNamespace(client, "dbu-inuse");
    left.namespaces.push(ns);
    left.managers.push(await startManager(env.kubeconfig, { namespaces: [ns] }));
    admin = await adminConnection(env.mysql);
  });

  afterAll(async () => {
    await admin.end();
    await cleanUp(client, env.mysql, left);
  });

  it("a deleted instance stays until its DatabaseUsers are deleted, and gets no new account meanwhile", async () => {
    await createInstance(client, env.mysql, ns, "kept");
    const kept = await user("kept", "kept");
    await waitReady(client, ns, "kept", 1);

    await client.delete(MYI, ns, "kept");
    const failed = await waitNotReady(client, ns, "kept", "InstanceBeingDeleted");
    expect(readyOf(failed)?.message).toBe(
      "MySQLInstance kept is being deleted: no account is created or changed on it; it is kept until the DatabaseUsers that drop their accounts on delete are deleted",
    );
    const late = await user("late", "kept");
    await waitNotReady(client, ns, "late", "InstanceBeingDeleted");
    expect(await accountExists(admin, late)).toBe(false);
    await sleep(1_000);
    expect((await client.get<MySQLInstance>(MYI, ns, "kept")).metadata.deletionTimestamp).toBeDefined();

    await client.delete(DBU, ns, "kept");
    await waitGone(client, DBU, ns, "kept");
    expect(await accountExists(admin, kept)).toBe(false);
    expect((await eventsFor(client, ns, "kept")).map((e) => e.reason)).toContain("AccountDropped");
    // "late" never created an account, yet holds the drop-account finalizer (it would say what became of one).
    await sleep(1_000);
    expect((await client.get<MySQLInstance>(MYI, ns, "kept")).metadata.deletionTimestamp).toBeDefined();
    await client.delete(DBU, ns, "late");
    await waitGone(client, MYI, ns, "kept");
    // The admin Secret, not deleted, is released with it.
    await waitFor("the admin Secret released", async () => (holdsInUse(await client.get(builtin.secret, ns, "kept-admin")) ? undefined : true));
  });

  it("a deleted admin Secret stays while DatabaseUsers need it (a password still rotates), and goes with the last of them", async () => {
    await createInstance(client, env.mysql, ns, "sec");
    const sec = await user("sec", "sec");
    await waitReady(client, ns, "sec", 1);
    await client.delete(builtin.secret, ns, "sec-admin");
    await sleep(1_000);
    expect((await client.get(builtin.secret, ns, "sec-admin")).metadata.deletionTimestamp).toBeDefined();

    await client.patch(builtin.secret, ns, "sec-pw", { stringData: { password: `rotated-${id}` } });
    await waitFor("the rotated password", async () => ((await tryLogin(env.mysql, sec, `rotated-${id}`)) === "ok" ? true : undefined));

    await client.delete(DBU, ns, "sec");
    await waitGone(client, DBU, ns, "sec");
    expect(await accountExists(admin, sec)).toBe(false);
    await waitGone(client, builtin.secret, ns, "sec-admin");
    // With no DatabaseUser left, nothing holds the instance either (deleting it needs no operator).
    await waitFor("the instance released", async () => (holdsInUse(await client.get<MySQLInstance>(MYI, ns, "sec")) ? undefined : true));
  });

  it("an instance whose finalizer is removed by hand goes, and its admin Secret is released", async () => {
    await createInstance(client, env.mysql, ns, "forced");
    await user("forced", "forced");
    await waitReady(client, ns, "forced", 1);
    expect(holdsInUse(await client.get(builtin.secret, ns, "forced-admin"))).toBe(true);
    await client.delete(MYI, ns, "forced");
    await client.patch(MYI, ns, "forced", { metadata: { finalizers: null } });
    await waitGone(client, MYI, ns, "forced");
    await waitFor("the admin Secret released", async () => (holdsInUse(await client.get(builtin.secret, ns, "forced-admin")) ? undefined : true));
  });

  it("an admin Secret the instance no longer names is released at once", async () => {
    await createInstance(client, env.mysql, ns, "swap");
    await user("swap", "swap");
    await waitReady(client, ns, "swap", 1);
    await client.create(builtin.secret, secret(ns, "swap-admin-2", { username: env.mysql.user, password: env.mysql.password }));
    await client.patch(MYI, ns, "swap", { spec: { adminSecretRef: { name: "swap-admin-2" } } });
    await waitFor("the new admin Secret protected", async () => (holdsInUse(await client.get(builtin.secret, ns, "swap-admin-2")) ? true : undefined));
    await waitFor("the old admin Secret released", async () => (holdsInUse(await client.get(builtin.secret, ns, "swap-admin")) ? undefined : true));
    await client.delete(builtin.secret, ns, "swap-admin");
    await waitGone(client, builtin.secret, ns, "swap-admin");
  });
});

describe("deleting a namespace whose MySQL server goes with it", () => {
  const id = suffix();
  const left = leftovers();
  let proxy: TcpProxy | undefined;

  afterAll(async () => {
    await proxy?.stop();
    await cleanUp(client, env.mysql, left);
  });

  it("does not wait for ever: the DatabaseUsers are released after the grace (InstanceGone), and the namespace goes", async () => {
    const ns = await freshNamespace(client, "dbu-inuse");
    left.namespaces.push(ns);
    left.managers.push(await startManager(env.kubeconfig, { namespaces: [ns], operator: { deletingInstanceGraceMs: 3_000 } }));
    // The server, as the namespace's own pods would serve it: through a proxy that stops with the namespace.
    proxy = new TcpProxy({ host: env.mysql.host, port: env.mysql.port });
    const port = await proxy.start();
    await client.create(builtin.secret, secret(ns, "db-admin", { username: env.mysql.user, password: env.mysql.password }));
    await client.create(MYI, instance(ns, "db", { host: "127.0.0.1", port, adminSecret: "db-admin" }));
    const user = `gone_${id}`;
    left.accounts.push({ user, host: "%" });
    await client.create(builtin.secret, secret(ns, "pw", { password: `pw-${id}` }));
    await client.create(DBU, databaseUser(ns, "app", { instanceRef: { name: "db" }, user, passwordSecretRef: { name: "pw" } }));
    await waitReady(client, ns, "app", 1);

    await proxy.stop();
    await client.delete(builtin.namespace, undefined, ns);
    await waitGone(client, builtin.namespace, undefined, ns, 60_000);
  });
});
