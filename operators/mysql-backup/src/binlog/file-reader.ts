// An archived binlog file read from disk a piece at a time, for the replay:
// a file is up to the archiver's rotation size (tens of MB), and its events
// as objects (a header and a Buffer view each, ~5 per transaction) weigh
// several times its bytes on the JS heap — whole files read with
// readBinlogFile made a replay's memory grow with the file size (the manager
// runs in 512 MiB). Events come in batches, one per read: an await per event
// would cost more than the parsing.
import { open } from "node:fs/promises";
import { BINLOG_MAGIC, BinlogFormatError, HEADER_LENGTH, toEvent, type BinlogEvent } from "./events.ts";

/** Bytes per read: a few thousand events, a batch well below the heap's concern. */
export const defaultReadBytes = 1024 * 1024;

/**
 * The events of the binlog file at `path`, in order, in batches. An event is
 * a view of the read it came from: a batch's memory lives as long as any of
 * its events is kept. An event larger than `readBytes` is read whole.
 * @throws BinlogFormatError as readBinlogFile does (not a binlog file; ends inside an event).
 */
export async function* readBinlogFileBatches(path: string, readBytes = defaultReadBytes): AsyncGenerator<BinlogEvent[]> {
  const handle = await open(path, "r");
  try {
    const size = (await handle.stat()).size;
    // Bytes read but not yet a whole event, and where in the file they start.
    let rest = Buffer.alloc(0);
    let offset = 0;
    let magicChecked = false;
    for (;;) {
      const claimed = rest.length >= HEADER_LENGTH ? rest.readUInt32LE(9) : 0;
      const want = Math.max(readBytes, claimed - rest.length);
      const data = Buffer.allocUnsafe(rest.length + want);
      rest.copy(data, 0);
      const { bytesRead } = await handle.read(data, rest.length, want, null);
      const end = rest.length + bytesRead;
      let at = 0;
      if (!magicChecked) {
        if (end < BINLOG_MAGIC.length && bytesRead > 0) {
          rest = data.subarray(0, end);
          continue;
        }
        if (end < BINLOG_MAGIC.length || !data.subarray(0, BINLOG_MAGIC.length).equals(BINLOG_MAGIC)) throw new BinlogFormatError("not a binlog file: it does not start with \\xfebin");
        magicChecked = true;
        at = BINLOG_MAGIC.length;
      }
      const events: BinlogEvent[] = [];
      while (end - at >= HEADER_LENGTH) {
        const length = data.readUInt32LE(at + 9);
        if (length < HEADER_LENGTH) throw new BinlogFormatError(`the event at offset ${offset + at} claims ${length} bytes, past the end of the file`);
        if (offset + at + length > size) throw new BinlogFormatError(`the event at offset ${offset + at} claims ${length} bytes, past the end of the file`);
        if (at + length > end) break;
        events.push(toEvent(data.subarray(at, at + length)));
        at += length;
      }
      if (events.length > 0) yield events;
      if (bytesRead === 0) {
        if (end - at === 0) return;
        throw new BinlogFormatError(`the binlog file ends inside an event header at offset ${offset + at}`);
      }
      offset += at;
      rest = data.subarray(at, end);
    }
  } finally {
    await handle.close();
  }
}
