// What a user sees when something is wrong — a missing Secret or key, an
// unreachable instance, wrong admin credentials, a spec the server cannot
// take, two objects claiming one account, an instance gone at delete time —
// and that each heals once fixed, retrying with backoff meanwhile.
import { builtin } from "@stateward/core";
import type { MySQLInstance } from "@stateward/mysql";
import type { DatabaseUser } from "@stateward/operator-database-user";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freePort } from "../../harness/index.ts";
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
  failedReconciles,
  instance,
  leftovers,
  q,
  readyOf,
  secret,
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

/**
 * Backoff: 5 ms doubling per failure (the work queue's limiter). In 3 s that
 * is about 10 attempts; a tight loop would make hundreds. A few more are
 * allowed for events of related objects (the instance's own status changes).
 */
function expectBackoff(attempts: number): void {
  expect(attempts).toBeGreaterThanOrEqual(3);
  expect(attempts).toBeLessThanOrEqual(16);
}

describe("database-user failures", () => {
  const id = suffix();
  const left = leftovers();
  let ns: string;
  let running: RunningManager;
  const account = (name: string) => {
    const user = `${name}_${id}`;
    left.accounts.push({ user, host: "%" });
    return user;
  };

  beforeAll(async () => {
    ns = await freshNamespace(client, "dbu-fail");
    left.namespaces.push(ns);
    running = await startManager(env.kubeconfig, { namespaces: [ns] });
    left.managers.push(running);
    await createInstance(client, env.mysql, ns, "db");
  });

  afterAll(async () => {
    await cleanUp(client, env.mysql, left);
  });

  it("a missing Secret, then a missing key: Ready=False naming them, an event, backoff, and Ready once fixed", async () => {
    const user = account("nosecret");
    await client.create(DBU, databaseUser(ns, "nosecret", { instanceRef: { name: "db" }, user, passwordSecretRef: { name: "later" } }));
    const failed = await waitNotReady(client, ns, "nosecret", "SecretNotFound");
    expect(readyOf(failed)?.message).toBe(`Secret later not found in namespace ${ns}`);
    await sleep(3_000);
    expectBackoff(failedReconciles(running.logs, "databaseuser", "nosecret"));
    const events = await eventsFor(client, ns, "nosecret");
    expect(events.find((e) => e.reason === "SecretNotFound")).toMatchObject({ type: "Warning", note: `Secret later not found in namespace ${ns}` });

    await client.create(builtin.secret, secret(ns, "later", { pass: "p-1" }));
    const noKey = await waitNotReady(client, ns, "nosecret", "SecretKeyMissing");
    expect(readyOf(noKey)?.message).toBe("Secret later has no key password");

    await client.patch(builtin.secret, ns, "later", { stringData: { password: "p-2-correct" } });
    await waitReady(client, ns, "nosecret", 1);
    expect(await tryLogin(env.mysql, user, "p-2-correct")).toBe("ok");
  });

  it("a password that is not UTF-8 text: refused, nothing created or changed, and Ready once stored as UTF-8", async () => {
    // "pé!" in Latin-1: 0xE9 alone is no UTF-8. Decoded leniently it became "p\uFFFD!" on the server: a
    // password no one knows, reported Ready.
    const latin1 = Buffer.from([0x70, 0xe9, 0x21]).toString("base64");
    const user = account("latin1");
    await client.create(builtin.secret, { apiVersion: "v1", kind: "Secret", metadata: { name: "latin1", namespace: ns }, data: { password: latin1 } });
    await client.create(DBU, databaseUser(ns, "latin1", { instanceRef: { name: "db" }, user, passwordSecretRef: { name: "latin1" } }));
    const failed = await waitNotReady(client, ns, "latin1", "SecretValueNotText");
    expect(readyOf(failed)?.message).toBe("Secret latin1 key password is not UTF-8 text: store the value UTF-8 encoded");
    const admin = await adminConnection(env.mysql);
    try {
      expect(await accountExists(admin, user)).toBe(false);
      await client.patch(builtin.secret, ns, "latin1", { stringData: { password: "pé!" } });
      await waitReady(client, ns, "latin1", 1);
      expect(await tryLogin(env.mysql, user, "pé!")).toBe("ok");

      // An existing account keeps its password when the Secret's new one is not text.
      await client.patch(builtin.secret, ns, "latin1", { data: { password: latin1 } });
      await waitNotReady(client, ns, "latin1", "SecretValueNotText");
      expect(await tryLogin(env.mysql, user, "pé!")).toBe("ok");
    } finally {
      await admin.end();
    }
  });

  it("an unreachable instance: Ready=False on the instance and its users, backoff, Ready once it is reachable", async () => {
    const port = await freePort(); // nothing listens there
    await client.create(builtin.secret, secret(ns, "down-admin", { username: env.mysql.user, password: env.mysql.password }));
    await client.create(MYI, instance(ns, "down", { host: env.mysql.host, port, adminSecret: "down-admin" }));
    await client.create(builtin.secret, secret(ns, "down-user", { password: "down-pw" }));
    const user = account("downuser");
    await client.create(DBU, databaseUser(ns, "downuser", { instanceRef: { name: "down" }, user, passwordSecretRef: { name: "down-user" } }));

    const failed = await waitNotReady(client, ns, "downuser", "InstanceUnreachable");
    expect(readyOf(failed)?.message).toMatch(new RegExp(`^MySQLInstance down is unreachable: .*ECONNREFUSED`));
    // The Secret and the account are read at the same time; a missing Secret is still what is reported.
    const both = account("downnosecret");
    await client.create(DBU, databaseUser(ns, "downnosecret", { instanceRef: { name: "down" }, user: both, passwordSecretRef: { name: "never" } }));
    expect(readyOf(await waitNotReady(client, ns, "downnosecret", "SecretNotFound"))?.message).toBe(`Secret never not found in namespace ${ns}`);
    const inst = await waitFor("instance Ready=False", async () => {
      const i = await client.get<MySQLInstance>(MYI, ns, "down");
      return readyOf(i)?.status === "False" ? i : undefined;
    });
    expect(readyOf(inst)).toMatchObject({ reason: "Unreachable" });
    await sleep(3_000);
    expectBackoff(failedReconciles(running.logs, "databaseuser", "downuser"));
    expectBackoff(failedReconciles(running.logs, "mysqlinstance", "down"));
    expect((await eventsFor(client, ns, "downuser")).some((e) => e.reason === "InstanceUnreachable" && e.type === "Warning")).toBe(true);

    // Fixed: the instance's change wakes its users.
    await client.patch(MYI, ns, "down", { spec: { port: env.mysql.port } });
    await waitReady(client, ns, "downuser", 1);
    expect(await tryLogin(env.mysql, user, "down-pw")).toBe("ok");
    const fixed = await client.get<MySQLInstance>(MYI, ns, "down");
    expect(readyOf(fixed)).toMatchObject({ status: "True", reason: "Connected" });
    expect(fixed.status).toMatchObject({ flavor: "MariaDB" });
  });

  it("wrong admin credentials: Ready=False without the password, Ready once the Secret is fixed", async () => {
    const wrong = `wrong-${suffix()}`;
    await client.create(builtin.secret, secret(ns, "bad-admin", { username: env.mysql.user, password: wrong }));
    await client.create(MYI, instance(ns, "badauth", { host: env.mysql.host, port: env.mysql.port, adminSecret: "bad-admin" }));
    await client.create(builtin.secret, secret(ns, "badauth-user", { password: "badauth-pw" }));
    const user = account("badauth");
    await client.create(DBU, databaseUser(ns, "badauth", { instanceRef: { name: "badauth" }, user, passwordSecretRef: { name: "badauth-user" } }));
    const failed = await waitNotReady(client, ns, "badauth", "InstanceAuthenticationFailed");
    expect(readyOf(failed)?.message).toMatch(/^MySQLInstance badauth refused the admin credentials: Access denied for user/);
    await sleep(3_000);
    expectBackoff(failedReconciles(running.logs, "databaseuser", "badauth"));
    expect(JSON.stringify(await client.get(MYI, ns, "badauth"))).not.toContain(wrong);
    expect(running.logs.text()).not.toContain(wrong);

    await client.patch(builtin.secret, ns, "bad-admin", { stringData: { password: env.mysql.password } });
    await waitReady(client, ns, "badauth", 1);
    expect(await tryLogin(env.mysql, user, "badauth-pw")).toBe("ok");
    // One pool, opened with the fixed credentials: failed logins leave none behind.
    const opened = running.logs.lines().filter((l) => l.msg === "connection pool opened" && l.instance === `${ns}/badauth`);
    expect(opened).toHaveLength(1);
  });

  it("a privilege the server's flavor lacks is a terminal error: reported once, not retried until the spec changes", async () => {
    await client.create(builtin.secret, secret(ns, "flavor-user", { password: "flavor-pw" }));
    const user = account("flavor");
    await client.create(
      DBU,
      databaseUser(ns, "flavor", {
        instanceRef: { name: "db" },
        user,
        passwordSecretRef: { name: "flavor-user" },
        grants: [{ privileges: ["BACKUP_ADMIN", "PROCESS"], database: "*" }],
      }),
    );
    const failed = await waitNotReady(client, ns, "flavor", "InvalidSpec");
    expect(readyOf(failed)?.message).toMatch(/^BACKUP_ADMIN exists only on MySQL; the instance runs MariaDB 10\./);
    const attempts = failedReconciles(running.logs, "databaseuser", "flavor");
    await sleep(2_000);
    expect(failedReconciles(running.logs, "databaseuser", "flavor")).toBe(attempts);
    expect(running.logs.lines().filter((l) => l.name === "flavor" && String(l.msg).startsWith("reconcile failed; not retrying"))).toHaveLength(1);
    const admin = await adminConnection(env.mysql);
    try {
      expect(await accountExists(admin, user)).toBe(false);
    } finally {
      await admin.end();
    }
    await client.patch(DBU, ns, "flavor", { spec: { grants: [{ privileges: ["PROCESS"], database: "*" }] } });
    await waitReady(client, ns, "flavor", 2);
  });

  it("two DatabaseUsers for one account: the younger is refused; deleting either never drops the other's account", async () => {
    await client.create(builtin.secret, secret(ns, "twin-pw", { password: "twin-pw" }));
    const user = account("twin");
    const twin = (name: string, adoptExisting?: boolean) => databaseUser(ns, name, { instanceRef: { name: "db" }, user, passwordSecretRef: { name: "twin-pw" }, ...(adoptExisting ? { adoptExisting } : {}) });
    const exists = async () => {
      const admin = await adminConnection(env.mysql);
      try {
        return await accountExists(admin, user);
      } finally {
        await admin.end();
      }
    };
    await client.create(DBU, twin("twin-a"));
    await waitReady(client, ns, "twin-a", 1);
    await client.create(DBU, twin("twin-b"));
    const refused = await waitNotReady(client, ns, "twin-b", "AccountConflict");
    expect(readyOf(refused)?.message).toBe(`account '${user}'@'%' on MySQLInstance db is already managed by DatabaseUser twin-a`);

    // The younger goes: the account stays with the older.
    await client.delete(DBU, ns, "twin-b");
    await waitGone(client, DBU, ns, "twin-b");
    expect(await exists()).toBe(true);
    expect((await eventsFor(client, ns, "twin-b")).some((e) => e.reason === "AccountKept")).toBe(true);

    // The older goes: the account stays, and the other DatabaseUser naming it takes over (it exists: only with adoptExisting).
    await client.create(DBU, twin("twin-c", true));
    await waitNotReady(client, ns, "twin-c", "AccountConflict");
    await client.delete(DBU, ns, "twin-a");
    await waitGone(client, DBU, ns, "twin-a");
    await waitReady(client, ns, "twin-c", 1);
    expect(await exists()).toBe(true);
    expect(await tryLogin(env.mysql, user, "twin-pw")).toBe("ok");
  });

  it("deleting while the instance is unreachable keeps the object and says so; the account is dropped once it is back", async () => {
    await client.create(builtin.secret, secret(ns, "flaky-admin", { username: env.mysql.user, password: env.mysql.password }));
    await client.create(MYI, instance(ns, "flaky", { host: env.mysql.host, port: env.mysql.port, adminSecret: "flaky-admin" }));
    await client.create(builtin.secret, secret(ns, "flaky-user", { password: "flaky-pw" }));
    const user = account("flaky");
    await client.create(DBU, databaseUser(ns, "flaky", { instanceRef: { name: "flaky" }, user, passwordSecretRef: { name: "flaky-user" } }));
    await waitReady(client, ns, "flaky", 1);

    await client.patch(MYI, ns, "flaky", { spec: { port: await freePort() } });
    await client.delete(DBU, ns, "flaky");
    // (The instance's change alone may first report it unreachable; then the deletion says what it waits for.)
    const blocked = await waitFor("the deletion to report it is blocked", async () => {
      const u = await client.get<DatabaseUser>(DBU, ns, "flaky");
      return readyOf(u)?.message.startsWith("cannot drop account") ? u : undefined;
    });
    expect(readyOf(blocked)).toMatchObject({ status: "False", reason: "InstanceUnreachable" });
    expect(readyOf(blocked)?.message).toMatch(new RegExp(`^cannot drop account '${user}'@'%' yet, retrying .*MySQLInstance flaky is unreachable`));
    expect(blocked.metadata.finalizers).toContain("stateward.io/drop-account");
    await sleep(2_000);
    expect((await client.get<DatabaseUser>(DBU, ns, "flaky")).metadata.deletionTimestamp).toBeDefined();

    await client.patch(MYI, ns, "flaky", { spec: { port: env.mysql.port } });
    await waitGone(client, DBU, ns, "flaky");
    const admin = await adminConnection(env.mysql);
    try {
      expect(await accountExists(admin, user)).toBe(false);
    } finally {
      await admin.end();
    }
  });

  it("deleting after the MySQLInstance was forced away (its in-use finalizer removed by hand) releases the object with an event", async () => {
    await client.create(builtin.secret, secret(ns, "gone-admin", { username: env.mysql.user, password: env.mysql.password }));
    await client.create(MYI, instance(ns, "gone", { host: env.mysql.host, port: env.mysql.port, adminSecret: "gone-admin" }));
    await client.create(builtin.secret, secret(ns, "gone-user", { password: "gone-pw" }));
    const user = account("orphan");
    await client.create(DBU, databaseUser(ns, "orphan", { instanceRef: { name: "gone" }, user, passwordSecretRef: { name: "gone-user" } }));
    await waitReady(client, ns, "orphan", 1);
    // Deleting the instance waits for its DatabaseUsers (in-use.test.ts): only a user removing the
    // finalizer by hand makes it go first.
    await client.delete(MYI, ns, "gone");
    await client.patch(MYI, ns, "gone", { metadata: { finalizers: null } });
    await waitNotReady(client, ns, "orphan", "InstanceNotFound");
    await client.delete(DBU, ns, "orphan");
    await waitGone(client, DBU, ns, "orphan");
    const events = await eventsFor(client, ns, "orphan");
    expect(events.find((e) => e.reason === "InstanceGone")).toMatchObject({
      type: "Warning",
      note: `MySQLInstance gone no longer exists: account '${user}'@'%' was not dropped (nothing left to connect to)`,
    });
    const admin = await adminConnection(env.mysql);
    try {
      expect(await accountExists(admin, user)).toBe(true);
      await admin.query(`DROP USER ${q(user)}@'%'`);
    } finally {
      await admin.end();
    }
  });

  it("kept running through all of it", () => {
    expect(running.manager.isLeader()).toBe(true);
    const users = ["nosecret", "downuser", "badauth", "flavor"];
    for (const name of users) expect(failedReconciles(running.logs, "databaseuser", name)).toBeGreaterThan(0);
  });
});
