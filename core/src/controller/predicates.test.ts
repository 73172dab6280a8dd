import { describe, expect, it } from "vitest";
import type { KubeObject } from "../client/index.ts";
import { generationChanged, matchesLabels } from "./predicates.ts";

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
