import { describe, expect, it } from "vitest";
import { isSubset } from "./owned.ts";

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
