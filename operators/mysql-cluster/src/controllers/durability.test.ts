import { describe, expect, it } from "vitest";
import type { MySQLCluster } from "../api.ts";
import { semiSyncCondition, semiSyncWish } from "./durability.ts";

const cluster = (replication?: MySQLCluster["spec"]["replication"]): MySQLCluster => ({ apiVersion: "stateward.io/v1alpha1", kind: "MySQLCluster", metadata: { name: "db" }, spec: { storage: { size: "1Gi" }, ...(replication ? { replication } : {}) } });

describe("semi-synchronous replication", () => {
  it("is on by default with 2 or more MariaDB servers, off for one server, MySQL or Async", () => {
    expect(semiSyncWish(cluster(), "MariaDB", 3)).toEqual({ enabled: true, timeoutMs: 10_000 });
    expect(semiSyncWish(cluster({ semiSyncTimeoutSeconds: 2 }), "MariaDB", 2)).toEqual({ enabled: true, timeoutMs: 2_000 });
    expect(semiSyncWish(cluster(), "MariaDB", 1).enabled).toBe(false);
    expect(semiSyncWish(cluster(), "MySQL", 3).enabled).toBe(false);
    expect(semiSyncWish(cluster({ mode: "Async" }), "MariaDB", 3).enabled).toBe(false);
  });

  it("reports a fallback to asynchronous, never silently", () => {
    expect(semiSyncCondition(cluster(), "MariaDB", 3, { enabled: true, active: false, clients: 0, timeoutMs: 10_000 })).toMatchObject({ status: "False", reason: "FellBackToAsync" });
    expect(semiSyncCondition(cluster(), "MariaDB", 3, { enabled: true, active: true, clients: 2, timeoutMs: 10_000 })).toMatchObject({ status: "True", reason: "Acknowledged" });
    expect(semiSyncCondition(cluster(), "MariaDB", 1, undefined)).toMatchObject({ status: "False", reason: "NoReplicas" });
    expect(semiSyncCondition(cluster({ mode: "Async" }), "MariaDB", 3, undefined)).toMatchObject({ status: "False", reason: "Async" });
    // The primary did not answer: nothing new to say.
    expect(semiSyncCondition(cluster(), "MariaDB", 3, undefined)).toBeUndefined();
  });
});
