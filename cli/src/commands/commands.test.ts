import { ApiConnectionError } from "@stateward/core";
import type { MySQLBackup, MySQLBackupSchedule } from "@stateward/operator-mysql-backup";
import type { MySQLCluster } from "@stateward/operator-mysql-cluster";
import { describe, expect, it } from "vitest";
import { UsageError } from "../operators.ts";
import { backupManifest, chooseStorage } from "./backup.ts";
import { CommandError, EXIT, exitCodeOf, formatSeconds, generatedName, parseDuration } from "./common.ts";
import { operationLine } from "./operation.ts";
import { sortRows, statusRow, statusTable } from "./status.ts";
import { chooseTarget, switchoverState } from "./switchover.ts";

const s3 = (bucket: string) => ({ s3: { bucket, credentialsSecretRef: { name: "s3-creds" } } });
const schedule = (name: string, instance: string, bucket: string): MySQLBackupSchedule => ({
  apiVersion: "stateward.io/v1alpha1",
  kind: "MySQLBackupSchedule",
  metadata: { name, namespace: "shop" },
  spec: { schedule: "@daily", backupTemplate: { instanceRef: { name: instance }, storage: s3(bucket), databases: ["shop"], deletionPolicy: "Delete" } },
});
const backup = (name: string, instance: string, bucket: string, created: string): MySQLBackup => ({
  apiVersion: "stateward.io/v1alpha1",
  kind: "MySQLBackup",
  metadata: { name, namespace: "shop", creationTimestamp: created },
  spec: { instanceRef: { name: instance }, storage: s3(bucket) },
});

describe("backup: where a backup taken by hand is stored", () => {
  it("takes the flags when given, and needs the bucket and the credentials", () => {
    const c = chooseStorage("db", { bucket: "b", credentialsSecret: "creds", endpoint: "http://s3:7070", pathStyle: true }, [schedule("n", "db", "other")], []);
    expect(c).toEqual({ storage: { s3: { bucket: "b", credentialsSecretRef: { name: "creds" }, endpoint: "http://s3:7070", forcePathStyle: true } }, from: "--bucket" });
    expect(() => chooseStorage("db", { bucket: "b" }, [], [])).toThrow(/--credentials-secret/);
    expect(() => chooseStorage("db", { bucket: "b", credentialsSecret: "c", fromSchedule: "n" }, [], [])).toThrow(UsageError);
  });

  it("copies the instance's schedule (storage, databases, deletion policy), or the one named", () => {
    const c = chooseStorage("db", {}, [schedule("other", "db2", "x"), schedule("nightly", "db", "bk")], [backup("old", "db", "elsewhere", "2026-01-01T00:00:00Z")]);
    expect(c).toMatchObject({ storage: s3("bk"), databases: ["shop"], deletionPolicy: "Delete", from: "MySQLBackupSchedule nightly" });
    expect(chooseStorage("db", { fromSchedule: "other" }, [schedule("other", "db2", "x")], []).storage).toEqual(s3("x"));
    expect(() => chooseStorage("db", { fromSchedule: "nope" }, [], [])).toThrow(/no MySQLBackupSchedule "nope"/);
  });

  it("refuses to guess between schedules that store in different places", () => {
    expect(() => chooseStorage("db", {}, [schedule("a", "db", "x"), schedule("b", "db", "y")], [])).toThrow(/--from-schedule/);
    expect(chooseStorage("db", {}, [schedule("a", "db", "x"), schedule("b", "db", "x")], []).storage).toEqual(s3("x"));
  });

  it("falls back to the instance's newest backup, and says what to give when there is none", () => {
    const c = chooseStorage("db", {}, [], [backup("a", "db", "old", "2026-01-01T00:00:00Z"), backup("b", "db", "new", "2026-02-01T00:00:00Z"), backup("c", "db2", "no", "2026-03-01T00:00:00Z")]);
    expect(c).toEqual({ storage: s3("new"), from: "MySQLBackup b" });
    expect(() => chooseStorage("db", {}, [], [])).toThrow(/--bucket B --credentials-secret S/);
  });

  it("lets flags override what was copied, and checks them", () => {
    const choice = chooseStorage("db", {}, [schedule("nightly", "db", "bk")], []);
    const m = backupManifest("shop", "db-manual-1", "db", choice, { databases: ["a", "b"], deletionPolicy: "Retain" });
    expect(m.spec).toEqual({ instanceRef: { name: "db" }, storage: s3("bk"), databases: ["a", "b"], deletionPolicy: "Retain" });
    expect(m.metadata.annotations).toEqual({ "stateward.io/storage-from": "MySQLBackupSchedule nightly" });
    expect(() => backupManifest("shop", "x", "db", choice, { compression: "lz4" })).toThrow(/--compression/);
  });
});

const cluster = (members: { name: string; role: "primary" | "replica"; ready: boolean; lagSeconds?: number; message?: string }[], extra: Partial<MySQLCluster["spec"]> = {}): MySQLCluster => ({
  apiVersion: "stateward.io/v1alpha1",
  kind: "MySQLCluster",
  metadata: { name: "orders", namespace: "shop", generation: 4 },
  spec: { replicas: 3, storage: { size: "1Gi" }, ...extra },
  status: { currentPrimary: members.find((m) => m.role === "primary")?.name, members, phase: "Running", observedGeneration: 4, conditions: [{ type: "Ready", status: "True", reason: "Ready", message: "", lastTransitionTime: "" }] },
});

describe("switchover: which replica, and when it is done", () => {
  const three = cluster([{ name: "orders-0", role: "primary", ready: true }, { name: "orders-1", role: "replica", ready: true, lagSeconds: 3 }, { name: "orders-2", role: "replica", ready: true, lagSeconds: 0 }]);

  it("takes a pod name or an ordinal, and by default the Ready replica with the least lag", () => {
    expect(chooseTarget(three, "orders-1")).toEqual({ ordinal: 1, pod: "orders-1", from: "orders-0" });
    expect(chooseTarget(three, "2")).toEqual({ ordinal: 2, pod: "orders-2", from: "orders-0" });
    expect(chooseTarget(three, undefined).pod).toBe("orders-2");
  });

  it("refuses a target that is not a Ready replica before anything changes", () => {
    const lagging = cluster([{ name: "orders-0", role: "primary", ready: true }, { name: "orders-1", role: "replica", ready: false, message: "lag 40 s" }]);
    expect(() => chooseTarget(lagging, "1")).toThrow(/orders-1 cannot become the primary: it is not Ready: lag 40 s/);
    expect(() => chooseTarget(lagging, undefined)).toThrow(/no Ready replica/);
    expect(() => chooseTarget(three, "7")).toThrow(UsageError);
    expect(() => chooseTarget(three, "other-1")).toThrow(UsageError);
    expect(() => chooseTarget(cluster(three.status?.members ?? [], { updateStrategy: { paused: true } }), "1")).toThrow(/paused/);
  });

  it("is done once the target is the primary and every server Ready for the new generation; a refusal ends it", () => {
    const target = { ordinal: 1, pod: "orders-1", from: "orders-0" };
    const switched = cluster([{ name: "orders-0", role: "replica", ready: true }, { name: "orders-1", role: "primary", ready: true }]);
    expect(switchoverState(switched, target, 4)).toEqual({ ok: true, message: "" });
    expect(switchoverState(switched, target, 5)).toBeUndefined();
    expect(switchoverState(three, target, 4)).toBeUndefined();
    const refused = structuredClone(three);
    refused.status?.conditions?.push({ type: "Upgrading", status: "False", reason: "PrimaryNotEligible", message: "spec.primary 1 is not an updated, Ready replica", lastTransitionTime: "" });
    expect(switchoverState(refused, target, 4)).toEqual({ ok: false, message: "PrimaryNotEligible: spec.primary 1 is not an updated, Ready replica" });
  });
});

describe("status: what each resource waits for", () => {
  const cond = (status: "True" | "False", reason: string, message: string, observedGeneration?: number) => [{ type: "Ready", status, reason, message, lastTransitionTime: "", observedGeneration }];

  it("says a resource without status waits for a manager, and one with an old status for the manager to act", () => {
    const none = statusRow("DatabaseUser", { metadata: { name: "app", namespace: "shop" } });
    expect(none).toMatchObject({ ready: "Unknown", reason: "NoStatus" });
    expect(none.message).toMatch(/waiting for a Stateward manager/);
    const stale = statusRow("DatabaseUser", { metadata: { name: "app", namespace: "shop", generation: 3 }, status: { observedGeneration: 2, conditions: cond("True", "Ready", "ok") } });
    expect(stale).toMatchObject({ ready: "True", reason: "SpecNotObserved" });
    expect(stale.message).toMatch(/generation 3 \(the status is for generation 2\)/);
  });

  it("shows the Ready condition's reason and message when not Ready, nothing when Ready", () => {
    const pending = statusRow("MySQLBackup", { metadata: { name: "b", namespace: "shop" }, spec: { instanceRef: { name: "db" } }, status: { phase: "Pending", conditions: cond("False", "InstanceNotReady", "waiting for MySQLInstance db to be Ready") } });
    expect(pending).toMatchObject({ ready: "False", phase: "Pending", summary: "of db", reason: "InstanceNotReady", message: "waiting for MySQLInstance db to be Ready" });
    const done = statusRow("MySQLBackup", { metadata: { name: "b", namespace: "shop", generation: 2 }, spec: { instanceRef: { name: "db" } }, status: { phase: "Completed", observedGeneration: 1, compressedBytes: 2048, location: "s3://bk/x/", conditions: cond("True", "Completed", "done") } });
    expect(done).toMatchObject({ ready: "True", reason: "", message: "", summary: "of db, 2.0 KiB, s3://bk/x/" });
  });

  it("orders by namespace, then what the others depend on, in aligned columns", () => {
    const rows = sortRows([
      statusRow("MySQLBackup", { metadata: { name: "b", namespace: "a" } }),
      statusRow("MySQLCluster", { metadata: { name: "c", namespace: "a" } }),
      statusRow("DatabaseUser", { metadata: { name: "u", namespace: "0" } }),
    ]);
    expect(rows.map((r) => `${r.namespace}/${r.kind}`)).toEqual(["0/DatabaseUser", "a/MySQLCluster", "a/MySQLBackup"]);
    const lines = statusTable(rows, true).split("\n");
    expect(lines[0]?.split(/\s+/)).toEqual(["NAMESPACE", "KIND", "NAME", "READY", "PHASE", "SUMMARY", "REASON", "MESSAGE"]);
    expect(lines[1]?.indexOf(" u ")).toBe(lines[0]?.indexOf(" NAME "));
  });
});

describe("common", () => {
  it("parses durations", () => {
    expect(parseDuration("90", "--timeout")).toBe(90_000);
    expect(parseDuration("1h30m", "--timeout")).toBe(5_400_000);
    expect(parseDuration("500ms", "--timeout")).toBe(500);
    expect(() => parseDuration("5 minutes", "--timeout")).toThrow(UsageError);
    expect(formatSeconds(75)).toBe("1m15s");
  });

  it("keeps generated names within 253 characters", () => {
    expect(generatedName("db", "manual-20260101000000")).toBe("db-manual-20260101000000");
    const long = generatedName(`${"a".repeat(240)}-x`, "restore-20260101000000");
    expect(long.length).toBeLessThanOrEqual(253);
    expect(long.endsWith("a-restore-20260101000000")).toBe(true);
  });

  it("maps what happened to an exit code", () => {
    expect(exitCodeOf(new UsageError("x"))).toBe(EXIT.usage);
    expect(exitCodeOf(new CommandError(EXIT.timeout, "x"))).toBe(3);
    expect(exitCodeOf(new ApiConnectionError("https://127.0.0.1:1", Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" })))).toBe(EXIT.api);
    expect(exitCodeOf(new DOMException("The operation was aborted due to timeout", "TimeoutError"))).toBe(EXIT.api);
    expect(exitCodeOf(new Error("x"))).toBe(EXIT.failed);
  });

  it("tells an operation's progress in one line", () => {
    expect(operationLine({ metadata: {}, status: { phase: "Running", conditions: [{ type: "Ready", status: "False", reason: "Running", message: "Backing up to s3://b/x/", lastTransitionTime: "" }] } }))
      .toBe("Running (Running): Backing up to s3://b/x/");
    expect(operationLine({ metadata: {}, status: { phase: "Completed", objects: 3, compressedBytes: 100, uncompressedBytes: 4096, conditions: [] } }))
      .toBe("Completed [3 objects, 100 B stored, 4.0 KiB of SQL]");
  });
});
