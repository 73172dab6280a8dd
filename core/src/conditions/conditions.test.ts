import { describe, expect, it } from "vitest";
import { findCondition, isConditionTrue, setCondition } from "./conditions.ts";

const t0 = new Date("2026-01-01T00:00:00.123Z");
const t1 = new Date("2026-01-01T00:05:00.000Z");

describe("setCondition", () => {
  it("adds a condition with the transition time and generation", () => {
    const list = setCondition(undefined, { type: "Ready", status: "False", reason: "SecretNotFound", message: "Secret app-db not found", observedGeneration: 2 }, t0);
    expect(list).toEqual([
      { type: "Ready", status: "False", reason: "SecretNotFound", message: "Secret app-db not found", lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 2 },
    ]);
  });

  it("keeps lastTransitionTime while the status stays the same, even if reason and message change", () => {
    const a = setCondition(undefined, { type: "Ready", status: "False", reason: "A", message: "a" }, t0);
    const b = setCondition(a, { type: "Ready", status: "False", reason: "B", message: "b" }, t1);
    expect(findCondition(b, "Ready")).toMatchObject({ reason: "B", lastTransitionTime: "2026-01-01T00:00:00Z" });
  });

  it("moves lastTransitionTime when the status flips, and leaves other conditions alone", () => {
    let list = setCondition(undefined, { type: "Available", status: "True", reason: "Up", message: "" }, t0);
    list = setCondition(list, { type: "Ready", status: "False", reason: "A", message: "" }, t0);
    const before = structuredClone(list);
    list = setCondition(list, { type: "Ready", status: "True", reason: "Reconciled", message: "" }, t1);
    expect(findCondition(list, "Ready")?.lastTransitionTime).toBe("2026-01-01T00:05:00Z");
    expect(findCondition(list, "Available")).toEqual(findCondition(before, "Available"));
    expect(isConditionTrue(list, "Ready")).toBe(true);
    // The input list is not mutated.
    expect(isConditionTrue(before, "Ready")).toBe(false);
  });
});
