// From a dump's stream of events to whole transactions (MariaDB event groups:
// a GTID event, the events of the transaction, its end). Only whole groups
// come out, so an archive never holds half a transaction; what a broken
// connection leaves open is dropped by reset() and sent again on reconnect.
import { type Gtid, formatGtid } from "./gtid.ts";
import {
  ARTIFICIAL_FLAG,
  BinlogFormatError,
  EventType,
  endsGroup,
  parseFormatDescription,
  parseGtidEvent,
  parseRotate,
  sameFormat,
  verifyChecksum,
  type BinlogEvent,
  type FormatDescription,
} from "./events.ts";

/** One event group: what one GTID names. */
export interface Transaction {
  gtid: Gtid;
  /** The GTID event's flags (GtidFlag). */
  flags: number;
  /** Every event, the GTID event first, as the server sent them. */
  events: BinlogEvent[];
  /** Bytes of all its events. */
  bytes: number;
  /** Header timestamps (seconds) of its first and last events. */
  firstTimestamp: number;
  lastTimestamp: number;
  /** The format its events are in. */
  format: FormatDescription;
}

/** What one event of the stream means to the archiver. */
export type StreamItem =
  /** A Format_description different from the previous one (a new server, version or checksum setting). */
  | { kind: "format"; format: FormatDescription }
  /** The server moved on to another binlog file (informational). */
  | { kind: "rotate"; file: string }
  | { kind: "transaction"; transaction: Transaction }
  /** The server's keep-alive: nothing to archive, but the connection lives. */
  | { kind: "heartbeat"; timestamp: number }
  /** An event inside a group, or one the archive has no use for. */
  | { kind: "none" };

/** Events between groups that carry nothing to archive. */
const CONTROL_EVENTS = new Set<number>([EventType.STOP, EventType.GTID_LIST, EventType.BINLOG_CHECKPOINT, EventType.START_ENCRYPTION]);

interface OpenGroup {
  gtid: Gtid;
  flags: number;
  events: BinlogEvent[];
  bytes: number;
}

export class TransactionAssembler {
  private format: FormatDescription | undefined;
  private open: OpenGroup | undefined;

  /** The current format, once the stream sent one. */
  get currentFormat(): FormatDescription | undefined {
    return this.format;
  }

  /** Forgets a group left open (the connection broke in the middle of it). */
  reset(): void {
    this.open = undefined;
  }

  /** @throws BinlogFormatError for a stream that breaks the group structure or a checksum. */
  push(event: BinlogEvent): StreamItem {
    const { type } = event.header;
    if (type === EventType.HEARTBEAT) return { kind: "heartbeat", timestamp: event.header.timestamp };
    if (type === EventType.FORMAT_DESCRIPTION) {
      if (this.open) throw new BinlogFormatError(`a Format_description arrived inside transaction ${formatGtid(this.open.gtid)}`);
      const format = parseFormatDescription(event);
      const changed = !this.format || !sameFormat(this.format, format);
      this.format = format;
      return changed ? { kind: "format", format } : { kind: "none" };
    }
    if (type === EventType.ROTATE) {
      // The first, artificial Rotate of a dump comes before any format: its checksum is unknown.
      const checksum = this.format?.checksum ?? false;
      if (this.format && checksum && !(event.header.flags & ARTIFICIAL_FLAG)) verifyChecksum(event);
      return { kind: "rotate", file: parseRotate(event, checksum && !(event.header.flags & ARTIFICIAL_FLAG)).file };
    }
    const format = this.format;
    if (!format) throw new BinlogFormatError(`event type ${type} arrived before any Format_description`);
    if (format.checksum) verifyChecksum(event);
    if (type === EventType.MYSQL_GTID) {
      throw new BinlogFormatError("the server sent a MySQL GTID event: archiving a MySQL server's binary log is not supported yet (MariaDB only)");
    }
    if (type === EventType.GTID) {
      if (this.open) throw new BinlogFormatError(`transaction ${formatGtid(this.open.gtid)} has no end: the next GTID event arrived inside it`);
      const { gtid, flags } = parseGtidEvent(event);
      this.open = { gtid, flags, events: [event], bytes: event.raw.length };
      return { kind: "none" };
    }
    const open = this.open;
    if (!open) {
      if (CONTROL_EVENTS.has(type)) return { kind: "none" };
      if (type === EventType.INCIDENT) {
        throw new BinlogFormatError("the server's binary log has an Incident event: the server may have lost events there, so the archive cannot continue without a gap");
      }
      throw new BinlogFormatError(`event type ${type} arrived outside any transaction (no GTID event before it)`);
    }
    open.events.push(event);
    open.bytes += event.raw.length;
    if (!endsGroup(event, open.flags, format)) return { kind: "none" };
    this.open = undefined;
    const first = open.events[0] as BinlogEvent;
    return {
      kind: "transaction",
      transaction: {
        gtid: open.gtid,
        flags: open.flags,
        events: open.events,
        bytes: open.bytes,
        firstTimestamp: first.header.timestamp,
        lastTimestamp: event.header.timestamp,
        format,
      },
    };
  }
}
