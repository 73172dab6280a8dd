import { describe, expect, it } from "vitest";
import { planScaleIn, scaleInCondition } from "./scale-in.ts";

const facts = { name: "db", current: 3, desired: 2, primaryOrdinal: 0, primaryProblem: undefined };

describe("scaling in", () => {
  it("removes the highest ordinals while the primary answers and stays", () => {
    expect(planScaleIn(facts)).toEqual({ replicas: 2, primaryLeaving: false });
    expect(planScaleIn({ ...facts, current: 2, desired: 3 })).toEqual({ replicas: 3, primaryLeaving: false });
  });

  it("keeps every server while the primary would leave (a switchover first) or none is on record", () => {
    expect(planScaleIn({ ...facts, primaryOrdinal: 2 })).toEqual({ replicas: 3, primaryLeaving: true });
    expect(planScaleIn({ ...facts, primaryOrdinal: undefined })).toEqual({ replicas: 3, primaryLeaving: false });
  });

  it("keeps every server while the primary does not answer, and says why", () => {
    const plan = planScaleIn({ ...facts, primaryProblem: "connect ECONNREFUSED" });
    expect(plan.replicas).toBe(3);
    expect(plan.heldBecause).toBe(
      "scaling in to 2 waits: the primary db-0 does not answer (connect ECONNREFUSED); a leaving replica may hold the only copy of writes it acknowledged, so none is removed until a primary answers (it, or one a failover promotes)",
    );
    expect(scaleInCondition(plan, undefined)).toMatchObject({ type: "ScaleInHeld", status: "True", reason: "PrimaryNotAnswering" });
    // A lost primary that would leave anyway: held all the same, for the same reason.
    const leavingAndLost = planScaleIn({ ...facts, primaryOrdinal: 2, primaryProblem: "its pod does not exist" });
    expect(leavingAndLost).toMatchObject({ replicas: 3, primaryLeaving: true });
    expect(leavingAndLost.heldBecause).toContain("the primary db-2 does not answer (its pod does not exist)");
  });

  it("holds nothing back when nothing shrinks, and says so only after it held", () => {
    expect(planScaleIn({ ...facts, desired: 3, primaryProblem: "timeout" })).toEqual({ replicas: 3, primaryLeaving: false });
    const going = planScaleIn(facts);
    expect(scaleInCondition(going, undefined)).toBeUndefined();
    expect(scaleInCondition(going, { status: "True" })).toMatchObject({ type: "ScaleInHeld", status: "False", reason: "PrimaryAnswers" });
    expect(scaleInCondition(going, { status: "False" })).toBeUndefined();
  });
});
