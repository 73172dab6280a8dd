import { describe, expect, it } from "vitest";
import { planRollout, type RolloutInput, type RolloutMember } from "./rollout.ts";

const m = (ordinal: number, role: "primary" | "replica", updated: boolean, ready = true, progress = 10n): RolloutMember => ({ ordinal, name: `db-${ordinal}`, role, ready, updated, progress });
const now = new Date("2026-11-30T12:00:00Z");
const plan = (members: RolloutMember[], extra: Partial<RolloutInput> = {}) => planRollout({ members, desired: members.length, paused: false, primaryAnswers: true, healthGateSeconds: 300, now, ...extra });

describe("the rollout plan", () => {
  it("restarts replicas highest ordinal first, then switches over, then restarts the old primary", () => {
    expect(plan([m(0, "primary", false), m(1, "replica", false), m(2, "replica", false)])).toMatchObject({ kind: "restart", pod: "db-2" });
    expect(plan([m(0, "primary", false), m(1, "replica", false), m(2, "replica", true)])).toMatchObject({ kind: "restart", pod: "db-1" });
    const switchover = plan([m(0, "primary", false), m(1, "replica", true, true, 10n), m(2, "replica", true, true, 12n)]);
    expect(switchover).toMatchObject({ kind: "switchover", from: { name: "db-0" }, to: { name: "db-2" } });
    expect(plan([m(0, "replica", false), m(1, "replica", true), m(2, "primary", true)])).toMatchObject({ kind: "restart", pod: "db-0", role: "replica" });
    expect(plan([m(0, "replica", true), m(1, "replica", true), m(2, "primary", true)])).toEqual({ kind: "complete" });
  });

  it("waits for the restarted pod, and pauses when it misses the health gate", () => {
    const members = [m(0, "primary", false), m(1, "replica", false), m(2, "replica", true, false)];
    expect(plan(members, { inProgress: { pod: "db-2", startedAt: "2026-11-30T11:58:00Z" } })).toMatchObject({ kind: "wait" });
    const blocked = plan(members, { inProgress: { pod: "db-2", startedAt: "2026-11-30T11:50:00Z" } });
    expect(blocked).toMatchObject({ kind: "blocked", reason: "HealthGateFailed", pod: "db-2" });
    expect(blocked.kind === "blocked" && blocked.message).toMatch(/db-2 did not become Ready/);
  });

  it("rolls back a failed pod first when the change is reverted", () => {
    // Reverted: the failed pod (db-2, not Ready) now runs an outdated revision; it is restarted first.
    const members = [m(0, "primary", true), m(1, "replica", true), m(2, "replica", false, false)];
    expect(plan(members, { inProgress: { pod: "db-2", startedAt: "2026-11-30T11:50:00Z" } })).toMatchObject({ kind: "restart", pod: "db-2" });
  });

  it("does nothing while paused or while the cluster is short of servers or not Ready", () => {
    const members = [m(0, "primary", false), m(1, "replica", false)];
    expect(plan(members, { paused: true })).toMatchObject({ kind: "blocked", reason: "Paused" });
    expect(plan(members, { desired: 3 })).toMatchObject({ kind: "wait" });
    expect(plan([m(0, "primary", false, false), m(1, "replica", false)])).toMatchObject({ kind: "wait" });
  });

  it("restarts nothing while the primary does not answer: its replicas are not broken, one may be promoted", () => {
    // Not Ready because the primary is gone (not replicating): they would look broken and be restarted first.
    const members = [m(0, "primary", false, false), m(1, "replica", false, false), m(2, "replica", false, false)];
    const decision = plan(members, { primaryAnswers: false });
    expect(decision).toMatchObject({ kind: "wait" });
    expect(decision.kind === "wait" && decision.message).toMatch(/waiting for the primary db-0 to answer/);
    // The health gate of a pod restarted before still counts.
    const restarted = [m(0, "primary", false, false), m(1, "replica", false, false), m(2, "replica", true, false)];
    expect(plan(restarted, { primaryAnswers: false, inProgress: { pod: "db-2", startedAt: "2026-11-30T11:50:00Z" } })).toMatchObject({ kind: "blocked", reason: "HealthGateFailed" });
  });

  it("does not restart a replica whose seed runs: it waits for the copy", () => {
    const members = [m(0, "primary", false), m(1, "replica", false), m(2, "replica", false, false)];
    expect(plan(members)).toMatchObject({ kind: "restart", pod: "db-2" });
    const decision = plan(members, { seeding: ["db-2"] });
    expect(decision).toMatchObject({ kind: "wait" });
    expect(decision.kind === "wait" && decision.message).toBe("waiting for db-2 (being seeded) to be Ready before the next step");
  });

  it("switches over on request, to the requested replica", () => {
    const members = [m(0, "primary", true), m(1, "replica", true, true, 30n), m(2, "replica", true, true, 10n)];
    expect(plan(members, { requestedPrimary: 2 })).toMatchObject({ kind: "switchover", to: { name: "db-2" } });
    expect(plan(members, { requestedPrimary: 0 })).toEqual({ kind: "complete" });
    expect(plan(members, { requestedPrimary: 7 })).toMatchObject({ kind: "blocked", reason: "PrimaryNotEligible" });
  });

  it("restarts a lone primary in place", () => {
    expect(plan([m(0, "primary", false)])).toMatchObject({ kind: "restart", pod: "db-0", role: "primary" });
  });
});
