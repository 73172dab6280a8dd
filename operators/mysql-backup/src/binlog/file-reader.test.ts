import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { capturedStream } from "./captured-stream.ts";
import { BINLOG_MAGIC, HEADER_LENGTH, readBinlogFile, toEvent, type BinlogEvent } from "./events.ts";
import { readBinlogFileBatches } from "./file-reader.ts";

const dir = mkdtempSync(join(tmpdir(), "binlog-reader-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fileOf = (bytes: Buffer): string => {
  const path = join(dir, `f${++n}`);
  writeFileSync(path, bytes);
  return path;
};
async function readAll(path: string, readBytes?: number): Promise<{ events: BinlogEvent[]; batches: number }> {
  const events: BinlogEvent[] = [];
  let batches = 0;
  for await (const batch of readBinlogFileBatches(path, readBytes)) {
    batches++;
    events.push(...batch);
  }
  return { events, batches };
}

// A real stream's events (the first is the artificial Rotate a dump starts with), repeated to span many reads.
const raws = capturedStream.slice(1).map((hex) => Buffer.from(hex, "hex"));
const file = Buffer.concat([BINLOG_MAGIC, ...raws, ...raws, ...raws]);

describe("readBinlogFileBatches", () => {
  it("yields the events readBinlogFile finds, whatever the read size (events cut across reads, larger than a read)", async () => {
    const path = fileOf(file);
    const expected = readBinlogFile(file).map((e) => e.raw.toString("hex"));
    for (const readBytes of [1, 7, HEADER_LENGTH, 100, 4096, 1 << 20]) {
      const { events, batches } = await readAll(path, readBytes);
      expect(events.map((e) => e.raw.toString("hex"))).toEqual(expected);
      expect(events.map((e) => e.header)).toEqual(readBinlogFile(file).map((e) => e.header));
      if (readBytes === 100) expect(batches).toBeGreaterThan(1);
    }
  });

  it("refuses what readBinlogFile refuses: not a binlog, a file cut inside an event or its header", async () => {
    await expect(readAll(fileOf(Buffer.from("hello")))).rejects.toThrow(/does not start with/);
    await expect(readAll(fileOf(Buffer.from("he")))).rejects.toThrow(/does not start with/);
    await expect(readAll(fileOf(file.subarray(0, file.length - 3)), 64)).rejects.toThrow(/past the end of the file/);
    const first = toEvent(raws[0] as Buffer);
    await expect(readAll(fileOf(Buffer.concat([BINLOG_MAGIC, first.raw, first.raw.subarray(0, 10)])))).rejects.toThrow(/ends inside an event header/);
    expect(await readAll(fileOf(BINLOG_MAGIC))).toEqual({ events: [], batches: 0 });
  });
});
