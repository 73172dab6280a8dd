import { afterEach, describe, expect, it, vi } from "vitest";
import type { RateLimiter } from "./index.ts";
import { ExponentialFailureRateLimiter, WorkQueue } from "./index.ts";
import type { QueueMetrics } from "./work-queue.ts";

/** Lets settled promises run their callbacks (fake timers leave microtasks alone). */
async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

/** Follows a promise so a test can ask whether it has settled yet, and with what. */
function track<T>(promise: Promise<T>): { settled: boolean; value: T | undefined } {
  const state: { settled: boolean; value: T | undefined } = { settled: false, value: undefined };
  void promise.then((value) => {
    state.settled = true;
    state.value = value;
  });
  return state;
}

/** Takes every key that is waiting right now, in the order get() hands them out. */
async function takeAll(queue: WorkQueue): Promise<string[]> {
  const keys: string[] = [];
  while (queue.len() > 0) {
    const key = await queue.get();
    if (key === undefined) break;
    keys.push(key);
  }
  return keys;
}

function manualClock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000;
  return { now: () => t, advance: (ms) => (t += ms) };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("WorkQueue add/get/done", () => {
  it("keeps one entry for a key added several times while it waits", async () => {
    const queue = new WorkQueue({ name: "test" });
    queue.add("ns/a");
    queue.add("ns/a");
    queue.add("ns/b");
    queue.add("ns/a");
    expect(queue.len()).toBe(2);
    expect(await queue.get()).toBe("ns/a");
    expect(await queue.get()).toBe("ns/b");
    const third = track(queue.get());
    await flush();
    expect(third.settled).toBe(false);
    queue.shutDown();
  });

  it("hands keys out in the order they were first added", async () => {
    const queue = new WorkQueue({ name: "test" });
    for (const key of ["ns/c", "ns/a", "ns/b", "ns/c"]) queue.add(key);
    expect(await takeAll(queue)).toEqual(["ns/c", "ns/a", "ns/b"]);
  });

  it("lists the keys get() will hand out next, in order, without taking them; none once shutting down", async () => {
    const queue = new WorkQueue({ name: "test" });
    for (const key of ["ns/c", "ns/a", "ns/b", "ns/d"]) queue.add(key);
    expect(queue.upcoming(3)).toEqual(["ns/c", "ns/a", "ns/b"]);
    expect(queue.upcoming(0)).toEqual([]);
    expect(await queue.get()).toBe("ns/c");
    expect(queue.upcoming(10)).toEqual(["ns/a", "ns/b", "ns/d"]);
    queue.shutDown();
    expect(queue.upcoming(10)).toEqual([]);
  });

  it("waits in get() until a key is added", async () => {
    const queue = new WorkQueue({ name: "test" });
    const pending = track(queue.get());
    await flush();
    expect(pending.settled).toBe(false);
    queue.add("ns/a");
    await flush();
    expect(pending.value).toBe("ns/a");
  });

  it("never hands one key to two concurrent getters, and re-queues it for the next free one", async () => {
    const queue = new WorkQueue({ name: "test" });
    const first = track(queue.get());
    const second = track(queue.get());
    const third = track(queue.get());
    queue.add("ns/a");
    queue.add("ns/a");
    await flush();
    expect(first.value).toBe("ns/a");
    // ns/a is being processed: the second add must wait for done, not go to another worker.
    expect(second.settled).toBe(false);
    queue.add("ns/b");
    await flush();
    expect(second.value).toBe("ns/b");
    expect(third.settled).toBe(false);
    queue.done("ns/a");
    await flush();
    expect(third.value).toBe("ns/a");
    queue.shutDown();
  });

  it("gives distinct keys to many workers racing for them", async () => {
    const queue = new WorkQueue({ name: "test" });
    const inFlight = new Set<string>();
    let overlaps = 0;
    const handled: string[] = [];
    const worker = async (): Promise<void> => {
      for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
        if (inFlight.has(key)) overlaps++;
        inFlight.add(key);
        handled.push(key);
        // Events for the same keys keep arriving while they are processed.
        queue.add(key === "k0" ? "k1" : "k0");
        await flush();
        inFlight.delete(key);
        queue.done(key);
      }
    };
    const workers = Array.from({ length: 5 }, () => worker());
    for (let i = 0; i < 4; i++) queue.add(`k${i}`);
    for (let i = 0; i < 20; i++) await flush();
    queue.shutDown();
    await Promise.all(workers);
    expect(overlaps).toBe(0);
    expect(new Set(handled)).toEqual(new Set(["k0", "k1", "k2", "k3"]));
  });

  it("re-queues a key added during processing exactly once when it is done", async () => {
    const queue = new WorkQueue({ name: "test" });
    queue.add("ns/a");
    expect(await queue.get()).toBe("ns/a");
    queue.add("ns/a");
    queue.add("ns/a");
    queue.add("ns/a");
    expect(queue.len()).toBe(0);
    queue.done("ns/a");
    expect(queue.len()).toBe(1);
    expect(await queue.get()).toBe("ns/a");
    queue.done("ns/a");
    expect(queue.len()).toBe(0);
  });

  it("does not re-queue a key that was not added again during processing", async () => {
    const queue = new WorkQueue({ name: "test" });
    queue.add("ns/a");
    expect(await queue.get()).toBe("ns/a");
    queue.done("ns/a");
    queue.done("ns/a");
    expect(queue.len()).toBe(0);
  });

  it("keeps order and every key across 10,000 keys interleaved with gets", async () => {
    const queue = new WorkQueue({ name: "test" });
    const expected: string[] = [];
    const got: string[] = [];
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 2_500; i++) {
        const key = `ns/obj-${round}-${i}`;
        expected.push(key);
        queue.add(key);
      }
      for (let i = 0; i < 1_700; i++) {
        const key = await queue.get();
        if (key !== undefined) got.push(key);
      }
    }
    got.push(...(await takeAll(queue)));
    expect(got).toEqual(expected);
  });
});

describe("WorkQueue delayed adds", () => {
  it("adds the key once its delay has passed", async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue({ name: "test" });
    queue.addAfter("ns/a", 100);
    expect(queue.len()).toBe(0);
    await vi.advanceTimersByTimeAsync(99);
    expect(queue.len()).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(await takeAll(queue)).toEqual(["ns/a"]);
  });

  it("keeps the earlier time when a key is delayed again for longer", async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue({ name: "test" });
    queue.addAfter("ns/a", 50);
    queue.addAfter("ns/a", 500);
    await vi.advanceTimersByTimeAsync(50);
    expect(await takeAll(queue)).toEqual(["ns/a"]);
    queue.done("ns/a");
    // The longer request was absorbed by the earlier one, not kept for later.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(queue.len()).toBe(0);
  });

  it("moves a delayed key earlier when it is delayed again for less", async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue({ name: "test" });
    queue.addAfter("ns/a", 500);
    await vi.advanceTimersByTimeAsync(100);
    queue.addAfter("ns/a", 50);
    await vi.advanceTimersByTimeAsync(49);
    expect(queue.len()).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(await takeAll(queue)).toEqual(["ns/a"]);
    queue.done("ns/a");
    await vi.advanceTimersByTimeAsync(1_000);
    expect(queue.len()).toBe(0);
  });

  it("releases delayed keys in the order they fall due, not the order they were added", async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue({ name: "test" });
    queue.addAfter("ns/late", 30);
    queue.addAfter("ns/early", 10);
    queue.addAfter("ns/middle", 20);
    queue.addAfter("ns/moved", 40);
    queue.addAfter("ns/moved", 15);
    // All due by the time the clock is looked at again.
    await vi.advanceTimersByTimeAsync(100);
    expect(await takeAll(queue)).toEqual(["ns/early", "ns/moved", "ns/middle", "ns/late"]);
  });

  it("keeps due-time order across hundreds of delayed keys, some moved earlier", async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue({ name: "test" });
    const due = new Map<string, number>();
    let seed = 7;
    const nextDelay = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return 1 + (seed % 100_000);
    };
    for (let i = 0; i < 500; i++) {
      const key = `ns/k${i}`;
      const delay = nextDelay();
      queue.addAfter(key, delay);
      due.set(key, delay);
      if (i % 3 === 0) {
        const sooner = nextDelay();
        queue.addAfter(key, sooner);
        due.set(key, Math.min(delay, sooner));
      }
    }
    const expected = [...due.entries()]
      .map(([key, at], index) => ({ key, at, index }))
      .sort((a, b) => a.at - b.at || a.index - b.index);
    const released: string[] = [];
    // Taking keys as time passes also checks nothing is released before it is due.
    for (let t = 0; t < 100_001; t += 1_000) {
      await vi.advanceTimersByTimeAsync(1_000);
      released.push(...(await takeAll(queue)));
    }
    expect(released).toHaveLength(500);
    expect(released).toEqual(expected.map((e) => e.key));
  });

  it("adds at once for a delay of zero or less", () => {
    const queue = new WorkQueue({ name: "test" });
    queue.addAfter("ns/a", 0);
    queue.addAfter("ns/b", -5);
    expect(queue.len()).toBe(2);
  });

  it("de-duplicates a delayed key that is already waiting when it falls due", async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue({ name: "test" });
    queue.addAfter("ns/a", 10);
    queue.add("ns/a");
    await vi.advanceTimersByTimeAsync(10);
    expect(queue.len()).toBe(1);
  });

  it("holds a delay longer than setTimeout's 24.8-day limit for its full length", async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue({ name: "test" });
    const day = 24 * 3600 * 1000;
    queue.addAfter("ns/a", 30 * day);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(queue.len()).toBe(0);
    await vi.advanceTimersByTimeAsync(30 * day - 1_001);
    expect(queue.len()).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(queue.len()).toBe(1);
  });

  it("clears its timers on shutdown so the process can exit", async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue({ name: "test" });
    queue.addAfter("ns/a", 1_000);
    queue.addAfter("ns/b", 2_000);
    queue.addRateLimited("ns/c");
    expect(vi.getTimerCount()).toBeGreaterThan(0);
    queue.shutDown();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(queue.len()).toBe(0);
  });
});

describe("WorkQueue rate-limited adds", () => {
  it("retries after 5 ms, then 10 ms, and from 5 ms again once forgotten", async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue({ name: "test" });
    const retryAndWait = async (): Promise<number> => {
      queue.addRateLimited("ns/a");
      let waited = 0;
      while (queue.len() === 0) {
        await vi.advanceTimersByTimeAsync(1);
        waited++;
      }
      expect(await queue.get()).toBe("ns/a");
      queue.done("ns/a");
      return waited;
    };
    expect(await retryAndWait()).toBe(5);
    expect(await retryAndWait()).toBe(10);
    expect(await retryAndWait()).toBe(20);
    expect(queue.numRequeues("ns/a")).toBe(3);
    queue.forget("ns/a");
    expect(queue.numRequeues("ns/a")).toBe(0);
    expect(await retryAndWait()).toBe(5);
  });

  it("asks the rate limiter it was given for the delay", async () => {
    vi.useFakeTimers();
    const asked: string[] = [];
    const limiter: RateLimiter = {
      when: (key) => {
        asked.push(key);
        return 42;
      },
      forget: () => undefined,
      numRequeues: () => 7,
    };
    const queue = new WorkQueue({ name: "test", rateLimiter: limiter });
    queue.addRateLimited("ns/a");
    await vi.advanceTimersByTimeAsync(41);
    expect(queue.len()).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(queue.len()).toBe(1);
    expect(asked).toEqual(["ns/a"]);
    expect(queue.numRequeues("ns/a")).toBe(7);
  });
});

describe("WorkQueue shutdown", () => {
  it("resolves waiting getters with undefined and ignores later adds", async () => {
    const queue = new WorkQueue({ name: "test" });
    const getters = [track(queue.get()), track(queue.get())];
    expect(queue.isShuttingDown()).toBe(false);
    queue.shutDown();
    expect(queue.isShuttingDown()).toBe(true);
    await flush();
    expect(getters.map((g) => [g.settled, g.value])).toEqual([
      [true, undefined],
      [true, undefined],
    ]);
    queue.add("ns/a");
    queue.addAfter("ns/b", 0);
    queue.addRateLimited("ns/c");
    expect(queue.len()).toBe(0);
    expect(queue.numRequeues("ns/c")).toBe(0);
    expect(await queue.get()).toBeUndefined();
  });

  it("stops handing out keys that were still waiting", async () => {
    const queue = new WorkQueue({ name: "test" });
    queue.add("ns/a");
    queue.add("ns/b");
    queue.shutDown();
    expect(await queue.get()).toBeUndefined();
    expect(queue.len()).toBe(0);
  });

  it("waits in shutDownWithDrain for the keys being processed, handing out no others", async () => {
    const queue = new WorkQueue({ name: "test" });
    queue.add("ns/a");
    queue.add("ns/b");
    queue.add("ns/c");
    expect(await queue.get()).toBe("ns/a");
    expect(await queue.get()).toBe("ns/b");
    queue.add("ns/a"); // dirty while processing: dropped by the shutdown
    const drained = track(queue.shutDownWithDrain(10_000));
    expect(queue.isShuttingDown()).toBe(true);
    expect(await queue.get()).toBeUndefined();
    queue.done("ns/a");
    await flush();
    expect(drained.settled).toBe(false);
    queue.done("ns/b");
    await flush();
    expect(drained.value).toBe(true);
    expect(queue.len()).toBe(0);
    expect(await queue.get()).toBeUndefined();
  });

  it("gives up draining at the timeout and leaves no timer behind either way", async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue({ name: "test" });
    queue.add("ns/stuck");
    expect(await queue.get()).toBe("ns/stuck");
    const drained = track(queue.shutDownWithDrain(1_000));
    await vi.advanceTimersByTimeAsync(999);
    expect(drained.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(drained.settled).toBe(true);
    expect(drained.value).toBe(false);

    const other = new WorkQueue({ name: "other" });
    other.add("ns/quick");
    expect(await other.get()).toBe("ns/quick");
    const quick = track(other.shutDownWithDrain(60_000));
    other.done("ns/quick");
    await flush();
    expect(quick.value).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("resolves shutDownWithDrain at once when nothing is being processed", async () => {
    const queue = new WorkQueue({ name: "test" });
    queue.add("ns/a");
    expect(await queue.shutDownWithDrain(10_000)).toBe(true);
    expect(await queue.get()).toBeUndefined();
  });
});

describe("WorkQueue metrics", () => {
  function recorder(): QueueMetrics & { events: string[] } {
    const events: string[] = [];
    return {
      events,
      depth: (n) => events.push(`depth ${n}`),
      added: () => events.push("added"),
      retried: () => events.push("retried"),
      queueLatency: (s) => events.push(`latency ${s}`),
      workDuration: (s) => events.push(`work ${s}`),
    };
  }

  it("reports adds and depth, counting a repeated add of a waiting key once", () => {
    const metrics = recorder();
    const queue = new WorkQueue({ name: "test", metrics });
    queue.add("ns/a");
    queue.add("ns/a");
    queue.add("ns/b");
    expect(metrics.events).toEqual(["added", "depth 1", "added", "depth 2"]);
  });

  it("reports the time waited in the queue and the time spent processing", async () => {
    const metrics = recorder();
    const clock = manualClock();
    const queue = new WorkQueue({ name: "test", metrics, now: clock.now });
    queue.add("ns/a");
    clock.advance(2_000);
    metrics.events.length = 0;
    expect(await queue.get()).toBe("ns/a");
    clock.advance(500);
    queue.done("ns/a");
    expect(metrics.events).toEqual(["depth 0", "latency 2", "work 0.5"]);
  });

  it("measures queue latency from the add made during processing to the next get", async () => {
    const metrics = recorder();
    const clock = manualClock();
    const queue = new WorkQueue({ name: "test", metrics, now: clock.now });
    queue.add("ns/a");
    await queue.get();
    clock.advance(300);
    queue.add("ns/a");
    clock.advance(700);
    queue.done("ns/a");
    metrics.events.length = 0;
    await queue.get();
    expect(metrics.events).toEqual(["depth 0", "latency 0.7"]);
  });

  it("counts a rate-limited re-add as a retry", async () => {
    vi.useFakeTimers();
    const metrics = recorder();
    const queue = new WorkQueue({ name: "test", metrics });
    queue.addRateLimited("ns/a");
    expect(metrics.events).toEqual(["retried"]);
    await vi.advanceTimersByTimeAsync(5);
    expect(metrics.events).toEqual(["retried", "added", "depth 1"]);
  });

  it("reports a depth of zero when shutdown drops waiting keys", () => {
    const metrics = recorder();
    const queue = new WorkQueue({ name: "test", metrics });
    queue.add("ns/a");
    queue.add("ns/b");
    queue.shutDown();
    expect(metrics.events.at(-1)).toBe("depth 0");
  });

  it("grows unfinished and longest-running work while keys are processed", async () => {
    const clock = manualClock();
    const queue = new WorkQueue({ name: "test", now: clock.now });
    expect(queue.unfinishedWorkSeconds()).toBe(0);
    expect(queue.longestRunningProcessorSeconds()).toBe(0);
    queue.add("ns/a");
    queue.add("ns/b");
    await queue.get();
    clock.advance(1_000);
    await queue.get();
    clock.advance(2_000);
    expect(queue.unfinishedWorkSeconds()).toBe(5);
    expect(queue.longestRunningProcessorSeconds()).toBe(3);
    clock.advance(1_000);
    expect(queue.unfinishedWorkSeconds()).toBe(7);
    expect(queue.longestRunningProcessorSeconds()).toBe(4);
    queue.done("ns/a");
    expect(queue.unfinishedWorkSeconds()).toBe(3);
    expect(queue.longestRunningProcessorSeconds()).toBe(3);
    queue.done("ns/b");
    expect(queue.unfinishedWorkSeconds()).toBe(0);
  });

  it("measures with the default clock, which fake timers control", async () => {
    vi.useFakeTimers();
    const metrics = recorder();
    const queue = new WorkQueue({ name: "test", metrics });
    queue.add("ns/a");
    await vi.advanceTimersByTimeAsync(250);
    await queue.get();
    expect(metrics.events).toContain("latency 0.25");
    expect(new ExponentialFailureRateLimiter().when("x")).toBe(5);
  });
});
