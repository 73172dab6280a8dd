import { describe, expect, it } from "vitest";
import type { MySQLBackup } from "../api.ts";
import { backupNameFor, backupsToPrune, parseAge, wakeDelayMs } from "./schedule-reconciler.ts";

const b = (name: string, phase: string, completionTime?: string): MySQLBackup =>
  ({ metadata: { name }, spec: {}, status: { phase, completionTime } }) as unknown as MySQLBackup;
const now = new Date("2026-11-30T12:00:00Z");

describe("backupsToPrune", () => {
  const history = [
    b("d1", "Completed", "2026-11-30T11:00:00Z"),
    b("d2", "Completed", "2026-11-29T11:00:00Z"),
    b("failed", "Failed", "2026-11-30T11:30:00Z"),
    b("d3", "Completed", "2026-11-20T11:00:00Z"),
    b("running", "Running"),
  ];

  it("keeps the newest keepLast completed backups; failed and running ones neither count nor go", () => {
    expect(backupsToPrune(history, { keepLast: 2 }, now).map((x) => x.metadata.name)).toEqual(["d3"]);
    expect(backupsToPrune(history, { keepLast: 1 }, now).map((x) => x.metadata.name)).toEqual(["d2", "d3"]);
  });

  it("deletes completed backups older than maxAge but never the newest completed one", () => {
    expect(backupsToPrune(history, { maxAge: "48h" }, now).map((x) => x.metadata.name)).toEqual(["d3"]);
    expect(backupsToPrune(history, { maxAge: "1s" }, now).map((x) => x.metadata.name)).toEqual(["d2", "d3"]);
    expect(backupsToPrune([b("only", "Completed", "2020-01-01T00:00:00Z")], { maxAge: "1d" }, now)).toEqual([]);
  });

  it("keeps everything without a retention policy", () => {
    expect(backupsToPrune(history, undefined, now)).toEqual([]);
  });
});

describe("backupNameFor", () => {
  it("names a due time's backup deterministically, so a second attempt meets AlreadyExists", () => {
    expect(backupNameFor("nightly", new Date("2026-03-08T07:30:00Z"))).toBe("nightly-20260308073000");
  });
});

describe("parseAge", () => {
  it("reads s, m, h and d", () => {
    expect(parseAge("90s")).toBe(90_000);
    expect(parseAge("30d")).toBe(30 * 86_400_000);
    expect(() => parseAge("1w")).toThrow(/invalid maxAge "1w"/);
  });
});

describe("wakeDelayMs", () => {
  it("wakes just after the due time, never before it", () => {
    expect(wakeDelayMs(new Date("2026-11-30T12:00:03Z"), new Date("2026-11-30T12:00:00.400Z"))).toBe(2_600 + 250);
    // Woken a moment early (the queue's timer ran ahead of the wall clock): just after the due time again.
    expect(wakeDelayMs(new Date("2026-11-30T12:00:03Z"), new Date("2026-11-30T12:00:02.990Z"))).toBe(10 + 250);
    expect(wakeDelayMs(new Date("2026-11-30T12:00:03Z"), new Date("2026-11-30T12:00:04Z"))).toBe(250);
  });
});
