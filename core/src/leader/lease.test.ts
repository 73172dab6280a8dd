// The elector's timing on a fake clock and a fake API server whose requests
// can be made to hang (a frozen connection): the leader must give up at its
// renew deadline, not when a hung request finally returns, and abort that
// request; a candidate must wait a full lease duration from when it saw the
// last renewal.
import { describe, expect, it } from "vitest";
import { ApiError, type KubeClient, type KubeObject } from "../client/index.ts";
import { LeaderElector, type ElectionClock } from "./lease.ts";

class FakeClock implements ElectionClock {
  private t = 1_000_000;
  private sleepers: { at: number; resolve: (elapsed: boolean) => void }[] = [];

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve(false);
      const sleeper = { at: this.t + ms, resolve };
      this.sleepers.push(sleeper);
      signal?.addEventListener("abort", () => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        resolve(false);
      }, { once: true });
    });
  }

  /** Advances until `done()` holds (at most `maxMs`). */
  async advanceUntil(done: () => boolean, maxMs: number): Promise<void> {
    const end = this.t + maxMs;
    while (!done() && this.t < end) await this.advance(100);
  }

  /** Moves time forward in 100 ms steps, letting every woken sleeper run before the next step. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    while (this.t < end) {
      this.t = Math.min(end, this.t + 100);
      for (const s of this.sleepers.filter((x) => x.at <= this.t)) {
        this.sleepers = this.sleepers.filter((x) => x !== s);
        s.resolve(true);
      }
      for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
    }
  }
}

type Lease = KubeObject & { spec?: Record<string, unknown> };

/** One Lease in memory; `frozen` makes every request hang until its signal aborts. */
class FakeApi {
  lease: Lease | undefined;
  frozen = false;
  aborted = 0;
  private rv = 1;

  private answer<T>(signal: AbortSignal | undefined, value: () => T): Promise<T> {
    if (!this.frozen) return Promise.resolve().then(value);
    return new Promise((_, reject) => signal?.addEventListener("abort", () => {
      this.aborted++;
      reject(signal.reason as Error);
    }, { once: true }));
  }

  client(): KubeClient {
    const notFound = new ApiError(404, "NotFound", "leases \"lease\" not found");
    return {
      get: (_rt: unknown, _ns: string, _name: string, opts: { signal?: AbortSignal } = {}) =>
        this.answer(opts.signal, () => {
          if (!this.lease) throw notFound;
          return structuredClone(this.lease);
        }),
      create: (_rt: unknown, obj: Lease, opts: { signal?: AbortSignal } = {}) =>
        this.answer(opts.signal, () => (this.lease = { ...structuredClone(obj), metadata: { ...obj.metadata, resourceVersion: String(this.rv++) } })),
      update: (_rt: unknown, obj: Lease, opts: { signal?: AbortSignal } = {}) =>
        this.answer(opts.signal, () => (this.lease = { ...structuredClone(obj), metadata: { ...obj.metadata, resourceVersion: String(this.rv++) } })),
    } as unknown as KubeClient;
  }
}

const timings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

function elector(api: FakeApi, clock: FakeClock, identity: string, events: string[]) {
  return new LeaderElector(api.client(), {
    namespace: "ns", name: "lease", identity, ...timings, clock,
    onStartedLeading: () => events.push(`${identity} leads at ${clock.now()}`),
    onStoppedLeading: () => events.push(`${identity} stopped at ${clock.now()}`),
  });
}

describe("LeaderElector timing", () => {
  it("stops leading at the renew deadline while a renewal hangs, and aborts the hung request", async () => {
    const clock = new FakeClock();
    const api = new FakeApi();
    const events: string[] = [];
    const a = elector(api, clock, "a", events);
    const t0 = clock.now();
    a.start();
    await clock.advance(0);
    await clock.advance(100);
    expect(a.isLeader()).toBe(true);
    // Renewals every retry period; the last successful one starts at about t0 + 4 s.
    await clock.advance(4_000);
    api.frozen = true;
    const lastRenew = Date.parse(String(api.lease?.spec?.renewTime));
    expect(lastRenew).toBeGreaterThanOrEqual(t0 + 4_000);
    await clock.advance(5_800);
    expect(a.isLeader()).toBe(true);
    // The hung request would take 30 s to time out; the leader gives up at lastRenew + renewDeadline.
    await clock.advance(lastRenew + timings.renewDeadlineMs - clock.now() + 100);
    expect(a.isLeader()).toBe(false);
    const stoppedAt = Number(events.at(-1)?.split(" at ")[1]);
    expect(events.at(-1)).toMatch(/^a stopped at/);
    expect(stoppedAt).toBeLessThanOrEqual(lastRenew + timings.renewDeadlineMs);
    expect(stoppedAt).toBeGreaterThan(lastRenew + timings.renewDeadlineMs - timings.retryPeriodMs);
    expect(api.aborted).toBe(1);
    // It never campaigns again: the process is meant to restart.
    api.frozen = false;
    await clock.advance(20_000);
    expect(a.isLeader()).toBe(false);
    expect(events.filter((e) => e.startsWith("a leads"))).toHaveLength(1);
    await a.stop();
  });

  it("lets a candidate take over a frozen leader's Lease only after the leader stopped, and fences its work a lease duration more", async () => {
    const clock = new FakeClock();
    const api = new FakeApi();
    const events: string[] = [];
    const t0 = clock.now();
    const a = elector(api, clock, "a", events);
    a.start();
    await clock.advance(100);
    const b = elector(api, clock, "b", events);
    b.start();
    await clock.advance(1_000);
    expect(a.isLeader()).toBe(true);
    expect(b.isLeader()).toBe(false);
    // Freeze only the leader's connection: the candidate keeps a working one.
    const frozen = new FakeApi();
    frozen.frozen = true;
    (a as unknown as { client: KubeClient }).client = frozen.client();
    await clock.advanceUntil(() => b.isLeader(), 30_000);
    const at = (prefix: string) => Number(events.find((e) => e.startsWith(prefix))?.split(" at ")[1]);
    // a's last successful renewal started at t0.
    expect(at("a stopped")).toBeLessThanOrEqual(t0 + timings.renewDeadlineMs);
    expect(at("b leads")).toBeGreaterThanOrEqual(at("a stopped") + timings.leaseDurationMs - timings.renewDeadlineMs);
    expect(frozen.aborted).toBe(1);
    expect(api.lease?.spec?.holderIdentity).toBe("b");
    // b would treat a's leftover work as stopped only a lease duration after it acquired the Lease.
    const fence = b.previousLeaderFenceMs();
    expect(fence).toBe(at("b leads") + timings.leaseDurationMs - clock.now());
    expect(fence).toBeGreaterThan(timings.leaseDurationMs - 200);
    await clock.advance(fence - 100);
    expect(b.previousLeaderFenceMs()).toBe(100);
    await clock.advance(100);
    expect(b.previousLeaderFenceMs()).toBe(0);
    await Promise.all([a.stop(), b.stop()]);
  });
});
