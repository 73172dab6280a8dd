import { describe, expect, it } from "vitest";
import type { ArchiveIndex, ArchivedFile } from "./archive-index.ts";
import { selectPrunable } from "./retention.ts";

const HOUR = 3_600_000;
const now = Date.UTC(2026, 0, 10);

/** Files of one domain: each [start, end] sequence numbers, the last event `ageHours` old. */
function archive(...files: [number, number, number][]): ArchiveIndex {
  const list: ArchivedFile[] = files.map(([from, to, ageHours], i) => ({
    key: `binlog.${String(i + 1).padStart(6, "0")}`,
    sha256: "0".repeat(64),
    size: 100,
    startPosition: `0-1-${from}`,
    endPosition: `0-1-${to}`,
    firstGtid: `0-1-${from + 1}`,
    lastGtid: `0-1-${to}`,
    transactions: to - from,
    firstEventTime: new Date(now - ageHours * HOUR).toISOString(),
    lastEventTime: new Date(now - ageHours * HOUR).toISOString(),
    serverId: 1,
    source: "db:3306",
    serverVersion: "10.11",
  }));
  return {
    format: "stateward.io/binlog-archive",
    formatVersion: 1,
    createdAt: "",
    updatedAt: "",
    startPosition: list[0]?.startPosition ?? "",
    position: list.at(-1)?.endPosition ?? "",
    files: list,
  };
}

const keys = (c: { files: ArchivedFile[] }) => c.files.map((f) => f.key);

describe("selectPrunable: the files no kept backup needs", () => {
  const index = archive([0, 10, 50], [10, 20, 40], [20, 30, 30], [30, 40, 20]);

  it("chooses the files that end at or before the oldest kept backup's snapshot, from the front", () => {
    const c = selectPrunable(index, [{ name: "new", position: "0-1-35" }, { name: "old", position: "0-1-20" }], now, 0);
    expect(keys(c)).toEqual(["binlog.000001", "binlog.000002"]);
    expect(c).toMatchObject({ oldestBackup: "old", reason: "binlog.000003 holds transactions after the snapshot of backup old" });
  });

  it("keeps a file that holds the transaction right after a backup's snapshot: a restore of it replays that file", () => {
    expect(keys(selectPrunable(index, [{ name: "b", position: "0-1-19" }], now, 0))).toEqual(["binlog.000001"]);
  });

  it("keeps every file when anything is unknown: no backup, a backup without a position, one it cannot read", () => {
    expect(selectPrunable(index, [], now, 0)).toMatchObject({ files: [], reason: "no Completed backup of the archived server: every file is kept" });
    expect(selectPrunable(index, [{ name: "a", position: "0-1-40" }, { name: "mysql", position: undefined }], now, 0)).toMatchObject({
      files: [],
      reason: "backup mysql recorded no GTID position: every file is kept",
    });
    expect(keys(selectPrunable(index, [{ name: "x", position: "3E11FA47-71CA-11E1-9E33-C80AA9429562:23" }], now, 0))).toEqual([]);
  });

  it("counts every domain: a file with a domain the backup's position has not reached is needed", () => {
    const twoDomains = archive([0, 10, 50], [10, 20, 40]);
    twoDomains.files[0]!.endPosition = "0-1-10,1-2-5";
    twoDomains.files[1]!.startPosition = "0-1-10,1-2-5";
    expect(keys(selectPrunable(twoDomains, [{ name: "b", position: "0-1-20" }], now, 0))).toEqual([]);
    expect(keys(selectPrunable(twoDomains, [{ name: "b", position: "0-1-20,1-2-5" }], now, 0))).toEqual(["binlog.000001"]);
  });

  it("keeps the newest file whatever it holds, and files younger than the minimum age", () => {
    expect(keys(selectPrunable(index, [{ name: "b", position: "0-1-99" }], now, 0))).toEqual(["binlog.000001", "binlog.000002", "binlog.000003"]);
    expect(selectPrunable(index, [{ name: "b", position: "0-1-99" }], now, 35 * HOUR)).toMatchObject({
      files: [index.files[0], index.files[1]],
      reason: "binlog.000003 is younger than the minimum age",
    });
  });
});
