import { describe, expect, it } from "vitest";
import { boundedWait } from "./catch-up.ts";

const t0 = new Date("2026-01-01T00:00:00Z");
const at = (ms: number) => new Date(t0.getTime() + ms);

describe("a wait bounded by the injected clock", () => {
  it("is waiting, with the time left, until the bound has passed", () => {
    expect(boundedWait(t0, t0, 30_000)).toEqual({ kind: "waiting", leftMs: 30_000 });
    expect(boundedWait(t0, at(29_800), 30_000)).toEqual({ kind: "waiting", leftMs: 200 });
    expect(boundedWait(t0, at(30_000), 30_000)).toEqual({ kind: "waiting", leftMs: 0 });
  });

  it("is overdue after it, with how long it waited", () => {
    expect(boundedWait(t0, at(30_001), 30_000)).toEqual({ kind: "overdue", waitedMs: 30_001 });
  });
});
