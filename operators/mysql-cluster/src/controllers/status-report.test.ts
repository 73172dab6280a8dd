import { describe, expect, it } from "vitest";
import type { MemberStatus } from "../api.ts";
import { phaseWithoutPrimary, statusReport, type ClusterFacts, type RolloutOutcome } from "./status-report.ts";

const upToDate: RolloutOutcome = { fields: {}, condition: { type: "Upgrading", status: "False", reason: "UpToDate", message: "all servers run the current template" }, rolling: false };
const primary = (ready = true, message?: string): MemberStatus => ({ name: "db-0", role: "primary", ready, ...(message ? { message } : {}) });
const replica = (ordinal: number, ready = true, threads = true, message?: string): MemberStatus => ({ name: `db-${ordinal}`, role: "replica", ready, ioThread: threads, sqlThread: threads, ...(message ? { message } : {}) });
const report = (facts: Partial<ClusterFacts>) => statusReport({ name: "db", desired: 3, previousPhase: undefined, members: [], rollout: upToDate, extra: [], ...facts });

describe("the cluster's status report", () => {
  it("is Running when every server is Ready, with the counts and the primary", () => {
    const r = report({ members: [primary(), replica(1), replica(2)], primaryServer: { flavor: "MariaDB", version: "11.4.9" } });
    expect(r.phase).toBe("Running");
    expect(r.ready).toEqual({ status: "True", reason: "Running", message: "3/3 servers ready; db-0 is the primary" });
    expect(r.fields).toMatchObject({ phase: "Running", replicas: 3, readyReplicas: 3, ready: "3/3", currentPrimary: "db-0", flavor: "MariaDB", serverVersion: "11.4.9" });
    expect(r.others.map((c) => [c.type, c.status, c.reason])).toEqual([
      ["Available", "True", "PrimaryWritable"],
      ["Replicating", "True", "ReplicationRunning"],
      ["Upgrading", "False", "UpToDate"],
    ]);
    expect(r.requeueAfter).toBe(30_000);
  });

  it("names each server that is not Ready and the servers not created yet", () => {
    const r = report({ members: [primary(), replica(1, false, false, "replication error: 1236")] });
    expect(r.phase).toBe("Scaling");
    expect(r.ready).toEqual({ status: "False", reason: "Scaling", message: "db-1: replication error: 1236; 1 server(s) not created yet" });
    expect(r.others.find((c) => c.type === "Replicating")).toMatchObject({ status: "False", reason: "ReplicationStopped", message: "db-1: replication error: 1236" });
    expect(r.requeueAfter).toBe(5_000);
  });

  it("is Degraded without a writable primary once it ran, Provisioning before", () => {
    const members = [primary(false, "server down"), replica(1), replica(2)];
    expect(report({ members, previousPhase: "Running" }).phase).toBe("Degraded");
    expect(report({ members, previousPhase: undefined }).phase).toBe("Provisioning");
    expect(report({ members }).others[0]).toEqual({ type: "Available", status: "False", reason: "PrimaryUnavailable", message: "db-0: server down" });
    expect(report({ members: [] }).others[0]).toMatchObject({ message: "the primary pod does not exist yet" });
    // A primary whose pod is gone stays a member (its last position on record), but is no pod in status.replicas.
    const gone = report({ members: [primary(false, "its pod does not exist"), replica(1), replica(2)], withPods: 2, previousPhase: "Running" });
    expect(gone.fields).toMatchObject({ phase: "Degraded", replicas: 2, readyReplicas: 2 });
    expect(gone.others[0]).toMatchObject({ message: "db-0: its pod does not exist" });
    expect(phaseWithoutPrimary("Degraded")).toBe("Degraded");
    expect(phaseWithoutPrimary("Scaling")).toBe("Provisioning");
  });

  it("is Upgrading while a rollout step runs with the primary up, at the rollout's pace", () => {
    const rolling: RolloutOutcome = { fields: { updated: "1/3" }, condition: { type: "Upgrading", status: "True", reason: "RollingUpdate", message: "restarting db-2" }, rolling: true, requeueAfter: 2_000 };
    const r = report({ members: [primary(), replica(1), replica(2, false)], rollout: rolling });
    expect(r.phase).toBe("Upgrading");
    expect(r.fields.updated).toBe("1/3");
    expect(r.requeueAfter).toBe(2_000);
  });

  it("says a cluster without replicas replicates, and looks at growing volumes often", () => {
    const expanding = { type: "StorageResized", status: "False" as const, reason: "Expanding", message: "data-db-0 is still 1Gi" };
    const r = report({ desired: 1, members: [primary()], extra: [expanding, undefined] });
    expect(r.phase).toBe("Running");
    expect(r.others.find((c) => c.type === "Replicating")).toMatchObject({ status: "True", reason: "NoReplicas" });
    expect(r.others.at(-1)).toEqual(expanding);
    expect(r.requeueAfter).toBe(5_000);
    expect(report({ desired: 1, members: [primary()], extra: [{ ...expanding, reason: "ExpansionRefused" }] }).requeueAfter).toBe(30_000);
  });
});
