import { describe, expect, it } from "vitest";
import type { KubeClient } from "../client/index.ts";
import { builtin } from "../client/index.ts";
import { Cache } from "./cache.ts";

// Nothing is started: no informer lists or watches, so no client is needed.
const offline = {} as KubeClient;

describe("how a kind is cached", () => {
  it("refuses a second label selector for a kind, naming both callers", () => {
    const cache = new Cache(offline, { namespaces: ["a", "b"] });
    cache.register(builtin.configMap, { labelSelector: "app.kubernetes.io/name=mysql-cluster", by: "controller mysqlcluster (owns ConfigMap)" });
    expect(() => cache.register(builtin.configMap, { labelSelector: "app=widget", by: "controller widget (owns ConfigMap)" })).toThrow(
      'ConfigMap is cached with label selector "app.kubernetes.io/name=mysql-cluster" for controller mysqlcluster (owns ConfigMap), and controller widget (owns ConfigMap) asks for it with label selector "app=widget"',
    );
    // The same declaration again, or none, is fine.
    cache.register(builtin.configMap, { labelSelector: "app.kubernetes.io/name=mysql-cluster", by: "another" });
    cache.register(builtin.configMap, { by: "a caller without an opinion" });
    expect(cache.scopeOf(builtin.configMap)).toEqual({ labelSelector: "app.kubernetes.io/name=mysql-cluster", metadataOnly: false, by: "controller mysqlcluster (owns ConfigMap)" });
  });

  it("refuses a selector for a kind another caller caches whole", () => {
    const cache = new Cache(offline);
    cache.register(builtin.pod, { labelSelector: "", by: "controller everything (watches Pod)" });
    expect(() => cache.register(builtin.pod, { labelSelector: "x=y", by: "controller mine (owns Pod)" })).toThrow(/Pod is cached with label selector "" for controller everything \(watches Pod\), and controller mine \(owns Pod\) asks for it with label selector "x=y"/);
  });

  it("lets a declaration made before the start apply to a kind first touched by a read", () => {
    const cache = new Cache(offline, { namespaces: ["a"] });
    expect(cache.list(builtin.pod)).toEqual([]);
    cache.register(builtin.pod, { labelSelector: "app.kubernetes.io/name=mysql-cluster", by: "controller mysqlcluster (watches Pod)" });
    expect(cache.scopeOf(builtin.pod)).toMatchObject({ labelSelector: "app.kubernetes.io/name=mysql-cluster", by: "controller mysqlcluster (watches Pod)" });
    expect(cache.informers()).toHaveLength(1);
  });

  it("refuses metadata only for a kind cached in full", () => {
    const cache = new Cache(offline);
    cache.register(builtin.secret, { metadataOnly: false, by: "controller a (watches Secret)" });
    expect(() => cache.register(builtin.secret, { metadataOnly: true, by: "controller b (watches Secret)" })).toThrow(/Secret is cached in full for controller a \(watches Secret\), and controller b \(watches Secret\) asks for it as metadata only/);
  });
});
