import { describe, expect, it } from "vitest";
import { detectPrimaryLoss, secondSignals, type DetectionInput, type NodeView, type PodView } from "./failover-detection.ts";

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
    expect(seen({ now: at(600), signals: [] })).toMatch(/^suspect: .*nothing else says it is gone/);
  });

  it("not while the rollout restarts the primary itself", () => {
    expect(seen({ now: at(600), rollout: { pod: "db-0", role: "primary" } })).toMatch(/^suspect: .*while the rollout restarts it/);
  });

  it("when the replica the rollout restarted last is the primary by now (switched over or failed over to)", () => {
    expect(seen({ rollout: { pod: "db-0", role: "replica" } })).toMatch(/^lost: db-0 has not answered for 40 s/);
  });

  it("during a rollout that restarts a replica, or is stopped at its health gate on one", () => {
    expect(seen({ rollout: { pod: "db-2" } })).toMatch(/^lost: db-0 has not answered for 40 s/);
  });

  it("after detectionSeconds with a second signal, naming both", () => {
    expect(detectPrimaryLoss(input({ signals: ["its pod is not Ready", "no replica is connected to it"] }))).toEqual({
      kind: "lost",
      message: "db-0 has not answered for 40 s (connect ECONNREFUSED) and its pod is not Ready, no replica is connected to it",
    });
  });
});

describe("the second signals", () => {
  const pod = (ready: { status: string; reason?: string }, containersReady = "True"): PodView => ({
    status: { conditions: [{ type: "Ready", ...ready }, { type: "ContainersReady", status: containersReady }], containerStatuses: [{ state: { running: {} } }] },
  });
  const node = (status: string, reason?: string): NodeView => ({ metadata: { name: "node-a" }, status: { conditions: [{ type: "Ready", status, ...(reason ? { reason } : {}) }] } });
  const healthy = pod({ status: "True" });

  it("none for a Ready pod on a Ready node whose replicas are connected", () => {
    expect(secondSignals(healthy, node("True"), [true, false])).toEqual([]);
  });

  it("not the pod's readiness when only the operator's own readiness gate made it not Ready", () => {
    // The operator clears the gate of a primary it does not reach; the kubelet then says ReadinessGatesNotReady.
    expect(secondSignals(pod({ status: "False", reason: "ReadinessGatesNotReady" }), node("True"), [true])).toEqual([]);
  });

  it("the pod not Ready for any other reason (the node controller's marking), or its containers not ready", () => {
    expect(secondSignals(pod({ status: "False" }), node("True"), [true])).toEqual(["its pod is not Ready"]);
    expect(secondSignals(pod({ status: "False", reason: "ContainersNotReady" }, "False"), node("True"), [true])).toEqual(["its containers are not ready"]);
  });

  it("its node not Ready, or Unknown (the node controller lost it), or gone", () => {
    expect(secondSignals(pod({ status: "False", reason: "ReadinessGatesNotReady" }), node("Unknown", "NodeStatusUnknown"), [true])).toEqual(["its node node-a is not Ready (Unknown, NodeStatusUnknown)"]);
    expect(secondSignals(healthy, node("False", "KubeletNotReady"), [true])).toEqual(["its node node-a is not Ready (False, KubeletNotReady)"]);
    expect(secondSignals(healthy, null, [true])).toEqual(["its node is gone"]);
  });

  it("nothing from a node that could not be read", () => {
    expect(secondSignals(healthy, undefined, [true])).toEqual([]);
  });

  it("the pod gone, and no replica connected", () => {
    expect(secondSignals(undefined, undefined, [false, false])).toEqual(["its pod is gone", "no replica is connected to it"]);
    expect(secondSignals(healthy, node("True"), [])).toEqual([]);
  });
});
