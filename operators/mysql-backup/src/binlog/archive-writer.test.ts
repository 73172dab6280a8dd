import { createHash } from "node:crypto";
import { crc32 } from "node:zlib";
import { describe, expect, it } from "vitest";
import { BackupError } from "../errors.ts";
import { archiveIndexFileName, parseArchiveIndex, type ArchiveIndex } from "./archive-index.ts";
import { ArchiveWriter, type ArchiveStorage } from "./archive-writer.ts";
import { capturedStream } from "./captured-stream.ts";
import { EventType, parseGtidList, readBinlogFile, toEvent, verifyChecksum, type BinlogEvent } from "./events.ts";
import { formatGtid } from "./gtid.ts";
import { TransactionAssembler, type Transaction } from "./transactions.ts";

const captured: Transaction[] = (() => {
  const assembler = new TransactionAssembler();
  return capturedStream.flatMap((hex) => {
    const item = assembler.push(toEvent(Buffer.from(hex, "hex")));
    return item.kind === "transaction" ? [item.transaction] : [];
  });
})();
const source = { serverId: 7, endpoint: "db-0:3306" };

/** A captured transaction renumbered to `domain-server-seq` (its GTID event rewritten, checksum recomputed). */
function tx(seq: number, template = captured[2] as Transaction, server = 7, domain = 0): Transaction {
  const [gtidEvent, ...rest] = template.events as [BinlogEvent, ...BinlogEvent[]];
  const raw = Buffer.from(gtidEvent.raw);
  raw.writeBigUInt64LE(BigInt(seq), 19);
  raw.writeUInt32LE(domain, 27);
  raw.writeUInt32LE(server, 5);
  raw.writeUInt32LE(crc32(raw.subarray(0, raw.length - 4)), raw.length - 4);
  return { ...template, gtid: { domain, server, seq: BigInt(seq) }, events: [toEvent(raw), ...rest] };
}

class MemoryStorage implements ArchiveStorage {
  readonly objects = new Map<string, Buffer>();
  failPuts = 0;
  put(key: string, body: Buffer): Promise<void> {
    if (this.failPuts > 0) {
      this.failPuts--;
      return Promise.reject(new BackupError("StorageUnreachable", "S3 is down", { retryable: true }));
    }
    this.objects.set(key, Buffer.from(body));
    return Promise.resolve();
  }
  get(key: string): Promise<Buffer | undefined> {
    return Promise.resolve(this.objects.get(key));
  }
  /** Each call's keys, with which objects the index named at that moment. */
  readonly deletes: { keys: string[]; indexed: string[] }[] = [];
  delete(keys: readonly string[]): Promise<void> {
    this.deletes.push({ keys: [...keys], indexed: this.index().files.map((f) => f.key) });
    for (const k of keys) this.objects.delete(k);
    return Promise.resolve();
  }
  index(): ArchiveIndex {
    return parseArchiveIndex(this.objects.get(archiveIndexFileName) ?? Buffer.alloc(0));
  }
}

const startAt = (position: string) => () => Promise.resolve(position);

describe("ArchiveWriter", () => {
  it("starts an archive at the server's position and writes the index at once", async () => {
    const storage = new MemoryStorage();
    await ArchiveWriter.open(storage, startAt("0-7-2"), { now: () => Date.UTC(2026, 0, 1) });
    expect(storage.index()).toMatchObject({ startPosition: "0-7-2", position: "0-7-2", files: [], createdAt: "2026-01-01T00:00:00.000Z" });
  });

  it("writes a standard binlog file: magic, Format_description, Gtid_list, whole transactions at their own offsets", async () => {
    const storage = new MemoryStorage();
    const writer = await ArchiveWriter.open(storage, startAt(""));
    for (const t of captured) await writer.append(t, source);
    const entry = await writer.flush();
    const file = storage.objects.get("binlog.000001") as Buffer;
    expect(entry).toMatchObject({
      key: "binlog.000001",
      size: file.length,
      sha256: createHash("sha256").update(file).digest("hex"),
      startPosition: "",
      endPosition: "0-7-7",
      firstGtid: "0-7-1",
      lastGtid: "0-7-7",
      transactions: 7,
      serverId: 7,
      source: "db-0:3306",
      serverVersion: "10.11.19-MariaDB-0+deb12u1-log",
    });
    expect(entry?.firstEventTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const events = readBinlogFile(file);
    expect(events[0]?.header.type).toBe(EventType.FORMAT_DESCRIPTION);
    expect(events[1]?.header.type).toBe(EventType.GTID_LIST);
    let offset = 4;
    for (const e of events) {
      offset += e.raw.length;
      expect(e.header.logPos).toBe(offset);
      verifyChecksum(e);
    }
    // Read back, the file gives the same transactions.
    const again = new TransactionAssembler();
    const back = events.flatMap((e) => {
      const item = again.push(e);
      return item.kind === "transaction" ? [formatGtid(item.transaction.gtid)] : [];
    });
    expect(back).toEqual(captured.map((t) => formatGtid(t.gtid)));
    expect(storage.index()).toMatchObject({ position: "0-7-7", files: [entry] });
  });

  it("refuses a gap and a duplicate, writing nothing of them", async () => {
    const storage = new MemoryStorage();
    const writer = await ArchiveWriter.open(storage, startAt("0-7-10"));
    await writer.append(tx(11), source);
    await expect(writer.append(tx(13), source)).rejects.toMatchObject({ reason: "GtidGap" });
    await expect(writer.append(tx(13), source)).rejects.toThrow(/0-7-13 after 0-7-11; sequence number 12 is missing/);
    await expect(writer.append(tx(11, undefined, 8), source)).rejects.toMatchObject({ reason: "GtidDuplicate" });
    await writer.append(tx(12), source);
    const entry = await writer.flush();
    expect(entry).toMatchObject({ firstGtid: "0-7-11", lastGtid: "0-7-12", transactions: 2, endPosition: "0-7-12" });
  });

  it("rotates by size, never inside a transaction, and chains the files' positions", async () => {
    const storage = new MemoryStorage();
    const writer = await ArchiveWriter.open(storage, startAt("0-7-0"), { maxFileBytes: 600 });
    for (let seq = 1; seq <= 10; seq++) await writer.append(tx(seq), source);
    await writer.flush();
    const index = storage.index();
    expect(index.files.length).toBeGreaterThan(2);
    expect(index.files[0]?.startPosition).toBe("0-7-0");
    for (const [i, f] of index.files.entries()) {
      if (i > 0) expect(f.startPosition).toBe(index.files[i - 1]?.endPosition);
      const events = readBinlogFile(storage.objects.get(f.key) as Buffer);
      // The Gtid_list names the state before the file.
      expect(parseGtidList(events[1] as BinlogEvent, true).map(formatGtid).join(",")).toBe(f.startPosition);
      expect(events.at(-1)?.header.type).toBe(EventType.XID);
    }
    expect(index.position).toBe("0-7-10");
  });

  it("rotates by age", async () => {
    let now = 1_000_000;
    const storage = new MemoryStorage();
    const writer = await ArchiveWriter.open(storage, startAt("0-7-0"), { maxFileAgeMs: 60_000, now: () => now });
    await writer.append(tx(1), source);
    expect(writer.dueAt).toBe(now + 60_000);
    now += 59_999;
    await writer.rotateIfDue();
    expect(storage.index().files).toHaveLength(0);
    expect(writer.oldestPendingTimestamp).toBe(captured[2]?.firstTimestamp);
    now += 1;
    await writer.rotateIfDue();
    expect(storage.index().files).toHaveLength(1);
    expect(writer.oldestPendingTimestamp).toBeUndefined();
  });

  it("records that it is current on a heartbeat only while no received transaction waits for upload", async () => {
    let now = 1_000_000;
    const storage = new MemoryStorage();
    const writer = await ArchiveWriter.open(storage, startAt("0-7-0"), { maxFileAgeMs: 60_000, now: () => now });
    expect(await writer.markCurrent(1_000)).toBe(true);
    expect(storage.index().currentAt).toBe(new Date(999_000).toISOString());
    // A transaction received, not uploaded: the server's state is not all in S3, however many heartbeats come.
    now += 5_000;
    await writer.append(tx(1), source);
    now += 5_000;
    expect(await writer.markCurrent(1_000)).toBe(false);
    expect(storage.index().currentAt).toBe(new Date(999_000).toISOString());
    // Uploaded: the file's index keeps the earlier moment (still true), the next heartbeat moves it.
    await writer.flush();
    expect(storage.index().currentAt).toBe(new Date(999_000).toISOString());
    now += 5_000;
    expect(await writer.markCurrent(1_000)).toBe(true);
    expect(storage.index()).toMatchObject({ currentAt: new Date(1_014_000).toISOString(), position: "0-7-1" });
    expect(writer.index.currentAt).toBe(new Date(1_014_000).toISOString());
    // A reader older than currentAt: the index has nothing else new (same format version).
    expect(storage.index().formatVersion).toBe(1);
  });

  it("starts a new file when the source changes (a switchover)", async () => {
    const storage = new MemoryStorage();
    const writer = await ArchiveWriter.open(storage, startAt("0-7-0"));
    await writer.append(tx(1), source);
    await writer.append(tx(2, undefined, 8), { serverId: 8, endpoint: "db-1:3306" });
    await writer.flush();
    expect(storage.index().files.map((f) => [f.source, f.firstGtid, f.lastGtid])).toEqual([
      ["db-0:3306", "0-7-1", "0-7-1"],
      ["db-1:3306", "0-8-2", "0-8-2"],
    ]);
  });

  it("resumes from the index: nothing archived twice, numbering goes on", async () => {
    const storage = new MemoryStorage();
    const first = await ArchiveWriter.open(storage, startAt("0-7-0"));
    await first.append(tx(1), source);
    await first.flush();
    await first.append(tx(2), source);
    first.discard(); // the manager stopped before this file was uploaded
    const second = await ArchiveWriter.open(storage, () => Promise.reject(new Error("not asked when an index exists")));
    expect(second.archivedPosition.get(0)?.seq).toBe(1n);
    await expect(second.append(tx(1), source)).rejects.toMatchObject({ reason: "GtidDuplicate" });
    await second.append(tx(2), source);
    await second.flush();
    expect(storage.index().files.map((f) => f.key)).toEqual(["binlog.000001", "binlog.000002"]);
  });

  it("keeps the archived position when an upload fails, so the stream resumes from S3's state", async () => {
    const storage = new MemoryStorage();
    const writer = await ArchiveWriter.open(storage, startAt("0-7-0"));
    await writer.append(tx(1), source);
    storage.failPuts = 1;
    await expect(writer.flush()).rejects.toMatchObject({ reason: "StorageUnreachable" });
    expect(writer.archivedPosition.get(0)?.seq).toBe(0n);
    expect(writer.position.get(0)?.seq).toBe(0n);
    await writer.append(tx(1), source);
    await writer.flush();
    expect(storage.index().files).toHaveLength(1);
  });
});

describe("a stopped ArchiveWriter", () => {
  it("stores nothing more once its signal aborted: neither the file nor the index", async () => {
    const storage = new MemoryStorage();
    const stop = new AbortController();
    const writer = await ArchiveWriter.open(storage, startAt("0-7-0"), { signal: stop.signal });
    await writer.append(tx(1), source);
    stop.abort(new Error("this manager lost leadership"));
    await expect(writer.flush()).rejects.toThrow("this manager lost leadership");
    expect([...storage.objects.keys()]).toEqual([archiveIndexFileName]);
    expect(storage.index().files).toEqual([]);
  });
});

describe("the archive index", () => {
  it("refuses files that do not chain, and a newer format", async () => {
    const storage = new MemoryStorage();
    const writer = await ArchiveWriter.open(storage, startAt("0-7-0"));
    await writer.append(tx(1), source);
    await writer.flush();
    const index = storage.index();
    const broken = { ...index, files: [{ ...index.files[0], startPosition: "0-7-5" }] };
    expect(() => parseArchiveIndex(Buffer.from(JSON.stringify(broken)))).toThrow(/binlog.000001 starts at 0-7-5, but the archive before it ends at 0-7-0/);
    expect(() => parseArchiveIndex(Buffer.from(JSON.stringify({ ...index, formatVersion: 2 })))).toThrow(/a newer Stateward wrote it/);
    expect(() => parseArchiveIndex(Buffer.from(JSON.stringify({ ...index, position: "0-7-9" })))).toThrow(/position 0-7-9 is not where the last file ends/);
  });
});

describe("ArchiveWriter.prune", () => {
  it("drops files from the front: the index without them first, then their objects; the archive starts where the first kept file does", async () => {
    const storage = new MemoryStorage();
    const writer = await ArchiveWriter.open(storage, startAt("0-7-0"));
    for (let seq = 1; seq <= 4; seq++) {
      await writer.append(tx(seq), source);
      await writer.flush();
    }
    const dropped = await writer.prune(2);
    expect(dropped.map((f) => f.key)).toEqual(["binlog.000001", "binlog.000002"]);
    // When the objects were deleted, the index no longer named them.
    expect(storage.deletes).toEqual([{ keys: ["binlog.000001", "binlog.000002"], indexed: ["binlog.000003", "binlog.000004"] }]);
    expect(storage.objects.has("binlog.000001")).toBe(false);
    expect(storage.index()).toMatchObject({ startPosition: "0-7-2", position: "0-7-4" });
    expect(writer.index.startPosition).toBe("0-7-2");
    // The newest file stays, and the numbering goes on.
    expect((await writer.prune(10)).map((f) => f.key)).toEqual(["binlog.000003"]);
    await writer.append(tx(5), source);
    expect((await writer.flush())?.key).toBe("binlog.000005");
    expect(storage.index().files.map((f) => f.key)).toEqual(["binlog.000004", "binlog.000005"]);
  });

  it("deletes nothing when the index cannot be written", async () => {
    const storage = new MemoryStorage();
    const writer = await ArchiveWriter.open(storage, startAt("0-7-0"));
    for (let seq = 1; seq <= 3; seq++) {
      await writer.append(tx(seq), source);
      await writer.flush();
    }
    storage.failPuts = 1;
    await expect(writer.prune(1)).rejects.toMatchObject({ reason: "StorageUnreachable" });
    expect(storage.deletes).toEqual([]);
    expect(writer.index.files).toHaveLength(3);
    expect(storage.index().files).toHaveLength(3);
  });
});
