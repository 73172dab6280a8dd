// A MySQLCluster never takes over an object that already holds one of its
// names, against the real control plane: a hand-made MySQLInstance `db` and a
// ConfigMap `db-config` stay exactly as they were (no owner reference added,
// not re-pointed), the cluster says NameConflict with an Event naming the
// object, and deleting the cluster (garbage collection included) leaves them.
// The apply guard itself is checked against the API server with a cache that
// does not know the object, or holds a deleted one (the uid precondition). Nor can config change a
// setting the operator manages through an option prefix or an abbreviation
// (loose-skip-log-bin): the API server refuses it.
import { NameConflictError, applyIfChanged, builtin, controllerReference, findCondition, isInvalid, type KubeObject } from "@stateward/core";
import { MySQLInstanceKind, type MySQLInstance } from "@stateward/mysql";
import { MySQLClusterKind, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { eventsAbout } from "../../support/events.ts";
import { testClient, waitGone } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import { clusterManifest, startClusterSuite, type ClusterSuite } from "../../support/mysql-cluster.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const MYC = MySQLClusterKind.resource;
const MYI = MySQLInstanceKind.resource;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let suite: ClusterSuite;
let ns: string;

function cluster(name: string, spec: Partial<MySQLCluster["spec"]> = {}): MySQLCluster {
  return clusterManifest(ns, name, { replicas: 1, storage: { size: "1Gi" }, ...spec });
}

function configMap(name: string, data: Record<string, string>): KubeObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: ns }, data } as KubeObject;
}

async function conflicted(name: string): Promise<MySQLCluster> {
  return waitFor(`MySQLCluster ${name} NameConflict`, async () => {
    const c = await client.get<MySQLCluster>(MYC, ns, name);
    const ready = findCondition(c.status?.conditions, "Ready");
    return ready?.status === "False" && ready.reason === "NameConflict" ? c : undefined;
  }, 30_000, 200);
}

/** What a user would compare: the object's content and owners, not its bookkeeping. */
const essence = (o: KubeObject) => JSON.stringify({ ...o, metadata: { ...o.metadata, managedFields: undefined } });
/**
 * The same for a MySQLInstance, without its status: every MySQL operator runs the MySQLInstance
 * controller, which reports the server's state (here: unreachable) on any instance — the cluster
 * must not take over the rest.
 */
const instanceEssence = (o: KubeObject) => JSON.stringify({ ...o, status: undefined, metadata: { ...o.metadata, managedFields: undefined, resourceVersion: undefined } });

beforeAll(async () => {
  suite = await startClusterSuite(client, env, "own");
  ({ ns } = suite);
}, 120_000);

afterAll(async () => {
  await suite?.stop();
}, 120_000);

describe("objects of the same name", () => {
  it("leaves a hand-made MySQLInstance and ConfigMap alone: NameConflict, unchanged, and unchanged after the cluster is deleted", async () => {
    await client.create(builtin.secret, { apiVersion: "v1", kind: "Secret", metadata: { name: "db-admin", namespace: ns }, stringData: { username: "someone", password: "x" } } as KubeObject);
    const instance: MySQLInstance = {
      apiVersion: MySQLInstanceKind.apiVersion,
      kind: MySQLInstanceKind.kind,
      metadata: { name: "db", namespace: ns },
      spec: { host: "mysql.elsewhere.example", port: 3306, adminSecretRef: { name: "db-admin" } },
    };
    const instanceBefore = await client.create(MYI, instance);
    const cmBefore = await client.create(builtin.configMap, configMap("db-config", { "my.cnf": "[mysqld]\n# someone else's\n" }));

    await client.create(MYC, cluster("db"));
    const c = await conflicted("db");
    expect(c.status?.phase).toBe("Pending");
    expect(findCondition(c.status?.conditions, "Ready")?.message).toMatch(/already exists .*not created by this owner/);
    const events = await eventsAbout(client, ns, { name: "db", kind: "MySQLCluster" });
    expect(events.some((e) => e.reason === "NameConflict" && /(MySQLInstance db|ConfigMap db-config) already exists/.test(e.note ?? ""))).toBe(true);

    await sleep(5_000);
    const instanceAfter = await client.get<MySQLInstance>(MYI, ns, "db");
    expect(instanceAfter.spec.host).toBe("mysql.elsewhere.example");
    expect(instanceAfter.metadata.ownerReferences ?? []).toEqual([]);
    expect(essence(await client.get(builtin.configMap, ns, "db-config"))).toBe(essence(cmBefore));
    expect(instanceEssence(instanceAfter)).toBe(instanceEssence(instanceBefore));
    // Nothing else was made under the taken names either.
    expect(await client.get(builtin.statefulSet, ns, "db").then(() => "exists", () => "absent")).toBe("absent");

    await client.delete(MYC, ns, "db");
    await waitGone(client, MYC, ns, "db");
    await sleep(3_000); // garbage collection's turn
    expect(instanceEssence(await client.get<MySQLInstance>(MYI, ns, "db"))).toBe(instanceEssence(instanceBefore));
    expect(essence(await client.get(builtin.configMap, ns, "db-config"))).toBe(essence(cmBefore));
  });

  it("neither uses nor changes someone else's <cluster>-root Secret", async () => {
    const before = await client.create(builtin.secret, { apiVersion: "v1", kind: "Secret", metadata: { name: "other-root", namespace: ns }, stringData: { username: "root", password: "not-yours" } } as KubeObject);
    await client.create(MYC, cluster("other"));
    const c = await conflicted("other");
    expect(findCondition(c.status?.conditions, "Ready")?.message).toMatch(/Secret other-root already exists.*rootPasswordSecretRef/);
    await sleep(2_000);
    expect(essence(await client.get(builtin.secret, ns, "other-root"))).toBe(essence(before));
    expect(await client.get(MYI, ns, "other").then(() => "exists", () => "absent")).toBe("absent");
    await client.delete(MYC, ns, "other");
  });
});

describe("applyIfChanged with a cache that does not know the object", () => {
  // An owner of our own: a ConfigMap stands in for it (only its uid and name matter).
  let owner: KubeObject;
  beforeAll(async () => {
    owner = await client.create(builtin.configMap, configMap("owner", {}));
  });
  const owned = (name: string, data: Record<string, string>): KubeObject =>
    ({ ...configMap(name, data), metadata: { name, namespace: ns, ownerReferences: [controllerReference(owner, builtin.configMap)] } });

  it("creates an absent object, re-applies its own, and refuses someone else's — unchanged", async () => {
    expect(await applyIfChanged(client, builtin.configMap, owned("guarded", { a: "1" }), undefined)).toBe(true);
    const created = await client.get<KubeObject & { data?: Record<string, string> }>(builtin.configMap, ns, "guarded");
    expect(created.data).toEqual({ a: "1" });
    expect(created.metadata.ownerReferences?.[0]?.uid).toBe(owner.metadata.uid);

    // Ours, but not in the cache: applied all the same.
    expect(await applyIfChanged(client, builtin.configMap, owned("guarded", { a: "2" }), undefined)).toBe(true);
    expect((await client.get<KubeObject & { data?: Record<string, string> }>(builtin.configMap, ns, "guarded")).data).toEqual({ a: "2" });

    // Someone else's that the cache does not know: read, and refused.
    const foreign = await client.create(builtin.configMap, configMap("foreign", { b: "theirs" }));
    const err = await applyIfChanged(client, builtin.configMap, owned("foreign", { b: "mine" }), undefined).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(NameConflictError);
    expect((err as Error).message).toMatch(/ConfigMap foreign already exists/);
    expect(essence(await client.get(builtin.configMap, ns, "foreign"))).toBe(essence(foreign));

    // The cache still holds our object, but it was deleted and someone else made one of that name:
    // the API server refuses the apply (uid precondition), and the new object is named.
    const stale = await client.get(builtin.configMap, ns, "guarded");
    await client.delete(builtin.configMap, ns, "guarded");
    await waitGone(client, builtin.configMap, ns, "guarded");
    const replaced = await client.create(builtin.configMap, configMap("guarded", { c: "theirs" }));
    const err2 = await applyIfChanged(client, builtin.configMap, owned("guarded", { a: "3" }), stale).then(() => undefined, (e: unknown) => e);
    expect(err2).toBeInstanceOf(NameConflictError);
    expect(essence(await client.get(builtin.configMap, ns, "guarded"))).toBe(essence(replaced));

    // Deleted and not made again: the stale cache does not stop it from being created anew.
    await client.delete(builtin.configMap, ns, "guarded");
    await waitGone(client, builtin.configMap, ns, "guarded");
    expect(await applyIfChanged(client, builtin.configMap, owned("guarded", { a: "4" }), stale)).toBe(true);
    expect((await client.get<KubeObject & { data?: Record<string, string> }>(builtin.configMap, ns, "guarded")).data).toEqual({ a: "4" });
  });
});

describe("settings the operator manages, prefixed or abbreviated", () => {
  it("are refused by the API server; ordinary and prefixed harmless settings are accepted", async () => {
    const refused = { "loose-skip-log-bin": "", loose_read_only: "ON", loose_log_slave_updates: "OFF", "disable-log-bin": "", "skip-loose-read-only": "", read_onl: "ON", "maximum-server-id": "1" };
    let i = 0;
    for (const [name, value] of Object.entries(refused)) {
      const err = await client.create(MYC, cluster(`sneaky-${i++}`, { config: { [name]: value } })).then(() => undefined, (e: unknown) => e);
      expect(err, `${name} was accepted`).toBeDefined();
      expect(isInvalid(err), name).toBe(true);
      expect((err as Error).message).toMatch(/config may not set what the operator manages/);
    }
    // Accepted: made in a namespace no manager watches, so nothing is deployed for it.
    const plain = cluster(`plain-${ns}`, { config: { "skip-name-resolve": "ON", "loose-innodb-foo": "1", max_connections: "200" } });
    const created = await client.create(MYC, { ...plain, metadata: { ...plain.metadata, namespace: "default" } });
    expect(created.spec.config?.["skip-name-resolve"]).toBe("ON");
    await client.delete(MYC, "default", created.metadata.name ?? "");
  });
});
