import { describe, expect, it } from "vitest";
import { ExponentialFailureRateLimiter } from "./rate-limiter.ts";

describe("ExponentialFailureRateLimiter", () => {
  it("waits 5 ms, 10 ms, 20 ms, ... doubling per failure and stops at 1000 s", () => {
    const limiter = new ExponentialFailureRateLimiter();
    const delays = Array.from({ length: 21 }, () => limiter.when("ns/a"));
    expect(delays.slice(0, 5)).toEqual([5, 10, 20, 40, 80]);
    // 5 ms · 2^17 = 655.36 s is the last step below the cap; 5 ms · 2^18 would be 1310.72 s.
    expect(delays[17]).toBe(655_360);
    expect(delays.slice(18)).toEqual([1_000_000, 1_000_000, 1_000_000]);
    expect(limiter.numRequeues("ns/a")).toBe(21);
  });

  it("stays at the cap, a finite number, after thousands of failures", () => {
    const limiter = new ExponentialFailureRateLimiter();
    let last = 0;
    for (let i = 0; i < 5000; i++) last = limiter.when("ns/broken");
    expect(last).toBe(1_000_000);
    expect(limiter.numRequeues("ns/broken")).toBe(5000);
  });

  it("backs keys off independently", () => {
    const limiter = new ExponentialFailureRateLimiter();
    limiter.when("ns/a");
    limiter.when("ns/a");
    limiter.when("ns/a");
    expect(limiter.when("ns/b")).toBe(5);
    expect(limiter.when("ns/a")).toBe(40);
  });

  it("starts again at the base delay after forget", () => {
    const limiter = new ExponentialFailureRateLimiter();
    for (let i = 0; i < 6; i++) limiter.when("ns/a");
    limiter.forget("ns/a");
    expect(limiter.numRequeues("ns/a")).toBe(0);
    expect(limiter.when("ns/a")).toBe(5);
  });

  it("uses the base and maximum it is given", () => {
    const limiter = new ExponentialFailureRateLimiter({ baseDelayMs: 100, maxDelayMs: 350 });
    expect([1, 2, 3, 4].map(() => limiter.when("k"))).toEqual([100, 200, 350, 350]);
  });

  it("keeps a zero base delay at zero however many failures there were", () => {
    const limiter = new ExponentialFailureRateLimiter({ baseDelayMs: 0 });
    let last = -1;
    for (let i = 0; i < 1100; i++) last = limiter.when("k");
    expect(last).toBe(0);
  });

  it("rejects delays that would disable backoff", () => {
    expect(() => new ExponentialFailureRateLimiter({ baseDelayMs: -1 })).toThrow(RangeError);
    expect(() => new ExponentialFailureRateLimiter({ baseDelayMs: Number.NaN })).toThrow(RangeError);
    expect(() => new ExponentialFailureRateLimiter({ baseDelayMs: 10, maxDelayMs: 5 })).toThrow(RangeError);
  });
});
