import { describe, expect, it } from "vitest";
import type { KubeObject } from "../client/index.ts";
import { Store } from "./store.ts";

const obj = (ns: string, name: string, owner?: string): KubeObject & { data?: Record<string, string> } => ({
  metadata: { namespace: ns, name, resourceVersion: "1", ownerReferences: owner ? [{ apiVersion: "v1", kind: "X", name: owner, uid: owner }] : [] },
  data: { k: "v" },
});

describe("Store", () => {
  it("hands out frozen objects, so a reconciler cannot corrupt the cache by mutating one", () => {
    const store = new Store();
    store.upsert(obj("a", "x"));
    const got = store.get("a/x") as KubeObject & { data: Record<string, string> };
    expect(() => {
      got.data.k = "changed";
    }).toThrow(TypeError);
    expect(() => {
      got.metadata.labels = {};
    }).toThrow(TypeError);
    expect((store.get("a/x") as KubeObject & { data: Record<string, string> }).data.k).toBe("v");
    // A clone is mutable.
    const copy = structuredClone(got);
    copy.data.k = "mine";
    expect(copy.data.k).toBe("mine");
  });

  it("keeps indexes in step with upserts and removals, including indexers added later", () => {
    const store = new Store();
    store.upsert(obj("a", "c1", "o1"));
    store.addIndexer("owner", (o) => (o.metadata.ownerReferences ?? []).map((r) => r.name));
    store.upsert(obj("a", "c2", "o1"));
    expect(store.byIndex("owner", "o1").map((o) => o.metadata.name).sort()).toEqual(["c1", "c2"]);
    store.upsert(obj("a", "c2", "o2"));
    expect(store.byIndex("owner", "o1").map((o) => o.metadata.name)).toEqual(["c1"]);
    store.remove("a/c1");
    expect(store.byIndex("owner", "o1")).toEqual([]);
    expect(store.byIndex("owner", "o2").map((o) => o.metadata.name)).toEqual(["c2"]);
  });
});
