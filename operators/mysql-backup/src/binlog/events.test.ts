import { describe, expect, it } from "vitest";
import { capturedStream } from "./captured-stream.ts";
import {
  ARTIFICIAL_FLAG,
  BINLOG_MAGIC,
  BinlogFormatError,
  EventType,
  GtidFlag,
  archiveFormatDescription,
  endsGroup,
  gtidListEvent,
  parseFormatDescription,
  parseGtidEvent,
  parseGtidList,
  parseHeader,
  parseRotate,
  queryText,
  readBinlogFile,
  relocate,
  toEvent,
  verifyChecksum,
  type BinlogEvent,
} from "./events.ts";
import { formatGtid } from "./gtid.ts";

const events: BinlogEvent[] = capturedStream.map((hex) => toEvent(Buffer.from(hex, "hex")));
const ofType = (type: number) => events.filter((e) => e.header.type === type);
const format = parseFormatDescription(ofType(EventType.FORMAT_DESCRIPTION)[0] as BinlogEvent);

describe("binlog events of a real MariaDB stream", () => {
  it("reads the common header", () => {
    const [rotate, fde] = events;
    expect(rotate?.header).toMatchObject({ type: EventType.ROTATE, timestamp: 0, logPos: 0, flags: ARTIFICIAL_FLAG, length: 47 });
    expect(fde?.header).toMatchObject({ type: EventType.FORMAT_DESCRIPTION, serverId: 7, length: 252, logPos: 256 });
  });

  it("refuses an event whose length field disagrees with its bytes", () => {
    const raw = Buffer.from(events[4]?.raw ?? Buffer.alloc(0));
    expect(() => parseHeader(raw.subarray(0, raw.length - 1))).toThrow(BinlogFormatError);
    expect(() => parseHeader(Buffer.alloc(5))).toThrow(/shorter than its 19-byte header/);
  });

  it("reads the Format_description: version 4, the server's version, CRC32 checksums", () => {
    expect(format).toMatchObject({ binlogVersion: 4, serverVersion: "10.11.19-MariaDB-0+deb12u1-log", checksum: true });
    expect(format.postHeaderLengths[EventType.QUERY - 1]).toBe(13);
  });

  it("reads the GTID events: sequence, domain, the server id from the header, standalone DDL vs transactions", () => {
    const gtids = ofType(EventType.GTID).map(parseGtidEvent);
    expect(gtids.map((g) => formatGtid(g.gtid))).toEqual(["0-7-1", "0-7-2", "0-7-3", "0-7-4", "0-7-5", "0-7-6", "0-7-7"]);
    expect((gtids[0]?.flags ?? 0) & GtidFlag.STANDALONE).toBe(GtidFlag.STANDALONE);
    expect((gtids[2]?.flags ?? 0) & GtidFlag.STANDALONE).toBe(0);
  });

  it("reads the Rotate's file name and the Gtid_list (empty at the first file)", () => {
    expect(parseRotate(events[0] as BinlogEvent, true).file).toBe("mysql-bin.000001");
    expect(parseGtidList(ofType(EventType.GTID_LIST)[0] as BinlogEvent, true)).toEqual([]);
  });

  it("reads a Query's statement, and which event ends a group", () => {
    const queries = ofType(EventType.QUERY).map((e) => queryText(e, format));
    expect(queries).toContain("CREATE DATABASE shop");
    expect(queries).toContain("COMMIT");
    const commit = ofType(EventType.QUERY).find((e) => queryText(e, format) === "COMMIT") as BinlogEvent;
    const xid = ofType(EventType.XID)[0] as BinlogEvent;
    const tableMap = ofType(EventType.TABLE_MAP)[0] as BinlogEvent;
    expect(endsGroup(xid, 0, format)).toBe(true);
    expect(endsGroup(commit, 0, format)).toBe(true);
    expect(endsGroup(tableMap, 0, format)).toBe(false);
    expect(endsGroup(tableMap, GtidFlag.STANDALONE, format)).toBe(false);
    const ddl = ofType(EventType.QUERY)[0] as BinlogEvent;
    expect(endsGroup(ddl, GtidFlag.STANDALONE, format)).toBe(true);
    expect(endsGroup(ddl, 0, format)).toBe(false);
  });

  it("verifies CRC32 checksums and names the event that fails", () => {
    for (const e of events.slice(1)) verifyChecksum(e);
    const broken = Buffer.from(events[5]?.raw ?? Buffer.alloc(0));
    broken[30] = (broken[30] ?? 0) ^ 0xff;
    expect(() => verifyChecksum(toEvent(broken))).toThrow(/checksum mismatch in a binlog event of type 2/);
  });
});

describe("events written into an archive file", () => {
  it("relocates an event: the log position is its end in the new file, the checksum still matches", () => {
    const e = events[5] as BinlogEvent;
    const moved = toEvent(relocate(e, 1000, true));
    expect(moved.header.logPos).toBe(1000 + e.raw.length);
    verifyChecksum(moved);
    expect(moved.raw.subarray(19, -4).equals(e.raw.subarray(19, -4))).toBe(true);
  });

  it("opens a file with the server's Format_description, not in use, creation time cleared", () => {
    const fde = toEvent(archiveFormatDescription(format, BINLOG_MAGIC.length));
    verifyChecksum(fde);
    expect(fde.header.logPos).toBe(4 + fde.raw.length);
    expect(fde.header.flags & 0x01).toBe(0);
    expect(fde.raw.readUInt32LE(19 + 2 + 50)).toBe(0);
    expect(parseFormatDescription(fde)).toMatchObject({ serverVersion: format.serverVersion, checksum: true });
  });

  it("writes a Gtid_list that reads back", () => {
    const list = [
      { domain: 0, server: 7, seq: 41n },
      { domain: 2, server: 9, seq: 18446744073709551615n },
    ];
    for (const checksum of [true, false]) {
      const e = toEvent(gtidListEvent(list, { timestamp: 1, serverId: 7, offset: 256, checksum }));
      if (checksum) verifyChecksum(e);
      expect(e.header).toMatchObject({ type: EventType.GTID_LIST, logPos: 256 + e.raw.length, serverId: 7 });
      expect(parseGtidList(e, checksum)).toEqual(list);
    }
  });

  it("reads a file back event by event, and refuses one that is cut short", () => {
    const file = Buffer.concat([BINLOG_MAGIC, ...events.slice(1, 4).map((e) => e.raw)]);
    expect(readBinlogFile(file).map((e) => e.header.type)).toEqual([EventType.FORMAT_DESCRIPTION, EventType.GTID_LIST, EventType.BINLOG_CHECKPOINT]);
    expect(() => readBinlogFile(file.subarray(0, file.length - 3))).toThrow(/past the end of the file/);
    expect(() => readBinlogFile(Buffer.from("hello"))).toThrow(/does not start with/);
  });
});
