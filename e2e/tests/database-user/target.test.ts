// The target label: two managers, `target: "db1"` and `target: "db2"`, share
// a namespace; each manages only the DatabaseUsers (and MySQLInstances)
// labelled for it, and never even sees the others; an older DatabaseUser that
// comes into view later does not take an account the manager created.
import { builtin } from "@stateward/core";
import type { DatabaseUser } from "@stateward/operator-database-user";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freshNamespace, testClient, waitGone } from "../../support/kube.ts";
import {
  DBU,
  accountExists,
  adminConnection,
  cleanUp,
  createInstance,
  databaseUser,
  leftovers,
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
const TARGET = "stateward.io/target";

describe("two managers with different targets", () => {
  const id = suffix();
  const left = leftovers();
  let ns: string;
  let db1: RunningManager;
  let db2: RunningManager;
  const users = { one: `one_${id}`, two: `two_${id}`, none: `none_${id}` };

  beforeAll(async () => {
    ns = await freshNamespace(client, "dbu-target");
    left.namespaces.push(ns);
    left.accounts.push(...Object.values(users).map((user) => ({ user, host: "%" })));
    db1 = await startManager(env.kubeconfig, { namespaces: [ns], target: "db1" });
    db2 = await startManager(env.kubeconfig, { namespaces: [ns], target: "db2" });
    left.managers.push(db1, db2);
    await createInstance(client, env.mysql, ns, "inst1", { [TARGET]: "db1" });
    await createInstance(client, env.mysql, ns, "inst2", { [TARGET]: "db2" });
    await client.create(builtin.secret, secret(ns, "pw", { password: "target-pw" }));
  });

  afterAll(async () => {
    await cleanUp(client, env.mysql, left);
  });

  it("each manager reconciles only its own users", async () => {
    const spec = (instance: string, user: string): DatabaseUser["spec"] => ({ instanceRef: { name: instance }, user, passwordSecretRef: { name: "pw" } });
    await client.create(DBU, databaseUser(ns, "one", spec("inst1", users.one), { [TARGET]: "db1" }));
    await client.create(DBU, databaseUser(ns, "two", spec("inst2", users.two), { [TARGET]: "db2" }));
    await client.create(DBU, databaseUser(ns, "none", spec("inst1", users.none)));
    await waitReady(client, ns, "one", 1);
    await waitReady(client, ns, "two", 1);
    await new Promise((r) => setTimeout(r, 1_500));

    const none = await client.get<DatabaseUser>(DBU, ns, "none");
    expect(none.status).toBeUndefined();
    expect(none.metadata.finalizers ?? []).toEqual([]);
    const admin = await adminConnection(env.mysql);
    try {
      expect(await accountExists(admin, users.one)).toBe(true);
      expect(await accountExists(admin, users.two)).toBe(true);
      expect(await accountExists(admin, users.none)).toBe(false);
    } finally {
      await admin.end();
    }

    // Each saw only its own objects: in its cache, its logs, its requests, its SQL.
    const names = (m: RunningManager) => m.manager.cache.list<DatabaseUser>(DBU).map((u) => u.metadata.name);
    expect(names(db1)).toEqual(["one"]);
    expect(names(db2)).toEqual(["two"]);
    for (const [m, theirs, otherUser] of [
      [db1, "two", users.two],
      [db2, "one", users.one],
    ] as const) {
      expect(m.logs.lines().filter((l) => l.name === theirs || l.name === "none")).toEqual([]);
      expect(m.requests.filter((r) => r.path.endsWith(`/databaseusers/${theirs}`) || r.path.includes("/databaseusers/none"))).toEqual([]);
      expect(m.statements.filter((s) => s.sql.includes(otherUser))).toEqual([]);
      expect(m.requests.filter((r) => r.verb === "LIST" && r.path.includes("/databaseusers")).length).toBeGreaterThan(0);
    }
    const listed = db1.requests.filter((r) => r.path.includes("/databaseusers") && (r.verb === "LIST" || r.verb === "WATCH"));
    expect(listed.length).toBeGreaterThan(0);

    // Deleting is handled by the owner of the label.
    await client.delete(DBU, ns, "one");
    await waitGone(client, DBU, ns, "one");
    const admin2 = await adminConnection(env.mysql);
    try {
      expect(await accountExists(admin2, users.one)).toBe(false);
    } finally {
      await admin2.end();
    }
  });

  // Two DatabaseUsers for one account, the older one out of the manager's view (no target label) until
  // after the younger created the account: age alone would make the older the owner.
  it("an older DatabaseUser that comes into view later does not take the account the younger created", async () => {
    const user = `late_${id}`;
    left.accounts.push({ user, host: "%" });
    const spec: DatabaseUser["spec"] = { instanceRef: { name: "inst1" }, user, passwordSecretRef: { name: "pw" } };
    await client.create(DBU, databaseUser(ns, "late-older", spec));
    await new Promise((r) => setTimeout(r, 1_100)); // a later creationTimestamp (whole seconds)
    await client.create(DBU, databaseUser(ns, "late-newer", spec, { [TARGET]: "db1" }));
    expect((await waitReady(client, ns, "late-newer", 1)).status?.accountOrigin).toBe("Created");

    await client.patch(DBU, ns, "late-older", { metadata: { labels: { [TARGET]: "db1" } } });
    const refused = await waitNotReady(client, ns, "late-older", "AccountConflict");
    expect(readyOf(refused)?.message).toBe(`account '${user}'@'%' on MySQLInstance inst1 is already managed by DatabaseUser late-newer`);
    // The younger, looking again (a label change wakes it), still manages its account.
    await client.patch(DBU, ns, "late-newer", { metadata: { labels: { looked: "again" } } });
    await new Promise((r) => setTimeout(r, 1_500));
    const newer = await client.get<DatabaseUser>(DBU, ns, "late-newer");
    expect(readyOf(newer)).toMatchObject({ status: "True", reason: "AccountReady" });
    expect(await tryLogin(env.mysql, user, "target-pw")).toBe("ok");
  });
});
