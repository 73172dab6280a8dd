// COM_BINLOG_DUMP as a mysql2 command that hands out every event's raw bytes.
// mysql2's own BinlogDump parses four event types and drops the bytes, which
// an archive needs exactly. A mysql2 connection runs one command at a time
// from its queue (addCommand) and calls the command's execute(packet,
// connection) with each packet until it returns true; the shape below is what
// that loop uses (lib/base/connection.js, lib/commands/command.js of 3.x),
// without importing mysql2's internals, which its package exports hide.
//
// Protocol: https://mariadb.com/kb/en/com_binlog_dump/ — after the command,
// the server sends one packet per event (a 0x00 byte, then the event), an ERR
// packet when it cannot go on, or EOF (only with the non-blocking flag, which
// is not used: the dump waits for new events for ever).

/** A packet as mysql2 hands it to a command: the payload is buffer[offset, end). */
export interface DumpPacket {
  buffer: Buffer;
  offset: number;
  end: number;
  isError(): boolean;
  isEOF(): boolean;
  asError(encoding?: string): Error;
}

/** The parts of a mysql2 connection a command uses. */
export interface DumpConnection {
  _resetSequenceId(): void;
  writePacket(packet: { buffer: Buffer; length(): number; writeHeader(sequenceId: number): void }): void;
  clientEncoding?: string;
}

/** Where the command delivers what the server sends. */
export interface DumpSink {
  /** One event's bytes (a copy: mysql2 reuses its packet buffer). */
  event(raw: Buffer): void;
  /** The server ended the stream (EOF). */
  end(): void;
  /** An ERR packet from the server, or the connection failed. */
  fail(err: Error): void;
}

const COM_BINLOG_DUMP = 0x12;
/** Asks MariaDB to send Annotate_rows events (the statement text of row events), so mariadb-binlog shows them. */
export const BINLOG_SEND_ANNOTATE_ROWS_EVENT = 0x02;

/** The COM_BINLOG_DUMP payload: position (4), flags (2), server id (4), file name (rest). */
export function binlogDumpPayload(options: { position: number; flags: number; serverId: number; file: string }): Buffer {
  const name = Buffer.from(options.file, "utf8");
  const payload = Buffer.alloc(1 + 4 + 2 + 4 + name.length);
  payload.writeUInt8(COM_BINLOG_DUMP, 0);
  payload.writeUInt32LE(options.position, 1);
  payload.writeUInt16LE(options.flags, 5);
  payload.writeUInt32LE(options.serverId, 7);
  name.copy(payload, 11);
  return payload;
}

/** A packet to send: mysql2 writes the 4-byte header (length, sequence id) itself. */
function outgoing(payload: Buffer) {
  const buffer = Buffer.alloc(4 + payload.length);
  payload.copy(buffer, 4);
  return {
    buffer,
    length: () => buffer.length,
    writeHeader(sequenceId: number): void {
      buffer.writeUIntLE(payload.length, 0, 3);
      buffer.writeUInt8(sequenceId & 0xff, 3);
    },
  };
}

export class BinlogDumpCommand {
  private started = false;
  private finished = false;

  private readonly payload: Buffer;
  private readonly sink: DumpSink;

  constructor(payload: Buffer, sink: DumpSink) {
    this.payload = payload;
    this.sink = sink;
  }

  /** mysql2 calls this when the connection fails while the command runs (and then drops the command). */
  onResult(err: Error | null): void {
    if (err) this.finish(() => this.sink.fail(err));
  }

  /** mysql2's command loop: true when the command is done. */
  execute(packet: DumpPacket | undefined, connection: DumpConnection): boolean {
    if (!this.started) {
      this.started = true;
      connection._resetSequenceId();
      connection.writePacket(outgoing(this.payload));
      return false;
    }
    if (!packet) return false;
    if (packet.isError()) {
      const err = packet.asError(connection.clientEncoding);
      this.finish(() => this.sink.fail(err));
      return true;
    }
    if (packet.isEOF()) {
      this.finish(() => this.sink.end());
      return true;
    }
    const marker = packet.buffer[packet.offset];
    if (marker !== 0x00) {
      this.finish(() => this.sink.fail(new Error(`the binlog dump sent a packet starting with 0x${(marker ?? 0).toString(16)}, not an event (0x00)`)));
      return true;
    }
    this.sink.event(Buffer.from(packet.buffer.subarray(packet.offset + 1, packet.end)));
    return false;
  }

  private finish(report: () => void): void {
    if (this.finished) return;
    this.finished = true;
    report();
  }
}
