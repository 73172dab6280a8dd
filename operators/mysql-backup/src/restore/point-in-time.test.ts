import { describe, expect, it } from "vitest";
import { newArchiveIndex } from "../binlog/archive-index.ts";
import { BackupError } from "../errors.ts";
import { archiveCovers, chooseBackup, snapshotBefore, type BackupCandidate } from "./point-in-time.ts";

const at = (iso: string) => new Date(iso);
const backup = (name: string, position: string, snapshot: string): BackupCandidate => ({ name, position, snapshotTime: at(snapshot) });

describe("archiveCovers", () => {
  it("holds when the backup is at or after the archive's start in every domain the archive starts at", () => {
    expect(archiveCovers("0-1-10", "0-1-10")).toBe(true);
    expect(archiveCovers("0-1-10", "0-1-42,1-2-3")).toBe(true);
    expect(archiveCovers("", "0-1-1")).toBe(true);
    expect(archiveCovers("0-1-10", "0-1-9")).toBe(false);
    expect(archiveCovers("0-1-10,1-2-5", "0-1-20")).toBe(false);
  });
});

describe("snapshotBefore", () => {
  it("takes a snapshot within the point's second (the binlog's resolution) as before it", () => {
    const b = backup("b", "0-1-5", "2026-12-02T03:00:10.700Z");
    expect(snapshotBefore(b, { time: at("2026-12-02T03:00:10Z") })).toBe(true);
    expect(snapshotBefore(b, { time: at("2026-12-02T03:00:09Z") })).toBe(false);
  });

  it("compares a GTID point with the backup's position in the point's domain", () => {
    const b = backup("b", "0-1-5,1-1-9", "2026-12-02T03:00:00Z");
    expect(snapshotBefore(b, { gtid: "0-1-5" })).toBe(true);
    expect(snapshotBefore(b, { gtid: "0-1-4" })).toBe(false);
    expect(snapshotBefore(b, { gtid: "2-1-1" })).toBe(true);
  });
});

describe("chooseBackup", () => {
  const index = newArchiveIndex("0-1-10", at("2026-12-02T02:00:00Z"));
  const backups = [
    backup("before-archive", "0-1-5", "2026-12-02T01:00:00Z"),
    backup("early", "0-1-20", "2026-12-02T02:10:00Z"),
    backup("late", "0-1-80", "2026-12-02T02:50:00Z"),
    backup("after-point", "0-1-120", "2026-12-02T03:30:00Z"),
  ];

  it("takes the newest backup the archive covers whose snapshot precedes the point", () => {
    expect(chooseBackup(backups, index, { time: at("2026-12-02T03:00:00Z") }, "ns").name).toBe("late");
    expect(chooseBackup(backups, index, { gtid: "0-1-50" }, "ns").name).toBe("early");
  });

  it("refuses with NoBackupBeforePoint, saying why, when none fits", () => {
    let err: unknown;
    try {
      chooseBackup(backups, index, { time: at("2026-12-02T02:05:00Z") }, "ns");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(BackupError);
    expect((err as BackupError).reason).toBe("NoBackupBeforePoint");
    expect((err as BackupError).message).toContain("of 4 with a GTID position, 3 were taken after the point and 1 is older than the archive");
  });
});
