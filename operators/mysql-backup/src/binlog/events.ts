// The binary-log events the archiver has to understand, parsed from their raw
// bytes (binlog format v4, as MariaDB 10+/11 writes it), and the few events it
// writes itself. Only what archiving needs is read: the common header, the
// Format_description (checksum algorithm, header lengths), GTID and Gtid_list
// events (MariaDB's), Rotate, and the text of Query events (to see a COMMIT).
// Every other event is carried as opaque bytes.
//
// Layouts: https://mariadb.com/kb/en/replication-protocol/ ("Binlog Event
// Header", "Format Description Event", "GTID Event", "Gtid List Event").
import { crc32 } from "node:zlib";
import { type Gtid } from "./gtid.ts";

/** The event types this package looks at (MariaDB's numbering; MySQL shares those below 35). */
export const EventType = {
  QUERY: 2,
  STOP: 3,
  ROTATE: 4,
  INTVAR: 5,
  RAND: 13,
  USER_VAR: 14,
  FORMAT_DESCRIPTION: 15,
  XID: 16,
  TABLE_MAP: 19,
  INCIDENT: 26,
  HEARTBEAT: 27,
  /** MySQL's GTID event: a MySQL server, which the archiver does not support yet. */
  MYSQL_GTID: 33,
  XA_PREPARE: 38,
  ANNOTATE_ROWS: 160,
  BINLOG_CHECKPOINT: 161,
  GTID: 162,
  GTID_LIST: 163,
  START_ENCRYPTION: 164,
  QUERY_COMPRESSED: 165,
} as const;

/** Rows events (v1, v2, MariaDB's compressed ones) and MariaDB 11's row fragments. */
export const ROWS_EVENTS: ReadonlySet<number> = new Set([23, 24, 25, 30, 31, 32, 166, 167, 168, 169, 170, 171, 172]);

/** The 19-byte common header of every v4 event. */
export const HEADER_LENGTH = 19;
/** Bytes of a CRC32 checksum at the end of an event, when the server writes checksums. */
export const CHECKSUM_LENGTH = 4;
/** Every binary-log file starts with these four bytes. */
export const BINLOG_MAGIC = Buffer.from([0xfe, 0x62, 0x69, 0x6e]);

/** The header flag of an event the server made up for the stream (not in any binlog file). */
export const ARTIFICIAL_FLAG = 0x20;
/** The Format_description flag of a binlog file still being written. */
const BINLOG_IN_USE_FLAG = 0x01;

/** MariaDB GTID event flags (flags2). */
export const GtidFlag = {
  /** The group has no terminating COMMIT: it is one statement (DDL, or a non-transactional write). */
  STANDALONE: 0x01,
  GROUP_COMMIT_ID: 0x02,
  TRANSACTIONAL: 0x04,
  PREPARED_XA: 0x40,
  COMPLETED_XA: 0x80,
} as const;

export interface EventHeader {
  /** Seconds since the epoch, when the statement started on the server that wrote it first. */
  timestamp: number;
  type: number;
  /** The server_id of the server that wrote the event first (it travels with the event through replicas). */
  serverId: number;
  /** The whole event's length, header and checksum included. */
  length: number;
  /** Position just after the event in the binlog file it came from (0 for some artificial events). */
  logPos: number;
  flags: number;
}

/** One event: its header and every byte of it (header, body, checksum). */
export interface BinlogEvent {
  header: EventHeader;
  raw: Buffer;
}

/** A stream or file that is not what it claims: the parse failed at `what`. */
export class BinlogFormatError extends Error {
  override name = "BinlogFormatError";
}

export function parseHeader(raw: Buffer): EventHeader {
  if (raw.length < HEADER_LENGTH) throw new BinlogFormatError(`a binlog event of ${raw.length} bytes is shorter than its ${HEADER_LENGTH}-byte header`);
  const header = {
    timestamp: raw.readUInt32LE(0),
    type: raw.readUInt8(4),
    serverId: raw.readUInt32LE(5),
    length: raw.readUInt32LE(9),
    logPos: raw.readUInt32LE(13),
    flags: raw.readUInt16LE(17),
  };
  if (header.length !== raw.length) {
    throw new BinlogFormatError(`a binlog event of type ${header.type} says it has ${header.length} bytes but ${raw.length} arrived`);
  }
  return header;
}

export function toEvent(raw: Buffer): BinlogEvent {
  return { header: parseHeader(raw), raw };
}

/** What a Format_description event says about the events after it. */
export interface FormatDescription {
  binlogVersion: number;
  serverVersion: string;
  /** Whether each event ends with a CRC32 of the bytes before it. */
  checksum: boolean;
  /** Post-header length of each event type (index = type − 1). */
  postHeaderLengths: Buffer;
  /** The event as the server sent it. */
  event: BinlogEvent;
}

// The fixed part of a Format_description body: binlog version (2), server
// version (50), create timestamp (4), header length (1).
const FDE_FIXED = 2 + 50 + 4 + 1;
const FDE_CREATED_OFFSET = HEADER_LENGTH + 2 + 50;
// A Format_description always ends with the checksum algorithm (1 byte) and
// room for a checksum (4 bytes), whatever the algorithm: that is how a reader
// finds the algorithm before knowing whether events carry checksums.
const FDE_TRAILER = 1 + CHECKSUM_LENGTH;

const CHECKSUM_OFF = 0;
const CHECKSUM_CRC32 = 1;

export function parseFormatDescription(event: BinlogEvent): FormatDescription {
  const { raw, header } = event;
  if (header.type !== EventType.FORMAT_DESCRIPTION) throw new BinlogFormatError(`event type ${header.type} is not a Format_description`);
  if (raw.length < HEADER_LENGTH + FDE_FIXED + FDE_TRAILER) throw new BinlogFormatError(`a Format_description event of ${raw.length} bytes is too short`);
  const binlogVersion = raw.readUInt16LE(HEADER_LENGTH);
  if (binlogVersion !== 4) throw new BinlogFormatError(`binlog format version ${binlogVersion} is not supported (only v4, MySQL 5.0+ and MariaDB)`);
  const serverVersion = raw.subarray(HEADER_LENGTH + 2, HEADER_LENGTH + 52).toString("latin1").replace(/\0.*$/s, "");
  const headerLength = raw.readUInt8(HEADER_LENGTH + 56);
  if (headerLength !== HEADER_LENGTH) throw new BinlogFormatError(`events with a ${headerLength}-byte header are not supported (v4 has ${HEADER_LENGTH})`);
  const alg = raw.readUInt8(raw.length - FDE_TRAILER);
  if (alg !== CHECKSUM_OFF && alg !== CHECKSUM_CRC32) throw new BinlogFormatError(`binlog checksum algorithm ${alg} is not supported (NONE or CRC32)`);
  const checksum = alg === CHECKSUM_CRC32;
  if (checksum) verifyChecksum(event);
  return {
    binlogVersion,
    serverVersion,
    checksum,
    postHeaderLengths: Buffer.from(raw.subarray(HEADER_LENGTH + FDE_FIXED, raw.length - FDE_TRAILER)),
    event,
  };
}

/** Two Format_descriptions describe events alike (same server version, checksum and layout). */
export function sameFormat(a: FormatDescription, b: FormatDescription): boolean {
  return a.serverVersion === b.serverVersion && a.checksum === b.checksum && a.postHeaderLengths.equals(b.postHeaderLengths);
}

/** The length of an event's body, without header and checksum. */
function bodyEnd(raw: Buffer, checksum: boolean): number {
  return raw.length - (checksum ? CHECKSUM_LENGTH : 0);
}

/** @throws BinlogFormatError when the event's CRC32 does not match its bytes. */
export function verifyChecksum(event: BinlogEvent): void {
  const { raw } = event;
  const stored = raw.readUInt32LE(raw.length - CHECKSUM_LENGTH);
  const computed = crc32(raw.subarray(0, raw.length - CHECKSUM_LENGTH));
  if (stored !== computed) {
    throw new BinlogFormatError(
      `checksum mismatch in a binlog event of type ${event.header.type} at end position ${event.header.logPos}: stored ${stored.toString(16)}, computed ${computed.toString(16)}`,
    );
  }
}

/** A MariaDB GTID event: the start of an event group (a transaction, or one standalone statement). */
export interface GtidEvent {
  gtid: Gtid;
  flags: number;
}

export function parseGtidEvent(event: BinlogEvent): GtidEvent {
  const { raw, header } = event;
  if (header.type !== EventType.GTID) throw new BinlogFormatError(`event type ${header.type} is not a MariaDB GTID event`);
  if (raw.length < HEADER_LENGTH + 13) throw new BinlogFormatError(`a GTID event of ${raw.length} bytes is too short`);
  const seq = raw.readBigUInt64LE(HEADER_LENGTH);
  const domain = raw.readUInt32LE(HEADER_LENGTH + 8);
  const flags = raw.readUInt8(HEADER_LENGTH + 12);
  return { gtid: { domain, server: header.serverId, seq }, flags };
}

/** A Gtid_list event: the GTID state (last GTID per domain and server) before a binlog file. */
export function parseGtidList(event: BinlogEvent, checksum: boolean): Gtid[] {
  const { raw, header } = event;
  if (header.type !== EventType.GTID_LIST) throw new BinlogFormatError(`event type ${header.type} is not a Gtid_list event`);
  const end = bodyEnd(raw, checksum);
  // The top 4 bits of the count are flags.
  const count = raw.readUInt32LE(HEADER_LENGTH) & 0x0fff_ffff;
  if (HEADER_LENGTH + 4 + count * 16 > end) throw new BinlogFormatError(`a Gtid_list event of ${raw.length} bytes cannot hold ${count} GTIDs`);
  const list: Gtid[] = [];
  for (let i = 0, at = HEADER_LENGTH + 4; i < count; i++, at += 16) {
    list.push({ domain: raw.readUInt32LE(at), server: raw.readUInt32LE(at + 4), seq: raw.readBigUInt64LE(at + 8) });
  }
  return list;
}

/** A Rotate event: the binlog file the following events come from. */
export function parseRotate(event: BinlogEvent, checksum: boolean): { position: bigint; file: string } {
  const { raw, header } = event;
  if (header.type !== EventType.ROTATE) throw new BinlogFormatError(`event type ${header.type} is not a Rotate event`);
  const end = bodyEnd(raw, checksum);
  if (end < HEADER_LENGTH + 8) throw new BinlogFormatError(`a Rotate event of ${raw.length} bytes is too short`);
  return { position: raw.readBigUInt64LE(HEADER_LENGTH), file: raw.subarray(HEADER_LENGTH + 8, end).toString("utf8") };
}

// Query event post-header: thread id (4), execution time (4), database name
// length (1), error code (2), status variables length (2).
export const QUERY_POST_HEADER = 13;

/** The statement text of a Query event (not of a compressed one). */
export function queryText(event: BinlogEvent, format: FormatDescription): string {
  const { raw } = event;
  const postHeader = format.postHeaderLengths[EventType.QUERY - 1] ?? QUERY_POST_HEADER;
  if (raw.length < HEADER_LENGTH + postHeader) throw new BinlogFormatError(`a Query event of ${raw.length} bytes is too short`);
  const dbLength = raw.readUInt8(HEADER_LENGTH + 8);
  const statusLength = raw.readUInt16LE(HEADER_LENGTH + 11);
  const start = HEADER_LENGTH + postHeader + statusLength + dbLength + 1;
  const end = bodyEnd(raw, format.checksum);
  if (start > end) throw new BinlogFormatError(`a Query event of ${raw.length} bytes is too short for its database name and status`);
  return raw.subarray(start, end).toString("utf8");
}

/** Events that may come before the statement of a standalone group and never end one. */
function isGroupPrefix(type: number): boolean {
  return (
    type === EventType.ANNOTATE_ROWS ||
    type === EventType.INTVAR ||
    type === EventType.RAND ||
    type === EventType.USER_VAR ||
    type === EventType.TABLE_MAP ||
    ROWS_EVENTS.has(type)
  );
}

/**
 * Whether `event` ends the group its GTID event (with `gtidFlags`) opened,
 * as the server's own replica decides it: a standalone group ends at its
 * first statement; a transaction at its XID, its XA PREPARE, or a Query
 * COMMIT/ROLLBACK (non-transactional engines, XA COMMIT/ROLLBACK).
 */
export function endsGroup(event: BinlogEvent, gtidFlags: number, format: FormatDescription): boolean {
  const type = event.header.type;
  if (gtidFlags & GtidFlag.STANDALONE) return !isGroupPrefix(type);
  if (type === EventType.XID || type === EventType.XA_PREPARE) return true;
  if (type !== EventType.QUERY) return false;
  const text = queryText(event, format).trimStart().toUpperCase();
  return text.startsWith("COMMIT") || text.startsWith("ROLLBACK") || text.startsWith("XA COMMIT") || text.startsWith("XA ROLLBACK");
}

/** Sets the CRC32 of an event (in place) from its bytes. */
export function writeChecksum(raw: Buffer): void {
  raw.writeUInt32LE(crc32(raw.subarray(0, raw.length - CHECKSUM_LENGTH)), raw.length - CHECKSUM_LENGTH);
}

/**
 * A copy of `event` as it sits at `offset` in a file of our own: its header's
 * log position becomes the offset just after it (what the server's own binlog
 * files say), and its checksum is recomputed to match.
 */
export function relocate(event: BinlogEvent, offset: number, checksum: boolean): Buffer {
  const copy = Buffer.from(event.raw);
  copy.writeUInt32LE(offset + copy.length, 13);
  if (checksum) writeChecksum(copy);
  return copy;
}

/**
 * The Format_description that opens an archived file: the server's own, with
 * what only a live file says cleared — the "in use" flag (mariadb-binlog would
 * warn the file was not closed properly) and the creation time (a non-zero one
 * tells a replica the server restarted, and it would drop its temporary tables).
 */
export function archiveFormatDescription(format: FormatDescription, offset: number): Buffer {
  const copy = Buffer.from(format.event.raw);
  copy.writeUInt16LE(format.event.header.flags & ~BINLOG_IN_USE_FLAG & ~ARTIFICIAL_FLAG, 17);
  copy.writeUInt32LE(0, FDE_CREATED_OFFSET);
  copy.writeUInt32LE(offset + copy.length, 13);
  if (format.checksum) writeChecksum(copy);
  return copy;
}

/**
 * A Gtid_list event (as the server writes after the Format_description of
 * each binlog file) naming the GTID state before the file's first transaction,
 * so `mariadb-binlog` and a server reading the file know where it starts.
 */
export function gtidListEvent(list: readonly Gtid[], options: { timestamp: number; serverId: number; offset: number; checksum: boolean }): Buffer {
  const length = HEADER_LENGTH + 4 + list.length * 16 + (options.checksum ? CHECKSUM_LENGTH : 0);
  const raw = Buffer.alloc(length);
  raw.writeUInt32LE(options.timestamp, 0);
  raw.writeUInt8(EventType.GTID_LIST, 4);
  raw.writeUInt32LE(options.serverId, 5);
  raw.writeUInt32LE(length, 9);
  raw.writeUInt32LE(options.offset + length, 13);
  raw.writeUInt16LE(0, 17);
  raw.writeUInt32LE(list.length, HEADER_LENGTH);
  list.forEach((g, i) => {
    const at = HEADER_LENGTH + 4 + i * 16;
    raw.writeUInt32LE(g.domain, at);
    raw.writeUInt32LE(g.server, at + 4);
    raw.writeBigUInt64LE(g.seq, at + 8);
  });
  if (options.checksum) writeChecksum(raw);
  return raw;
}

/**
 * The events of a binlog file (after its magic number), each checked for its
 * length; for reading an archived file back (a restore, a test).
 * @throws BinlogFormatError for bytes that are not a whole binlog file.
 */
export function readBinlogFile(file: Buffer): BinlogEvent[] {
  if (file.length < BINLOG_MAGIC.length || !file.subarray(0, BINLOG_MAGIC.length).equals(BINLOG_MAGIC)) {
    throw new BinlogFormatError("not a binlog file: it does not start with \\xfebin");
  }
  const events: BinlogEvent[] = [];
  let at = BINLOG_MAGIC.length;
  while (at < file.length) {
    if (file.length - at < HEADER_LENGTH) throw new BinlogFormatError(`the binlog file ends inside an event header at offset ${at}`);
    const length = file.readUInt32LE(at + 9);
    if (length < HEADER_LENGTH || at + length > file.length) throw new BinlogFormatError(`the event at offset ${at} claims ${length} bytes, past the end of the file`);
    events.push(toEvent(file.subarray(at, at + length)));
    at += length;
  }
  return events;
}
