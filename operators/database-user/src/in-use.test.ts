import type { InformerEvent } from "@stateward/core";
import type { MySQLInstance } from "@stateward/mysql";
import { describe, expect, it } from "vitest";
import { IN_USE_FINALIZER, IN_USE_SECRETS, changedBeyondInUse, protectable } from "./in-use.ts";

const instance = (metadata: Partial<MySQLInstance["metadata"]> = {}, status?: MySQLInstance["status"]): MySQLInstance => ({
  apiVersion: "stateward.io/v1alpha1",
  kind: "MySQLInstance",
  metadata: { name: "db", namespace: "shop", uid: "u1", generation: 1, resourceVersion: "10", ...metadata },
  spec: { host: "db.example", port: 3306, adminSecretRef: { name: "db-admin" } },
  ...(status ? { status } : {}),
});
const update = (old: MySQLInstance, obj: MySQLInstance): InformerEvent<MySQLInstance> => ({ type: "update", old, obj });

describe("changedBeyondInUse: what wakes an instance's DatabaseUsers", () => {
  it("not the in-use finalizer and its record of Secrets being written", () => {
    const before = instance({ finalizers: ["other.io/keep"], annotations: { note: "x" } });
    const after = instance({ resourceVersion: "11", finalizers: ["other.io/keep", IN_USE_FINALIZER], annotations: { note: "x", [IN_USE_SECRETS]: "db-admin" } });
    expect(changedBeyondInUse(update(before, after))).toBe(false);
    expect(changedBeyondInUse(update(after, before))).toBe(false);
  });

  it("a spec, status, label, other annotation or deletion change, and every create and delete", () => {
    const base = instance({ finalizers: [IN_USE_FINALIZER] });
    expect(changedBeyondInUse(update(base, instance({ finalizers: [IN_USE_FINALIZER], generation: 2 })))).toBe(true);
    expect(changedBeyondInUse(update(base, { ...base, status: { conditions: [] } }))).toBe(true);
    expect(changedBeyondInUse(update(base, instance({ finalizers: [IN_USE_FINALIZER], labels: { "stateward.io/target": "a" } })))).toBe(true);
    expect(changedBeyondInUse(update(base, instance({ finalizers: [IN_USE_FINALIZER], annotations: { note: "y" } })))).toBe(true);
    expect(changedBeyondInUse(update(base, instance({ finalizers: [IN_USE_FINALIZER], deletionTimestamp: "2026-12-07T00:00:00Z" })))).toBe(true);
    expect(changedBeyondInUse({ type: "add", obj: base })).toBe(true);
    expect(changedBeyondInUse({ type: "delete", obj: base })).toBe(true);
  });
});

describe("protectable", () => {
  it("holds an instance of its own, not a MySQLCluster's (its servers go with the cluster)", () => {
    expect(protectable(instance())).toBe(true);
    expect(protectable(instance({ ownerReferences: [{ apiVersion: "stateward.io/v1alpha1", kind: "MySQLCluster", name: "shop", uid: "c1", controller: true }] }))).toBe(false);
  });
});
