import { describe, expect, it } from "vitest";
import type { KubeClient } from "../client/index.ts";
import { builtin } from "../client/index.ts";
import { Cache } from "./cache.ts";

// Nothing is started: no informer lists or watches, so no client is needed.
const offline = {} as KubeClient;

describe("the cache, built from declarations", () => {
  it("builds informers only once every kind is declared, whatever the order of uses, reads, indexers and declarations", () => {
    const cache = new Cache(offline, { namespaces: ["a", "b"], targetSelector: "stateward.io/target=blue" });
    cache.addIndexer(builtin.configMap, "owner", () => []);
    cache.use(builtin.configMap, { operator: "mysql-cluster", controller: "mysqlcluster", use: "owns ConfigMap" });
    expect(cache.list(builtin.configMap)).toEqual([]);
    expect(cache.informers()).toEqual([]);
    cache.declare(builtin.configMap, { target: true, labelSelector: "app=x" }, { operator: "mysql-cluster" });
    cache.build();
    expect(cache.scopeOf(builtin.configMap)).toEqual({ labelSelector: "stateward.io/target=blue,app=x", metadataOnly: false, by: "operator mysql-cluster" });
    expect(cache.informers()).toHaveLength(2);
  });

  it("fails to build on two different declarations, and refuses a declaration once built", () => {
    const cache = new Cache(offline);
    cache.declare(builtin.pod, { labelSelector: "app=x" }, { operator: "x" });
    cache.declare(builtin.pod, {}, { operator: "y" });
    expect(() => cache.build()).toThrow("Pod: operator x declares selector app=x but operator y declares no selector");
    const built = new Cache(offline);
    built.build();
    expect(() => built.declare(builtin.pod, {}, { operator: "late" })).toThrow(/Pod: operator late declares how it is cached after the cache was built/);
  });

  it("caches a kind nobody declared whole, from its first use", () => {
    const cache = new Cache(offline, { namespaces: ["a"] });
    cache.build();
    expect(cache.list(builtin.secret)).toEqual([]);
    expect(cache.scopeOf(builtin.secret)).toMatchObject({ metadataOnly: false });
    expect(cache.scopeOf(builtin.secret)?.labelSelector).toBeUndefined();
  });
});
