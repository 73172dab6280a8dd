import { describe, expect, it } from "vitest";
import type { KubeObject } from "../client/index.ts";
import { generationChanged, labelsOrAnnotationsChanged, labelsOrAnnotationsChangedExcept, matchesLabels } from "./predicates.ts";

const o = (generation: number, deletionTimestamp?: string): KubeObject => ({ metadata: { name: "x", generation, deletionTimestamp } });

describe("generationChanged", () => {
  it("drops updates that only touched status or metadata, keeps spec changes, deletions, adds and deletes", () => {
    expect(generationChanged({ type: "update", obj: o(1), old: o(1) })).toBe(false);
    expect(generationChanged({ type: "update", obj: o(2), old: o(1) })).toBe(true);
    expect(generationChanged({ type: "update", obj: o(1, "2026-01-01T00:00:00Z"), old: o(1) })).toBe(true);
    expect(generationChanged({ type: "add", obj: o(1) })).toBe(true);
    expect(generationChanged({ type: "delete", obj: o(1) })).toBe(true);
  });
});

describe("labelsOrAnnotationsChanged(Except)", () => {
  const m = (labels: Record<string, string>, annotations: Record<string, string>): KubeObject => ({ metadata: { name: "x", labels, annotations } });
  const mine = "example.com/claimed-by";
  const except = labelsOrAnnotationsChangedExcept([mine]);

  it("passes label and annotation changes, and adds and deletes", () => {
    expect(labelsOrAnnotationsChanged({ type: "update", obj: m({ a: "1" }, {}), old: m({}, {}) })).toBe(true);
    expect(labelsOrAnnotationsChanged({ type: "update", obj: m({}, { note: "x" }), old: m({}, {}) })).toBe(true);
    expect(labelsOrAnnotationsChanged({ type: "update", obj: m({}, {}), old: m({}, {}) })).toBe(false);
    expect(except({ type: "add", obj: m({}, {}) })).toBe(true);
    expect(except({ type: "delete", obj: m({}, {}) })).toBe(true);
  });

  it("is blind to the ignored annotations only", () => {
    expect(labelsOrAnnotationsChanged({ type: "update", obj: m({}, { [mine]: "uid" }), old: m({}, {}) })).toBe(true);
    expect(except({ type: "update", obj: m({}, { [mine]: "uid" }), old: m({}, {}) })).toBe(false);
    expect(except({ type: "update", obj: m({}, { [mine]: "uid", note: "x" }), old: m({}, { [mine]: "uid" }) })).toBe(true);
    expect(except({ type: "update", obj: m({ a: "1" }, { [mine]: "uid" }), old: m({}, {}) })).toBe(true);
  });
});

describe("matchesLabels", () => {
  it("implements equality-based selectors", () => {
    const labels = { "stateward.io/target": "db1", tier: "gold" };
    expect(matchesLabels("stateward.io/target=db1", labels)).toBe(true);
    expect(matchesLabels("stateward.io/target==db1", labels)).toBe(true);
    expect(matchesLabels("stateward.io/target=db2", labels)).toBe(false);
    expect(matchesLabels("tier!=silver,stateward.io/target", labels)).toBe(true);
    expect(matchesLabels("!tier", labels)).toBe(false);
    expect(matchesLabels("missing", undefined)).toBe(false);
  });
});
