import { describe, expect, it } from "vitest";
import { planSemiSync, type SemiSyncState } from "./semi-sync.ts";

const off: SemiSyncState = { enabled: false, active: false, clients: 2, timeoutMs: 10_000 };
const on: SemiSyncState = { enabled: true, active: true, clients: 2, timeoutMs: 10_000 };

describe("the primary's semi-sync side, planned from one read", () => {
  it("changes nothing that is already as wished", () => {
    expect(planSemiSync(on, { enabled: true, timeoutMs: 10_000 })).toEqual({ done: [], after: on });
    expect(planSemiSync(off, { enabled: false, timeoutMs: 2_000 })).toEqual({ done: [], after: off });
  });

  it("sets the timeout before turning it on, and says what the server then reports without reading it again", () => {
    expect(planSemiSync(off, { enabled: true, timeoutMs: 2_000 })).toEqual({
      timeoutMs: 2_000,
      enabled: true,
      done: ["semi-sync timeout 2000 ms", "semi-sync on"],
      after: { enabled: true, active: true, clients: 2, timeoutMs: 2_000 },
    });
  });

  it("turns it off, inactive, when no longer wished (one server, Async)", () => {
    expect(planSemiSync({ ...on, active: false }, { enabled: false, timeoutMs: 10_000 })).toEqual({ enabled: false, done: ["semi-sync off"], after: { ...off } });
  });

  it("keeps a fallback to asynchronous visible: a switch already on is not touched, so its status stays as read", () => {
    const fellBack = { ...on, active: false };
    expect(planSemiSync(fellBack, { enabled: true, timeoutMs: 10_000 }).after).toEqual(fellBack);
  });
});
