import type { KubeClient } from "@stateward/core";
import { describe, expect, it } from "vitest";
import type { MySQLCluster, MySQLClusterStatus } from "../api.ts";
import { DECISION_VISIBLE_WITHIN_MS, RecordedDecisions } from "./recorded-decisions.ts";

const cluster = { apiVersion: "stateward.io/v1alpha1", kind: "MySQLCluster", metadata: { name: "db", namespace: "ns" }, spec: { storage: { size: "1Gi" } } } as MySQLCluster;

function world() {
  let now = Date.parse("2026-12-01T12:00:00Z");
  let cached: MySQLClusterStatus = {};
  const written: MySQLClusterStatus[] = [];
  const client = {
    get: () => Promise.resolve({ ...cluster, status: { phase: "Running" } }),
    updateStatus: (_rt: unknown, obj: MySQLCluster) => {
      written.push(obj.status ?? {});
      return Promise.resolve(obj);
    },
  } as unknown as KubeClient;
  const decisions = new RecordedDecisions({ now: () => new Date(now) });
  return { decisions, client, cached: (): MySQLCluster => ({ ...cluster, status: cached }), written, see: (s: MySQLClusterStatus) => (cached = s), advance: (ms: number) => (now += ms) };
}

describe("decisions recorded in status", () => {
  it("are written over the live status, and hold reconciles off until the cache has them", async () => {
    const w = world();
    await w.decisions.record({ client: w.client }, cluster, { currentPrimary: "db-1" }, (s) => s.currentPrimary === "db-1");
    expect(w.written).toEqual([{ phase: "Running", currentPrimary: "db-1" }]);
    expect(w.decisions.unseen(w.cached())).toBe(true);
    w.see({ currentPrimary: "db-1" });
    expect(w.decisions.unseen(w.cached())).toBe(false);
    w.see({});
    expect(w.decisions.unseen(w.cached()), "seen once: forgotten").toBe(false);
  });

  it("are given up on when the cache does not show them in time", () => {
    const w = world();
    w.decisions.expect(cluster, (s) => s.rollout?.pod === "db-2");
    w.advance(DECISION_VISIBLE_WITHIN_MS - 1);
    expect(w.decisions.unseen(w.cached())).toBe(true);
    w.advance(1);
    expect(w.decisions.unseen(w.cached())).toBe(false);
  });

  it("are forgotten with the cluster", () => {
    const w = world();
    w.decisions.expect(cluster, () => false);
    w.decisions.forget("ns", "db");
    expect(w.decisions.unseen(w.cached())).toBe(false);
  });
});
