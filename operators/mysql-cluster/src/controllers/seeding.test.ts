import { BackgroundTasks } from "@stateward/core";
import { describe, expect, it } from "vitest";
import { ReplicaSeeding, SEED_BACKOFF_MAX_MS, seedBackoffMs, seedingCondition } from "./seeding.ts";

describe("seed back-off", () => {
  it("doubles from 5 s and stops at 5 min", () => {
    expect([0, 1, 2, 3, 4].map(seedBackoffMs)).toEqual([0, 5_000, 10_000, 20_000, 40_000]);
    expect(seedBackoffMs(7)).toBe(SEED_BACKOFF_MAX_MS);
    expect(seedBackoffMs(1_000)).toBe(SEED_BACKOFF_MAX_MS);
  });
});

describe("seeding in the background", () => {
  it("runs one seed per replica, waits out the back-off after a failure, then tries again", async () => {
    const tasks = new BackgroundTasks();
    let now = 0;
    const seeding = new ReplicaSeeding(tasks, () => now);
    const failures: number[] = [];
    let attempts = 0;
    let release: () => void = () => undefined;
    const seed = () => {
      attempts++;
      return new Promise<never>((_, reject) => (release = () => reject(new Error("busy"))));
    };
    const callbacks = {
      succeeded: () => Promise.resolve(),
      failed: (_m: string, _b: boolean, n: number) => {
        failures.push(n);
        return Promise.resolve();
      },
    };
    const describe = (err: unknown) => ({ message: (err as Error).message, busy: true });
    expect(seeding.ensure("ns", "db", "db-1", seed, describe, callbacks).kind).toBe("running");
    expect(seeding.ensure("ns", "db", "db-1", seed, describe, callbacks).kind).toBe("running");
    expect(attempts).toBe(1);
    release();
    await new Promise((r) => setTimeout(r, 10));
    expect(failures).toEqual([1]);
    expect(seeding.ensure("ns", "db", "db-1", seed, describe, callbacks)).toMatchObject({ kind: "backoff", failures: 1, lastError: "busy", busy: true });
    expect(attempts).toBe(1);
    now += 5_000;
    expect(seeding.ensure("ns", "db", "db-1", seed, describe, callbacks).kind).toBe("running");
    expect(attempts).toBe(2);
    release();
    await new Promise((r) => setTimeout(r, 10));
    expect(seeding.ensure("ns", "db", "db-1", seed, describe, callbacks)).toMatchObject({ kind: "backoff", failures: 2 });
    await tasks.stop(1_000);
  });
});

describe("the Seeding condition", () => {
  it("says what runs, what waits and when it is over", () => {
    const since = new Date(0);
    expect(seedingCondition([{ kind: "running", pod: "db-1", since }], undefined)).toMatchObject({ status: "True", reason: "Copying" });
    expect(seedingCondition([{ kind: "backoff", pod: "db-1", failures: 2, lastError: "long statements", busy: true, nextAttempt: new Date(10_000) }], undefined)).toMatchObject({
      status: "True",
      reason: "BackingOff",
      message: "db-1: attempt 2 put off: long statements; next attempt at 1970-01-01T00:00:10.000Z",
    });
    expect(seedingCondition([], { status: "True" })).toMatchObject({ status: "False", reason: "Complete" });
    expect(seedingCondition([], undefined)).toBeUndefined();
  });
});
