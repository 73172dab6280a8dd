import { describe, expect, it } from "vitest";
import { combineRuns, comparisonRows, pairedTimeRatios, runOrder, type DriverResult } from "./database-user-peer.ts";

const run = (over: Partial<DriverResult>): DriverResult => ({
  startupSeconds: 0.5,
  readySeconds: 15,
  cpuSecondsCreatePhase: 5,
  cpuSecondsEnd: 8,
  vmHWMKiB: 100 * 1024,
  vmRSSAtReadyKiB: 90 * 1024,
  vmRSSEndKiB: 70 * 1024,
  deleteSeconds: 12,
  rotationSeconds: 0.1,
  users: 1000,
  sqlCreatePhase: { Questions: 5000 },
  apiRequestsByMethod: { GET: 2000, PUT: 1000 },
  reconcilesDatabaseUser: 3000,
  failures: null,
  ...over,
});

describe("the peer comparison", () => {
  it("alternates the runs peer, ours, ours, peer, so that a drift weighs on both alike", () => {
    expect(runOrder(1)).toEqual(["peer", "ours"]);
    expect(runOrder(2)).toEqual(["peer", "ours", "ours", "peer"]);
    expect(runOrder(3)).toEqual(["peer", "ours", "ours", "peer", "peer", "ours"]);
  });

  it("stands several runs for one: the mean of times, CPU and work, the highest memory, every failure", () => {
    const combined = combineRuns([
      run({ readySeconds: 14, cpuSecondsCreatePhase: 4, vmHWMKiB: 98 * 1024, apiRequestsByMethod: { GET: 2000, PUT: 1000 }, failures: ["a"] }),
      run({ readySeconds: 18, cpuSecondsCreatePhase: 6, vmHWMKiB: 104 * 1024, apiRequestsByMethod: { GET: 2010, PATCH: 2 }, failures: ["b"] }),
    ]);
    expect(combined.readySeconds).toBe(16);
    expect(combined.cpuSecondsCreatePhase).toBe(5);
    expect(combined.vmHWMKiB).toBe(104 * 1024);
    // A method one run never used counts 0 in it.
    expect(combined.apiRequestsByMethod).toEqual({ GET: 2005, PUT: 500, PATCH: 1 });
    expect(combined.failures).toEqual(["a", "b"]);
    // A server's CPU is the mean of the runs that measured it: one gone from a run is not a 0.
    expect(combineRuns([run({ serverCpuSeconds: { "kube-apiserver": 20, etcd: 4 } }), run({ serverCpuSeconds: { "kube-apiserver": 24 } })]).serverCpuSeconds)
      .toEqual({ "kube-apiserver": 22, etcd: 4 });
    expect(() => combineRuns([])).toThrow(/no runs/);
  });

  it("gives ours as the value and the peer's as the reference", () => {
    const rows = comparisonRows(combineRuns([run({ readySeconds: 15 }), run({ readySeconds: 17 })]), combineRuns([run({ readySeconds: 16 })]));
    expect(rows[0]).toMatchObject({ metric: "vs peer: time until all 1,000 Ready", value: 16, reference: 16, unit: "s" });
    // A server's CPU only where both sides measured it.
    const withServers = comparisonRows(run({ serverCpuSeconds: { "kube-apiserver": 21, etcd: 4 } }), run({ serverCpuSeconds: { "kube-apiserver": 20 } }));
    expect(withServers.filter((r) => r.metric.includes("CPU, whole run") && !r.metric.includes("manager"))).toEqual([
      { metric: "vs peer: kube-apiserver CPU, whole run", value: 21, unit: "s", reference: 20, note: undefined },
    ]);
  });

  it("gives the time ratio pair by pair, with the 95 % interval of its mean", () => {
    const times = (xs: number[]) => xs.map((readySeconds) => run({ readySeconds }));
    const p = pairedTimeRatios(times([9, 20, 33]), times([10, 20, 30]));
    expect(p.ratios.map((r) => r.toFixed(3))).toEqual(["0.900", "1.000", "1.100"]);
    expect(p.mean).toBeCloseTo(1);
    // sd 0.1 over 3 pairs: t(2 df) 4.303 × 0.1 / √3 = 0.248 either side.
    expect(p.low).toBeCloseTo(0.752, 3);
    expect(p.high).toBeCloseTo(1.248, 3);
    // One pair has no spread to estimate.
    expect(pairedTimeRatios(times([9]), times([10]))).toEqual({ ratios: [0.9], mean: 0.9 });
  });
});
