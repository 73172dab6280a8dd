import { describe, expect, it } from "vitest";
import { detectPrimaryLoss, type DetectionInput } from "./failover-detection.ts";

const t0 = new Date("2026-01-01T00:00:00Z");
const at = (seconds: number) => new Date(t0.getTime() + seconds * 1000);
const input = (over: Partial<DetectionInput>): DetectionInput => ({
  now: at(40),
  unreachableSince: t0,
  detectionSeconds: 30,
  signals: ["its pod is not Ready"],
  rollout: undefined,
  primary: "db-0",
  error: "connect ECONNREFUSED",
  ...over,
});

/** The kind and message of a detection, to match on. */
function seen(over: Partial<DetectionInput>): string {
  const d = detectPrimaryLoss(input(over));
  return `${d.kind}: ${"message" in d ? d.message : ""}`;
}

describe("when a primary counts as lost", () => {
  it("not while it answers", () => {
    expect(detectPrimaryLoss(input({ unreachableSince: undefined }))).toEqual({ kind: "healthy" });
  });

  it("not before detectionSeconds (a blip)", () => {
    expect(seen({ now: at(29) })).toMatch(/^suspect: .*29 s.*lost after 30 s/);
  });

  it("not without a second signal, however long", () => {
    expect(seen({ now: at(600), signals: [] })).toMatch(/^suspect: .*pod is Ready/);
  });

  it("never during a rollout", () => {
    expect(seen({ now: at(600), rollout: { pod: "db-0" } })).toMatch(/^suspect: .*during a rollout/);
  });

  it("after detectionSeconds with a second signal, naming both", () => {
    expect(detectPrimaryLoss(input({ signals: ["its pod is not Ready", "no replica is connected to it"] }))).toEqual({
      kind: "lost",
      message: "db-0 has not answered for 40 s (connect ECONNREFUSED) and its pod is not Ready, no replica is connected to it",
    });
  });
});
