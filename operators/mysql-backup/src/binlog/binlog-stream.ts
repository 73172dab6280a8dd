// A MariaDB server's binary log, streamed as a replica receives it, from a GTID
// position on: one connection, the session variables MariaDB's GTID dump
// reads, COM_BINLOG_DUMP, and the events as they come, with backpressure (the
// socket is paused while too much waits unread) and a heartbeat watchdog.
import { flavorOf } from "@stateward/mysql";
import { messageOf } from "@stateward/core";
import { BackupError } from "../errors.ts";
import { mysqlFailure, MySQLSession, type MySQLConnectionOptions } from "../engine/connection.ts";
import { BINLOG_SEND_ANNOTATE_ROWS_EVENT, BinlogDumpCommand, binlogDumpPayload } from "./dump-command.ts";
import { BinlogFormatError, toEvent, type BinlogEvent } from "./events.ts";
import { formatPosition, parseGtid, parsePosition, type Gtid } from "./gtid.ts";

export interface BinlogStreamOptions {
  connection: MySQLConnectionOptions;
  /**
   * The server id this stream announces, as a replica's. It must differ from
   * every server's and replica's of the replication topology: a server drops
   * an older dump connection of the same id.
   */
  serverId: number;
  /** GTID position to continue after (`@slave_connect_state`); "" streams from the oldest binlog file. */
  position: string;
  /**
   * How often the server sends a heartbeat while it has nothing to send.
   * Defaults to 5 000 ms; a stream silent for three periods is treated as
   * broken (a half-open connection would otherwise wait for ever).
   */
  heartbeatMs?: number;
  signal?: AbortSignal;
}

/** What the server told about itself before the dump. */
export interface BinlogSource {
  /** host:port */
  endpoint: string;
  /** @@server_id */
  serverId: number;
  version: string;
}

export const defaultHeartbeatMs = 5_000;

// Above this much unread, the socket is paused; below a quarter of it, resumed.
const HIGH_WATER = 16 * 1024 * 1024;

/** What mysql2's Connection has beyond its typings. */
interface RawConnection {
  addCommand(command: unknown): unknown;
  pause(): void;
  resume(): void;
}

/**
 * What the server said about itself, checked: MariaDB (MySQL's
 * COM_BINLOG_DUMP_GTID is not implemented yet), binary log on.
 * @throws BackupError BinlogUnavailable naming what is missing.
 */
export function checkSource(endpoint: string, row: { version: string; serverId: string | number; logBin: string | number }): BinlogSource {
  const version = String(row.version);
  if (flavorOf(version) !== "MariaDB") {
    throw new BackupError(
      "BinlogUnavailable",
      `${endpoint} is a MySQL server (${version}): binlog archiving supports MariaDB only for now (MySQL's GTID dump, COM_BINLOG_DUMP_GTID, is not implemented)`,
    );
  }
  if (Number(row.logBin) !== 1) {
    throw new BackupError("BinlogUnavailable", `${endpoint} has its binary log off (log_bin): there is nothing to archive; start the server with --log-bin`);
  }
  return { endpoint, serverId: Number(row.serverId), version };
}

/**
 * Opens a session and checks the server can stream its binary log by GTID:
 * MariaDB (MySQL's COM_BINLOG_DUMP_GTID is not implemented yet), binary log on.
 * @throws BackupError BinlogUnavailable for a server that cannot, DatabaseUnreachable / DatabaseAccessDenied.
 */
async function openSource(connection: MySQLConnectionOptions): Promise<{ session: MySQLSession; source: BinlogSource }> {
  const session = await MySQLSession.open(connection);
  try {
    const [row] = await session.query<{ version: string; serverId: string | number; logBin: string | number }>(
      "SELECT VERSION() AS version, @@server_id AS serverId, @@log_bin AS logBin",
      [],
      "read the server's version and binary log settings",
    );
    return { session, source: checkSource(session.endpoint, row ?? { version: "", serverId: 0, logBin: 0 }) };
  } catch (err) {
    session.destroy();
    throw err;
  }
}

/** The @@server_id of the server `connection` reaches now (a Service's target changes with the primary). */
export async function serverIdAt(connection: MySQLConnectionOptions): Promise<number> {
  const session = await MySQLSession.open(connection);
  try {
    const [row] = await session.query<{ serverId: string | number }>("SELECT @@server_id AS serverId", [], "read the server id");
    return Number(row?.serverId);
  } finally {
    await session.close();
  }
}

/** The server's @@gtid_binlog_state: the last GTID of every (domain, server id) its binary log holds. */
export async function binlogStateAt(connection: MySQLConnectionOptions): Promise<Gtid[]> {
  const session = await MySQLSession.open(connection);
  try {
    const [row] = await session.query<{ state: string }>("SELECT @@GLOBAL.gtid_binlog_state AS state", [], "read the server's binlog GTID state");
    return String(row?.state ?? "")
      .replace(/\s+/g, "")
      .split(",")
      .filter((g) => g !== "")
      .map((g) => parseGtid(g));
  } finally {
    await session.close();
  }
}

/** The server's @@gtid_binlog_pos: where a new archive starts (its first transaction is the next one). */
export async function currentBinlogPosition(connection: MySQLConnectionOptions): Promise<string> {
  const { session } = await openSource(connection);
  try {
    const [row] = await session.query<{ pos: string }>("SELECT @@GLOBAL.gtid_binlog_pos AS pos", [], "read the server's GTID position");
    return formatPosition(parsePosition(String(row?.pos ?? "")));
  } finally {
    await session.close();
  }
}

export class BinlogStream implements AsyncIterable<BinlogEvent> {
  private readonly queue: Buffer[] = [];
  private queuedBytes = 0;
  private paused = false;
  private failure: Error | undefined;
  private ended = false;
  private wake: (() => void) | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private lastPacketAt = Date.now();
  private readonly unlisten: Array<() => void> = [];

  private readonly session: MySQLSession;
  readonly source: BinlogSource;
  private readonly heartbeatMs: number;

  private constructor(session: MySQLSession, source: BinlogSource, heartbeatMs: number) {
    this.session = session;
    this.source = source;
    this.heartbeatMs = heartbeatMs;
  }

  /** Connects, checks the server and starts the dump after `options.position`. */
  static async open(options: BinlogStreamOptions): Promise<BinlogStream> {
    options.signal?.throwIfAborted();
    const position = formatPosition(parsePosition(options.position));
    const { session, source } = await openSource(options.connection);
    const heartbeatMs = options.heartbeatMs ?? defaultHeartbeatMs;
    const stream = new BinlogStream(session, source, heartbeatMs);
    try {
      // What a MariaDB replica sets before a GTID dump (sql/slave.cc): GTID
      // events as they are (capability 4 = MARIA_SLAVE_CAPABILITY_GTID, not
      // rewritten to BEGIN), start after this position, refuse a position the
      // server's binlog does not contain, checksums as the server writes them.
      await session.query("SET @mariadb_slave_capability = 4", [], "prepare the binlog dump");
      await session.query("SET @slave_connect_state = ?", [position], "prepare the binlog dump");
      await session.query("SET @slave_gtid_strict_mode = 1", [], "prepare the binlog dump");
      await session.query("SET @master_binlog_checksum = @@global.binlog_checksum", [], "prepare the binlog dump");
      // In nanoseconds.
      await session.query("SET @master_heartbeat_period = ?", [heartbeatMs * 1_000_000], "prepare the binlog dump");
    } catch (err) {
      session.destroy();
      throw err;
    }
    stream.start(options.serverId, options.signal);
    return stream;
  }

  private start(serverId: number, signal: AbortSignal | undefined): void {
    const raw = this.session.raw as unknown as RawConnection;
    const command = new BinlogDumpCommand(binlogDumpPayload({ position: 4, flags: BINLOG_SEND_ANNOTATE_ROWS_EVENT, serverId, file: "" }), {
      event: (bytes) => this.push(bytes),
      end: () => {
        this.ended = true;
        this.notify();
      },
      fail: (err) => this.fail(err),
    });
    this.unlisten.push(this.session.onFailure((err) => this.fail(err)));
    if (signal) {
      const onAbort = () => this.fail(new BackupError("Aborted", "the binlog stream was stopped", { cause: signal.reason }));
      signal.addEventListener("abort", onAbort, { once: true });
      this.unlisten.push(() => signal.removeEventListener("abort", onAbort));
    }
    this.watchdog = setInterval(() => {
      if (!this.paused && Date.now() - this.lastPacketAt > 3 * this.heartbeatMs) {
        this.fail(new BackupError("ConnectionLost", `the binlog stream from ${this.source.endpoint} sent nothing, not even a heartbeat, for ${3 * this.heartbeatMs} ms`, { retryable: true }));
      }
    }, this.heartbeatMs);
    this.watchdog.unref();
    raw.addCommand(command);
  }

  private push(bytes: Buffer): void {
    this.lastPacketAt = Date.now();
    this.queue.push(bytes);
    this.queuedBytes += bytes.length;
    if (!this.paused && this.queuedBytes > HIGH_WATER) {
      this.paused = true;
      (this.session.raw as unknown as RawConnection).pause();
    }
    this.notify();
  }

  /** Ends the stream with `err` (what next() throws once the events received are read). */
  abort(err: BackupError): void {
    this.fail(err);
  }

  private fail(err: Error): void {
    if (this.failure) return;
    this.failure =
      err instanceof BackupError
        ? err
        : (() => {
            const failure = mysqlFailure(err, "stream the binary log", this.source.endpoint);
            // ER_MASTER_FATAL_ERROR_READING_BINLOG (1236): the position is not in the server's binlog (purged, or never there).
            if ((err as { errno?: number }).errno === 1236) {
              return new BackupError("BinlogUnavailable", `${this.source.endpoint} cannot stream its binary log from the archive's position: ${messageOf(err)}`, { cause: failure.cause });
            }
            return failure;
          })();
    this.close();
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** The next event; undefined when the server ended the stream. @throws the stream's failure. */
  async next(): Promise<BinlogEvent | undefined> {
    for (;;) {
      const bytes = this.queue.shift();
      if (bytes) {
        this.queuedBytes -= bytes.length;
        if (this.paused && this.queuedBytes < HIGH_WATER / 4) {
          this.paused = false;
          this.lastPacketAt = Date.now();
          (this.session.raw as unknown as RawConnection).resume();
        }
        try {
          return toEvent(bytes);
        } catch (err) {
          if (err instanceof BinlogFormatError) throw new BackupError("InvalidBinlog", `${this.source.endpoint}: ${err.message}`, { retryable: true });
          throw err;
        }
      }
      if (this.failure) throw this.failure;
      if (this.ended) return undefined;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<BinlogEvent> {
    for (;;) {
      const event = await this.next();
      if (!event) return;
      yield event;
    }
  }

  /** Drops the connection (the dump never ends by itself). Events already received can still be read. */
  close(): void {
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = undefined;
    for (const unlisten of this.unlisten.splice(0)) unlisten();
    this.session.destroy();
  }
}
