import { describe, expect, it } from "vitest";
import { NameConflictError, checkControlled, isSubset } from "./owned.ts";

describe("isSubset", () => {
  it("ignores fields the server added and compares the ones we set", () => {
    const live = { metadata: { name: "a", uid: "u", labels: { x: "1", added: "y" } }, data: { k: "v" } };
    expect(isSubset({ metadata: { name: "a", labels: { x: "1" } }, data: { k: "v" } }, live)).toBe(true);
    expect(isSubset({ data: { k: "edited" } }, live)).toBe(false);
    expect(isSubset({ data: { missing: "v" } }, live)).toBe(false);
  });

  it("compares arrays whole, element by element", () => {
    expect(isSubset({ a: [{ n: 1 }] }, { a: [{ n: 1, extra: true }] })).toBe(true);
    expect(isSubset({ a: [1, 2] }, { a: [1, 2, 3] })).toBe(false);
    expect(isSubset({ a: [] }, { a: undefined })).toBe(false);
  });
});

describe("checkControlled", () => {
  const rt = { apiVersion: "v1", kind: "ConfigMap" } as Parameters<typeof checkControlled>[0];
  const obj = (ownerReferences?: { uid: string; controller?: boolean }[]) => ({ metadata: { name: "db-config", namespace: "ns", ownerReferences: ownerReferences?.map((o) => ({ apiVersion: "v1", kind: "X", name: "x", ...o })) } });

  it("lets an absent object or one this owner controls through", () => {
    expect(() => checkControlled(rt, undefined, "u1")).not.toThrow();
    expect(() => checkControlled(rt, obj([{ uid: "u1", controller: true }]), "u1")).not.toThrow();
  });

  it("refuses an object without this owner's controller reference, naming it", () => {
    expect(() => checkControlled(rt, obj(), "u1")).toThrow(NameConflictError);
    expect(() => checkControlled(rt, obj([{ uid: "u1" }]), "u1")).toThrow(/ConfigMap db-config already exists in namespace ns and is not created by this owner/);
    expect(() => checkControlled(rt, obj([{ uid: "u2", controller: true }]), "u1")).toThrow(/controlled by X x/);
  });
});
