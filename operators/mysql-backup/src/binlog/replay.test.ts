import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { BackupError } from "../errors.ts";
import { newArchiveIndex, type ArchiveIndex, type ArchivedFile } from "./archive-index.ts";
import { capturedStream } from "./captured-stream.ts";
import { findUnattributed, planReplay, type RecoveryPoint } from "./replay.ts";

const at = (seconds: number): string => new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");

/** A file of transactions `from`..`to` of domain 0 (server 1), one a second from second `from`; `others` for other domains' state. */
function file(n: number, from: number, to: number, others = ""): ArchivedFile {
  const state = (seq: number) => [seq > 0 ? `0-1-${seq}` : "", others].filter(Boolean).join(",");
  return {
    key: `binlog.${String(n).padStart(6, "0")}`,
    sha256: "0".repeat(64),
    size: 1000 * n,
    startPosition: state(from - 1),
    endPosition: state(to),
    firstGtid: `0-1-${from}`,
    lastGtid: `0-1-${to}`,
    transactions: to - from + 1,
    firstEventTime: at(1_000 + from),
    lastEventTime: at(1_000 + to),
    serverId: 1,
    source: "db:3306",
    serverVersion: "10.11.19-MariaDB",
  };
}

function archive(startPosition: string, files: ArchivedFile[]): ArchiveIndex {
  const index = newArchiveIndex(startPosition, new Date(0));
  return { ...index, files, position: files.at(-1)?.endPosition ?? startPosition };
}

/** Transactions 1..10, 11..20, 21..30 in three files. */
const three = archive("", [file(1, 1, 10), file(2, 11, 20), file(3, 21, 30)]);
const keys = (index: ArchiveIndex, after: string, until: RecoveryPoint) => planReplay(index, after, until).files.map((f) => f.key);
/** The BackupError `fn` throws, checked for its reason and message. */
const failure = (fn: () => unknown, reason: string, message?: RegExp): BackupError => {
  const err = thrown(fn);
  expect(err.reason).toBe(reason);
  if (message) expect(err.message).toMatch(message);
  return err;
};
const thrown = (fn: () => unknown): BackupError => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(BackupError);
    return err as BackupError;
  }
  throw new Error("did not throw");
};

describe("planReplay", () => {
  it("takes the files from the one after the backup to the one holding the GTID", () => {
    expect(keys(three, "0-1-5", { gtid: "0-1-15" })).toEqual(["binlog.000001", "binlog.000002"]);
    expect(keys(three, "0-1-10", { gtid: "0-1-11" })).toEqual(["binlog.000002"]);
    expect(keys(three, "0-1-10", { gtid: "0-1-20" })).toEqual(["binlog.000002"]);
    expect(keys(three, "0-1-10", { gtid: "0-1-21" })).toEqual(["binlog.000002", "binlog.000003"]);
    expect(keys(three, "", { gtid: "0-1-30" })).toEqual(["binlog.000001", "binlog.000002", "binlog.000003"]);
    expect(planReplay(three, "0-1-10", { gtid: "0-1-21" }).bytes).toBe(5000);
  });

  it("needs nothing for the backup's own point, and refuses a point before it", () => {
    expect(keys(three, "0-1-15", { gtid: "0-1-15" })).toEqual([]);
    failure(() => planReplay(three, "0-1-15", { gtid: "0-1-14" }), "InvalidOptions", /backup is past the recovery point/);
  });

  it("takes the files up to the first one that starts after the time", () => {
    // Transaction n commits at second 1000 + n.
    expect(keys(three, "0-1-5", { time: new Date((1_000 + 15) * 1000) })).toEqual(["binlog.000001", "binlog.000002"]);
    expect(keys(three, "0-1-5", { time: new Date((1_000 + 20) * 1000 + 999) })).toEqual(["binlog.000001", "binlog.000002"]);
    expect(keys(three, "0-1-5", { time: new Date((1_000 + 21) * 1000) })).toEqual(["binlog.000001", "binlog.000002", "binlog.000003"]);
    expect(keys(three, "0-1-12", { time: new Date((1_000 + 30) * 1000) })).toEqual(["binlog.000002", "binlog.000003"]);
  });

  it("says what the archive reaches for a point past it", () => {
    failure(() => planReplay(three, "0-1-5", { gtid: "0-1-31" }), "PointNotArchived", /the archive reaches 0-1-30 \(its last transaction, 0-1-30, committed at 1970-01-01T00:17:10Z\)/);
    failure(() => planReplay(three, "0-1-5", { time: new Date((1_000 + 31) * 1000) }), "PointNotArchived", /past what is archived/);
    failure(() => planReplay(archive("0-1-3", []), "0-1-5", { gtid: "0-1-6" }), "PointNotArchived", /holds no transaction yet/);
    // A domain the archive never saw.
    failure(() => planReplay(three, "0-1-5", { gtid: "1-1-1" }), "PointNotArchived");
  });

  it("takes a time after the last transaction as archived when its whole second ended before the archive was current (an idle server)", () => {
    // The last transaction commits at second 1030; the archive was current at 1040.5 s.
    const idle = { ...three, currentAt: new Date(1_040_500).toISOString() };
    expect(keys(idle, "0-1-12", { time: new Date(1_039_000) })).toEqual(["binlog.000002", "binlog.000003"]);
    expect(keys(idle, "0-1-30", { time: new Date(1_039_000) })).toEqual([]);
    // Second 1040 had not ended: a transaction of it may still come.
    failure(() => planReplay(idle, "0-1-12", { time: new Date(1_040_000) }), "PointNotArchived", /held everything the server had written at 1970-01-01T00:17:20.500Z/);
    // An archive of a server that wrote nothing yet.
    expect(keys({ ...archive("0-1-3", []), currentAt: new Date(1_040_500).toISOString() }, "0-1-3", { time: new Date(1_039_000) })).toEqual([]);
  });

  it("refuses an archive that starts after the backup", () => {
    const late = archive("0-1-10", [file(2, 11, 20)]);
    expect(keys(late, "0-1-10", { gtid: "0-1-12" })).toEqual(["binlog.000002"]);
    failure(() => planReplay(late, "0-1-9", { gtid: "0-1-12" }), "ArchiveGap", /starts at 0-1-10, after the backup's position 0-1-9/);
    failure(() => planReplay(late, "", { gtid: "0-1-12" }), "ArchiveGap");
  });

  it("refuses files that do not chain", () => {
    const holed = archive("", [file(1, 1, 10), file(2, 12, 20)]);
    failure(() => planReplay(holed, "", { gtid: "0-1-5" }), "ArchiveGap", /binlog.000002 starts at 0-1-11, but the file before it ends at 0-1-10/);
  });

  it("follows each domain of a multi-domain archive", () => {
    // Domain 1 is at 1-2-7 throughout these files, then moves on in the last one.
    const multi = archive("1-2-7", [file(1, 1, 10, "1-2-7"), file(2, 11, 20, "1-2-7"), { ...file(3, 21, 30, "1-2-7"), endPosition: "0-1-30,1-2-9" }]);
    expect(keys(multi, "0-1-12,1-2-7", { gtid: "1-2-8" })).toEqual(["binlog.000002", "binlog.000003"]);
    expect(keys(multi, "0-1-20,1-2-7", { gtid: "0-1-25" })).toEqual(["binlog.000003"]);
    // The backup has domain 1 past the archive's start; domain 0 decides which files.
    expect(keys(multi, "0-1-10,1-2-9", { gtid: "0-1-11" })).toEqual(["binlog.000002"]);
    // A backup without domain 1 while the archive starts at 1-2-7: transactions 1-2-1..7 are in neither.
    failure(() => planReplay(multi, "0-1-12", { gtid: "0-1-15" }), "ArchiveGap");
    failure(() => planReplay(multi, "0-1-12,1-2-7", { gtid: "1-2-10" }), "PointNotArchived");
  });

  it("refuses what is not a GTID, a position or a date", () => {
    failure(() => planReplay(three, "0-1", { gtid: "0-1-5" }), "InvalidOptions");
    failure(() => planReplay(three, "0-1-1", { gtid: "x" }), "InvalidOptions");
    failure(() => planReplay(three, "0-1-1", { time: new Date(Number.NaN) }), "InvalidOptions");
  });
});

describe("findUnattributed", () => {
  // The captured stream as a file: 0-7-2 (CREATE TABLE shop.t) and 0-7-4 (CREATE TABLE shop.m) were run without USE.
  const file = Buffer.concat([Buffer.from([0xfe, 0x62, 0x69, 0x6e]), ...capturedStream.slice(1).map((hex) => Buffer.from(hex, "hex"))]);
  const files = (): AsyncIterable<Buffer> => Readable.from([file]);

  it("names the first statement without a default database after the backup and up to the point", async () => {
    expect(await findUnattributed(files(), "0-7-1", { gtid: "0-7-7" })).toMatchObject({ gtid: "0-7-2", kind: "CREATE TABLE" });
    expect(await findUnattributed(files(), "0-7-2", { gtid: "0-7-7" })).toMatchObject({ gtid: "0-7-4", kind: "CREATE TABLE" });
    expect(await findUnattributed(files(), "0-7-4", { gtid: "0-7-7" })).toBeUndefined();
    // Before it: the point stops the scan (a GTID, or a time before its commit).
    expect(await findUnattributed(files(), "", { gtid: "0-7-1" })).toBeUndefined();
    expect(await findUnattributed(files(), "", { time: new Date(0) })).toBeUndefined();
  });
});
