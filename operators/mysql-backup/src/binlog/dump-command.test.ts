import { describe, expect, it } from "vitest";
import { BINLOG_SEND_ANNOTATE_ROWS_EVENT, BinlogDumpCommand, binlogDumpPayload, type DumpConnection, type DumpPacket } from "./dump-command.ts";

function packet(payload: Buffer, kind: "event" | "error" | "eof" = "event"): DumpPacket {
  // As mysql2 hands it: a larger buffer, the payload at an offset.
  const buffer = Buffer.concat([Buffer.from([9, 9, 9, 9, 9, 9]), payload, Buffer.from([7, 7])]);
  return {
    buffer,
    offset: 6,
    end: 6 + payload.length,
    isError: () => kind === "error",
    isEOF: () => kind === "eof",
    asError: () => Object.assign(new Error("Could not find GTID state requested by slave in any binlog files"), { errno: 1236 }),
  };
}

function harness() {
  const written: Buffer[] = [];
  const seen = { events: [] as Buffer[], ended: 0, failures: [] as Error[], resets: 0 };
  const connection: DumpConnection = {
    _resetSequenceId: () => seen.resets++,
    writePacket: (p) => {
      p.writeHeader(0);
      written.push(p.buffer);
    },
  };
  const command = new BinlogDumpCommand(binlogDumpPayload({ position: 4, flags: BINLOG_SEND_ANNOTATE_ROWS_EVENT, serverId: 4_000_000_001, file: "" }), {
    event: (raw) => seen.events.push(raw),
    end: () => seen.ended++,
    fail: (err) => seen.failures.push(err),
  });
  return { written, seen, connection, command };
}

describe("BinlogDumpCommand", () => {
  it("sends COM_BINLOG_DUMP once: position, flags, server id, empty file name", () => {
    const { written, seen, connection, command } = harness();
    expect(command.execute(undefined, connection)).toBe(false);
    expect(seen.resets).toBe(1);
    expect(written).toHaveLength(1);
    expect(written[0]?.toString("hex")).toBe(
      // length 11, sequence 0 | 0x12 | position 4 | flags 2 | server id 4000000001
      "0b0000" + "00" + "12" + "04000000" + "0200" + "01286bee",
    );
  });

  it("hands out each event's bytes without the OK byte, as a copy", () => {
    const { seen, connection, command } = harness();
    command.execute(undefined, connection);
    const p = packet(Buffer.from([0x00, 1, 2, 3]));
    expect(command.execute(p, connection)).toBe(false);
    p.buffer.fill(0);
    expect(seen.events.map((e) => [...e])).toEqual([[1, 2, 3]]);
  });

  it("ends on an ERR packet with the server's error, once", () => {
    const { seen, connection, command } = harness();
    command.execute(undefined, connection);
    expect(command.execute(packet(Buffer.from([0xff]), "error"), connection)).toBe(true);
    command.onResult(new Error("connection lost later"));
    expect(seen.failures.map((e) => e.message)).toEqual(["Could not find GTID state requested by slave in any binlog files"]);
  });

  it("reports a connection failure mysql2 passes to onResult, and EOF as the end", () => {
    const a = harness();
    a.command.execute(undefined, a.connection);
    a.command.onResult(new Error("Connection lost: The server closed the connection."));
    expect(a.seen.failures).toHaveLength(1);
    const b = harness();
    b.command.execute(undefined, b.connection);
    expect(b.command.execute(packet(Buffer.from([0xfe, 0, 0, 0, 0]), "eof"), b.connection)).toBe(true);
    expect(b.seen.ended).toBe(1);
  });

  it("refuses a packet that is not an event", () => {
    const { seen, connection, command } = harness();
    command.execute(undefined, connection);
    expect(command.execute(packet(Buffer.from([0x05, 1])), connection)).toBe(true);
    expect(seen.failures[0]?.message).toMatch(/starting with 0x5, not an event/);
  });
});
