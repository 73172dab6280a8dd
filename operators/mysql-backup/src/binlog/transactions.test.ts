import { describe, expect, it } from "vitest";
import { capturedStream } from "./captured-stream.ts";
import { EventType, toEvent, type BinlogEvent } from "./events.ts";
import { formatGtid } from "./gtid.ts";
import { TransactionAssembler, type StreamItem, type Transaction } from "./transactions.ts";

const events: BinlogEvent[] = capturedStream.map((hex) => toEvent(Buffer.from(hex, "hex")));

function feed(list: readonly BinlogEvent[], assembler = new TransactionAssembler()): StreamItem[] {
  return list.map((e) => assembler.push(e));
}

const transactions = (items: StreamItem[]): Transaction[] => items.flatMap((i) => (i.kind === "transaction" ? [i.transaction] : []));

/** An event of `type` with the header of `like` (the body does not matter to the assembler for these types). */
function eventOfType(like: BinlogEvent, type: number): BinlogEvent {
  const raw = Buffer.from(like.raw);
  raw.writeUInt8(type, 4);
  return { header: { ...like.header, type }, raw };
}

describe("TransactionAssembler", () => {
  it("turns a real stream into its seven transactions, whole, in order", () => {
    const items = feed(events);
    const txs = transactions(items);
    expect(txs.map((t) => formatGtid(t.gtid))).toEqual(["0-7-1", "0-7-2", "0-7-3", "0-7-4", "0-7-5", "0-7-6", "0-7-7"]);
    // DDL: GTID + Query; InnoDB insert: GTID, Annotate, Table_map, Write_rows, Xid; Aria: ... Query COMMIT.
    expect(txs.map((t) => t.events.length)).toEqual([2, 2, 5, 2, 5, 8, 5]);
    expect(txs[4]?.events.at(-1)?.header.type).toBe(EventType.QUERY);
    for (const t of txs) {
      expect(t.events[0]?.header.type).toBe(EventType.GTID);
      expect(t.bytes).toBe(t.events.reduce((n, e) => n + e.raw.length, 0));
    }
    expect(items.filter((i) => i.kind === "heartbeat")).toHaveLength(2);
    expect(items[1]).toMatchObject({ kind: "format" });
    expect(items[0]).toMatchObject({ kind: "rotate" });
  });

  it("reports the same format again as nothing new", () => {
    const assembler = new TransactionAssembler();
    const fde = events[1] as BinlogEvent;
    expect(assembler.push(fde).kind).toBe("format");
    expect(assembler.push(fde).kind).toBe("none");
  });

  it("drops a transaction cut by a broken connection, and takes it whole when sent again", () => {
    const assembler = new TransactionAssembler();
    const gtid3 = events.findIndex((e) => e.header.type === EventType.GTID && e.raw.readBigUInt64LE(19) === 3n);
    expect(transactions(feed(events.slice(0, gtid3 + 3), assembler))).toHaveLength(2);
    assembler.reset();
    const again = transactions(feed(events.slice(gtid3), assembler));
    expect(again.map((t) => formatGtid(t.gtid))).toEqual(["0-7-3", "0-7-4", "0-7-5", "0-7-6", "0-7-7"]);
  });

  it("refuses a transaction without its end", () => {
    const assembler = new TransactionAssembler();
    const gtid3 = events.findIndex((e) => e.header.type === EventType.GTID && e.raw.readBigUInt64LE(19) === 3n);
    feed(events.slice(0, gtid3 + 2), assembler);
    expect(() => assembler.push(events[gtid3 + 5] as BinlogEvent)).toThrow(/transaction 0-7-3 has no end/);
  });

  it("refuses events before any format, and data outside a transaction", () => {
    expect(() => new TransactionAssembler().push(events[4] as BinlogEvent)).toThrow(/before any Format_description/);
    const assembler = new TransactionAssembler();
    feed(events.slice(0, 4), assembler);
    expect(() => assembler.push(events[5] as BinlogEvent)).toThrow(/outside any transaction/);
  });

  it("refuses a MySQL server's GTID events by name, and an Incident (the server lost events)", () => {
    // Checksums are verified first: a changed type byte would fail them, so the format is one without checksums.
    const noChecksum = new TransactionAssembler();
    const fde = Buffer.from((events[1] as BinlogEvent).raw);
    fde.writeUInt8(0, fde.length - 5);
    noChecksum.push(toEvent(fde));
    expect(() => noChecksum.push(eventOfType(events[4] as BinlogEvent, EventType.MYSQL_GTID))).toThrow(/MySQL server's binary log is not supported yet/);
    expect(() => noChecksum.push(eventOfType(events[5] as BinlogEvent, EventType.INCIDENT))).toThrow(/Incident event/);
  });
});
