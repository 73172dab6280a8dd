import { describe, expect, it } from "vitest";
import { builtin, type KubeObject } from "../client/index.ts";
import { cacheKind, resolveScopes, type CollectedDeclaration, type Declarer } from "./scopes.ts";

const TARGET = "stateward.io/target=blue";
const MANAGED = "app.kubernetes.io/managed-by=stateward";
const declared = (by: Declarer, ...decls: ReturnType<typeof cacheKind>[]): CollectedDeclaration[] => decls.map((d) => ({ kind: d.kind, scope: d.scope, by }));
const used = (by: Declarer, kind = builtin.pod): CollectedDeclaration => ({ kind, scope: undefined, by });
const mysqlCluster = { operator: "mysql-cluster" };
const podWatcher = { operator: "pod-watcher", controller: "watcher", use: "watches Pod" };

describe("merging the cache declarations of the operators", () => {
  it("merges identical declarations, and their indexers", () => {
    const byName = (o: KubeObject) => [o.metadata.name ?? ""];
    const byNamespace = (o: KubeObject) => [o.metadata.namespace ?? ""];
    const scopes = resolveScopes([
      ...declared(mysqlCluster, cacheKind(builtin.pod, { labelSelector: MANAGED, indexers: { name: byName } })),
      ...declared({ operator: "other" }, cacheKind(builtin.pod, { labelSelector: MANAGED, indexers: { name: byName, namespace: byNamespace } })),
    ]);
    const pod = [...scopes.values()][0]!;
    expect(scopes.size).toBe(1);
    expect(pod).toMatchObject({ labelSelector: MANAGED, metadataOnly: false, by: "operator mysql-cluster" });
    expect([...pod.indexers.keys()]).toEqual(["name", "namespace"]);
  });

  it("refuses two selectors for a kind, naming both declarers, in either order", () => {
    const a = declared(mysqlCluster, cacheKind(builtin.pod, { labelSelector: MANAGED }));
    const b = declared({ operator: "x", controller: "y", use: "owns Pod" }, cacheKind(builtin.pod, { labelSelector: "app=y" }));
    expect(() => resolveScopes([...a, ...b])).toThrow(
      "Pod: operator mysql-cluster declares selector app.kubernetes.io/managed-by=stateward but operator x (controller y, owns Pod) declares selector app=y",
    );
    expect(() => resolveScopes([...b, ...a])).toThrow("Pod: operator x (controller y, owns Pod) declares selector app=y but operator mysql-cluster declares selector app.kubernetes.io/managed-by=stateward");
  });

  it("takes a controller's undeclared use of a kind as its operator's declaration, or as the whole kind", () => {
    // The operator declares the kind: its controllers' uses follow it.
    expect([...resolveScopes([...declared(mysqlCluster, cacheKind(builtin.pod, { labelSelector: MANAGED })), used({ ...mysqlCluster, controller: "mysqlcluster" })]).values()][0]).toMatchObject({ labelSelector: MANAGED });
    // Another operator watches Pods without declaring them: it would silently see only mysql-cluster's.
    expect(() => resolveScopes([...declared(mysqlCluster, cacheKind(builtin.pod, { labelSelector: MANAGED })), used(podWatcher)])).toThrow(
      "Pod: operator mysql-cluster declares selector app.kubernetes.io/managed-by=stateward but operator pod-watcher (controller watcher, watches Pod) declares no selector",
    );
    // Nobody declares it: the whole kind.
    expect([...resolveScopes([used(podWatcher)]).values()][0]).toMatchObject({ labelSelector: undefined, metadataOnly: false });
  });

  it("refuses metadata only for a kind another operator caches in full", () => {
    expect(() =>
      resolveScopes([...declared({ operator: "a" }, cacheKind(builtin.secret)), ...declared({ operator: "b" }, cacheKind(builtin.secret, { metadataOnly: true }))]),
    ).toThrow("Secret: operator a declares no selector (full objects) but operator b declares no selector (metadata only)");
  });

  it("resolves the manager's target, which adds nothing without one", () => {
    const decls = [...declared({ operator: "a" }, cacheKind(builtin.configMap, { target: true, labelSelector: "app=a" })), ...declared({ operator: "b" }, cacheKind(builtin.configMap, { labelSelector: "app=a" }))];
    expect([...resolveScopes(decls).values()][0]?.labelSelector).toBe("app=a");
    expect(() => resolveScopes(decls, TARGET)).toThrow("ConfigMap: operator a declares selector stateward.io/target=blue,app=a but operator b declares selector app=a");
  });

  it("refuses one index name with two functions", () => {
    const decls = [
      ...declared({ operator: "a" }, cacheKind(builtin.pod, { indexers: { owner: () => ["x"] } })),
      ...declared({ operator: "b" }, cacheKind(builtin.pod, { indexers: { owner: () => ["y"] } })),
    ];
    expect(() => resolveScopes(decls)).toThrow('Pod: index "owner" is declared by operator a and, with another function, by operator b');
  });
});
