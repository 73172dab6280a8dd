// The password fingerprint in status.passwordFingerprint: an HMAC keyed with a
// Secret the operator creates, against the real control plane and MariaDB.
// New accounts get the HMAC; a fingerprint an older release wrote (scrypt) is
// trusted as it is — no ALTER USER on upgrade — and replaced by an HMAC when the
// Secret next changes; a rotation is still applied; a lost key costs nothing.
//
// MariaDB's mysql_native_password hashes are unsalted, so for those accounts the
// server's own hash decides whether the password is stale and the fingerprint is
// only recorded. An account identified VIA unix_socket stands for a plugin whose
// hash cannot be recomputed (caching_sha2_password, ed25519): there only the
// fingerprint tells, and an unwanted ALTER USER would show as the plugin changing.
// An HMAC under the current key is checked whenever the account is converged, so
// another key of the same Secret is noticed; a password set before a later step
// failed is on record, so a Secret set back to the old password is set again.
import { scrypt } from "node:crypto";
import { builtin, type KubeObject } from "@stateward/core";
import { FINGERPRINT_KEY_SECRET, passwordFingerprint, type DatabaseUser } from "@stateward/operator-database-user";
import type mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freshNamespace, testClient } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import {
  DBU,
  adminConnection,
  cleanUp,
  createInstance,
  databaseUser,
  isSqlWrite,
  leftovers,
  q,
  secret,
  startManager,
  suffix,
  tryLogin,
  waitReady,
  type RunningManager,
} from "./support.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const DRIFT_CHECK_MS = 1_000;

/** The fingerprint releases before the HMAC wrote: scrypt N=2^14, r=8, p=1, 32 bytes, salted with the uid. */
function olderReleaseFingerprint(password: string, uid: string): Promise<string> {
  return new Promise((resolve, reject) => {
    scrypt(password, `stateward.io/databaseuser/${uid}`, 32, { N: 16_384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(`scrypt:16384:8:1:${key.toString("base64")}`),
    );
  });
}

describe("database-user: the password fingerprint", () => {
  const id = suffix();
  const db = `dbufp_${id}`;
  const passwords: string[] = [];
  const left = leftovers();
  let ns: string;
  let admin: mysql.Connection;
  let running: RunningManager;

  const password = () => {
    const p = `pw-${suffix()}${suffix()}`;
    passwords.push(p);
    return p;
  };
  const start = async () => {
    running = await startManager(env.kubeconfig, { namespaces: [ns], operator: { driftCheckIntervalMs: DRIFT_CHECK_MS } });
    left.managers.push(running);
  };
  const keyOfSecret = async () => {
    const s = await client.get<KubeObject & { data?: Record<string, string> }>(builtin.secret, ns, FINGERPRINT_KEY_SECRET);
    return Buffer.from(s.data?.key ?? "", "base64");
  };
  const plugin = async (user: string) => {
    const [rows] = await admin.query("SELECT plugin FROM mysql.user WHERE User = ? AND Host = '%'", [user]);
    return (rows as { plugin: string }[])[0]?.plugin;
  };
  const writesOn = (user: string) => running.statements.filter((s) => isSqlWrite(s) && s.sql.includes(user)).length;
  const createUser = async (name: string, pw: string) => {
    const user = `${name}_${id}`;
    left.accounts.push({ user, host: "%" });
    await client.create(builtin.secret, secret(ns, name, { password: pw }));
    await client.create(DBU, databaseUser(ns, name, { instanceRef: { name: "db" }, user, passwordSecretRef: { name }, grants: [{ privileges: ["SELECT"], database: db }] }));
    return { user, ready: await waitReady(client, ns, name, 1) };
  };
  /** The Secret touched without changing the password; resolves once the status records its new version. */
  const relabel = async (name: string, before: DatabaseUser) => {
    await client.patch(builtin.secret, ns, name, { metadata: { labels: { touched: suffix() } } });
    return waitFor(`${name}: status records the relabelled Secret`, async () => {
      const u = await client.get<DatabaseUser>(DBU, ns, name);
      return u.status?.passwordSecretVersion !== before.status?.passwordSecretVersion ? u : undefined;
    });
  };

  beforeAll(async () => {
    ns = await freshNamespace(client, "dbufp");
    left.namespaces.push(ns);
    left.databases.push(db);
    admin = await adminConnection(env.mysql);
    await admin.query(`CREATE DATABASE ${q(db)}`);
    await start();
    await createInstance(client, env.mysql, ns, "db");
  });

  afterAll(async () => {
    await admin.end();
    await cleanUp(client, env.mysql, left);
  });

  it("gives a new account an HMAC keyed with a Secret the operator created, and logs neither key nor password", async () => {
    const pw = password();
    const { user, ready } = await createUser("fresh", pw);
    expect(await tryLogin(env.mysql, user, pw)).toBe("ok");
    const key = await keyOfSecret();
    expect(key.length).toBe(32);
    expect(ready.status?.passwordFingerprint).toBe(passwordFingerprint(pw, ready.metadata.uid!, key));
    expect(ready.status?.passwordFingerprint).toMatch(/^hmac-sha256:[0-9a-f]{8}:/);
    const logged = JSON.stringify(running.logs.lines());
    for (const s of [pw, key.toString("base64"), key.toString("hex")]) expect(logged).not.toContain(s);
  });

  it("trusts an older release's scrypt fingerprint (no ALTER USER on upgrade) and rewrites it as an HMAC on the next Secret change", async () => {
    const pw = password();
    const { user, ready } = await createUser("legacy", pw);
    // As an older release left it: its scrypt fingerprint in the status, and an account whose hash the
    // operator cannot recompute (only the fingerprint can say the password is current).
    await running.stop();
    await admin.query(`ALTER USER ${q(user)}@'%' IDENTIFIED VIA unix_socket`);
    const scryptFingerprint = await olderReleaseFingerprint(pw, ready.metadata.uid!);
    const upgraded = await client.updateStatus<DatabaseUser>(DBU, { ...ready, status: { ...ready.status!, passwordFingerprint: scryptFingerprint } });

    // The new release starts: converged, then a drift check or two — nothing written, the status kept.
    await start();
    await sleep(DRIFT_CHECK_MS * 3);
    expect(writesOn(user)).toBe(0);
    expect(await plugin(user)).toBe("unix_socket");
    const after = await client.get<DatabaseUser>(DBU, ns, "legacy");
    expect(after.status?.passwordFingerprint).toBe(scryptFingerprint);
    expect(after.metadata.resourceVersion).toBe(upgraded.metadata.resourceVersion);

    // The Secret moves, the password stays: the scrypt fingerprint still matches (no ALTER USER), and is replaced.
    const moved = await relabel("legacy", after);
    expect(writesOn(user)).toBe(0);
    expect(await plugin(user)).toBe("unix_socket");
    expect(moved.status?.passwordFingerprint).toBe(passwordFingerprint(pw, ready.metadata.uid!, await keyOfSecret()));
  });

  it("still notices a rotation where only the fingerprint can tell: the new password is set", async () => {
    const legacy = await client.get<DatabaseUser>(DBU, ns, "legacy");
    const user = legacy.status!.user!;
    const fresh = password();
    await client.patch(builtin.secret, ns, "legacy", { stringData: { password: fresh } });
    await waitFor("the rotated password works", async () => ((await tryLogin(env.mysql, user, fresh)) === "ok" ? true : undefined), 15_000, 200);
    const rotated = await waitFor("status records the rotation", async () => {
      const u = await client.get<DatabaseUser>(DBU, ns, "legacy");
      return u.status?.passwordSecretVersion !== legacy.status?.passwordSecretVersion ? u : undefined;
    });
    // Counted once the status is written: the login above can succeed before the manager has seen
    // the server's answer to its ALTER USER (and recorded the statement), never after the status.
    expect(writesOn(user)).toBe(1); // ALTER USER ... IDENTIFIED BY
    expect(rotated.status?.passwordFingerprint).toBe(passwordFingerprint(fresh, legacy.metadata.uid!, await keyOfSecret()));
  });

  it("survives losing the key: a new one is created, and an account is set once again at most", async () => {
    const before = await client.get<DatabaseUser>(DBU, ns, "fresh");
    const oldKey = await keyOfSecret();
    await running.stop();
    await client.delete(builtin.secret, ns, FINGERPRINT_KEY_SECRET);
    await start();
    const moved = await relabel("fresh", before);
    const newKey = await keyOfSecret();
    expect(newKey.equals(oldKey)).toBe(false);
    const pw = passwords[0]!;
    expect(moved.status?.passwordFingerprint).toBe(passwordFingerprint(pw, before.metadata.uid!, newKey));
    // mysql_native_password: the server's hash says the password is current, so not even that one ALTER USER.
    expect(writesOn(before.status!.user!)).toBe(0);
    expect(await tryLogin(env.mysql, before.status!.user!, pw)).toBe("ok");
  });

  it("sets the password of another key of the same Secret: spec.passwordSecretRef.key edited, the Secret unchanged", async () => {
    const [pw, other] = [password(), password()];
    const user = `rekey_${id}`;
    left.accounts.push({ user, host: "%" });
    await client.create(builtin.secret, secret(ns, "rekey", { password: pw, other }));
    const spec: DatabaseUser["spec"] = { instanceRef: { name: "db" }, user, passwordSecretRef: { name: "rekey" }, grants: [{ privileges: ["SELECT"], database: db }] };
    await client.create(DBU, databaseUser(ns, "rekey", spec));
    await waitReady(client, ns, "rekey", 1);
    const created = writesOn(user); // CREATE USER, GRANT
    // A plugin whose hash the operator cannot recompute: only the fingerprint tells.
    await admin.query(`ALTER USER ${q(user)}@'%' IDENTIFIED VIA unix_socket`);
    await sleep(DRIFT_CHECK_MS * 2);
    expect(writesOn(user) - created, "drift checks with the password unchanged").toBe(0);

    await client.patch(DBU, ns, "rekey", { spec: { passwordSecretRef: { name: "rekey", key: "other" } } });
    await waitReady(client, ns, "rekey", 2);
    // Before, the Secret's version was the same, so the fingerprint was not looked at: Ready, the old password kept.
    expect(writesOn(user) - created).toBe(1); // ALTER USER ... IDENTIFIED BY
    expect(await plugin(user)).toBe("mysql_native_password");
    expect(await tryLogin(env.mysql, user, other)).toBe("ok");
  });

  it("records a password set before a later step failed: the Secret set back to the old one is set again", async () => {
    const [first, second] = [password(), password()];
    const { user } = await createUser("revert", first);
    const grants: DatabaseUser["spec"]["grants"] = [{ privileges: ["SELECT"], database: db }];
    // A grant the server refuses (no such table): every reconcile fails after the password step.
    await client.patch(DBU, ns, "revert", { spec: { grants: [...(grants ?? []), { privileges: ["SELECT"], database: db, table: "no_such_table" }] } });
    await waitFor("the grant refused", async () => ((await client.get<DatabaseUser>(DBU, ns, "revert")).status?.conditions?.find((c) => c.type === "Ready" && c.status === "False" && c.observedGeneration === 2) ? true : undefined));
    await client.patch(builtin.secret, ns, "revert", { stringData: { password: second } });
    await waitFor("the rotated password set", async () => ((await tryLogin(env.mysql, user, second)) === "ok" ? true : undefined), 15_000, 200);
    await sleep(2_000); // the reconcile goes on to the grant, fails, and records its failure
    // As a plugin whose hash cannot be recomputed would keep it: the server's hash says nothing. The
    // Secret is set back right after, before a retry of the failing reconcile would look at the account.
    await admin.query(`ALTER USER ${q(user)}@'%' IDENTIFIED VIA unix_socket`);

    // The Secret set back and the grant fixed: the password on the server is the second one, so the first is set again.
    await client.patch(builtin.secret, ns, "revert", { stringData: { password: first } });
    await client.patch(DBU, ns, "revert", { spec: { grants } });
    await waitReady(client, ns, "revert", 3);
    // Before, the status still held the first password's fingerprint: "unchanged", Ready, and the second kept.
    expect(await plugin(user)).toBe("mysql_native_password");
    expect(await tryLogin(env.mysql, user, first)).toBe("ok");
  });
});
