// Many DatabaseUsers at once, as the database-user benchmark and the memory-limit test
// create them: each with its own password Secret and one grant, `inFlight` creates at a time.
// And the in-use finalizer taken off by hand, for suites whose manager is gone before cleanup.
import { builtin, findCondition, type KubeClient, type KubeObject } from "@stateward/core";
import { MySQLInstanceKind } from "@stateward/mysql";
import { DatabaseUserKind, IN_USE_FINALIZER, type DatabaseUser } from "@stateward/operator-database-user";

/** Runs `fn` on every item, at most `limit` at once. */
export async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

export interface DatabaseUsersSpec {
  namespace: string;
  count: number;
  /** MySQLInstance they are on. */
  instance: string;
  /** Account names are `<accountPrefix><number>`; their grant is on `<accountPrefix>app`. */
  accountPrefix: string;
  inFlight: number;
}

/** Creates `u-0000`… with their Secrets; returns the names. */
export async function createDatabaseUsers(client: KubeClient, spec: DatabaseUsersSpec): Promise<string[]> {
  const ns = spec.namespace;
  const names = Array.from({ length: spec.count }, (_, i) => `u-${String(i).padStart(4, "0")}`);
  await inParallel(names, spec.inFlight, async (name) => {
    await client.create(builtin.secret, { metadata: { name, namespace: ns }, stringData: { password: `pw-${name}-${ns}` } });
    await client.create<DatabaseUser>(DatabaseUserKind.resource, {
      apiVersion: DatabaseUserKind.apiVersion,
      kind: DatabaseUserKind.kind,
      metadata: { name, namespace: ns },
      spec: {
        instanceRef: { name: spec.instance },
        user: `${spec.accountPrefix}${name.slice(2)}`,
        passwordSecretRef: { name },
        grants: [{ privileges: ["SELECT", "INSERT", "UPDATE", "DELETE"], database: `${spec.accountPrefix}app` }],
      },
    });
  });
  return names;
}

/** Ready for its current generation. */
export function databaseUserReady(u: DatabaseUser): boolean {
  const c = findCondition(u.status?.conditions, "Ready");
  return c?.status === "True" && c.observedGeneration === u.metadata.generation;
}

/**
 * Takes the in-use finalizer off the namespace's MySQLInstances and Secrets, as a user would with the
 * operator uninstalled: with no manager left to release them, deleting the namespace would wait forever.
 */
export async function releaseInUse(client: KubeClient, namespace: string): Promise<void> {
  for (const rt of [MySQLInstanceKind.resource, builtin.secret]) {
    const items = await client.list<KubeObject>(rt, { namespace, metadataOnly: true }).then((l) => l.items ?? [], () => []); // empty: items null
    for (const o of items.filter((i) => i.metadata.finalizers?.includes(IN_USE_FINALIZER))) {
      const finalizers = (o.metadata.finalizers ?? []).filter((f) => f !== IN_USE_FINALIZER);
      await client.patch(rt, namespace, o.metadata.name ?? "", { metadata: { finalizers, resourceVersion: o.metadata.resourceVersion } }).catch(() => undefined);
    }
  }
}
