// MySQL connections of the engine (mysql2, callback API, so that result rows
// can be streamed), with every MySQL error mapped to a BackupError whose
// reason says what happened.
import mysql, { type Connection, type QueryError, type RowDataPacket, type SqlValue, type SslOptions } from "mysql2";
import { classifyMySQLError, driverDefaults, type MySQLFailure } from "@stateward/mysql";
import { messageOf } from "@stateward/core";
import { BackupError, type BackupFailureReason } from "../errors.ts";

/** How to log in to a MySQL or MariaDB server. */
export interface MySQLConnectionOptions {
  host: string;
  /** Defaults to 3306. */
  port?: number;
  user: string;
  /** Read by the caller from a Secret; never logged or written anywhere. */
  password?: string;
  /**
   * TLS to the server, as mysql2 takes it (e.g. `sslOptions(mode, ca)` of
   * @stateward/mysql); absent means plain TCP.
   */
  ssl?: SslOptions;
  /** Give up connecting after this long. Defaults to 10 000 ms. */
  connectTimeoutMs?: number;
}

export function endpointOf(options: Pick<MySQLConnectionOptions, "host" | "port">): string {
  return `${options.host}:${options.port ?? 3306}`;
}

/** A MySQL failure (classified once, in @stateward/mysql) as the reason of a backup or restore. */
function reasonOf(failure: MySQLFailure, connecting: boolean): { reason: BackupFailureReason; retryable: boolean } {
  switch (failure) {
    case "Unreachable":
    case "TLSFailed":
      return { reason: connecting ? "DatabaseUnreachable" : "ConnectionLost", retryable: true };
    case "ConnectionLost":
      return { reason: "ConnectionLost", retryable: true };
    case "AuthenticationFailed":
    case "InsufficientPrivileges":
      return { reason: "DatabaseAccessDenied", retryable: false };
    case "NoSuchDatabase":
      return { reason: "DatabaseNotFound", retryable: false };
    case "LockTimeout":
      return { reason: "LockTimeout", retryable: true };
    case "SchemaChanged":
      return { reason: "SchemaChanged", retryable: true };
    default:
      return { reason: "DatabaseError", retryable: false };
  }
}

/**
 * The error without the statement text mysql2 attaches to it (`sql`), which
 * can hold row data or, in a dump of accounts, password hashes: a cause is
 * logged with all its fields.
 */
export function withoutStatement(err: unknown): unknown {
  if (typeof err !== "object" || err === null || !("sql" in err)) return err;
  const e = err as Partial<QueryError>;
  const copy = new Error(e.message ?? "MySQL error") as Error & Partial<Pick<QueryError, "code" | "errno" | "sqlState">>;
  if (e.code !== undefined) copy.code = e.code;
  if (e.errno !== undefined) copy.errno = e.errno;
  if (e.sqlState !== undefined) copy.sqlState = e.sqlState;
  return copy;
}

/**
 * A MySQL error as a BackupError; `what` completes "could not …" (or is a
 * full phrase for a lost connection). Messages come from the server or the
 * socket and carry no password.
 */
export function mysqlFailure(err: unknown, what: string, endpoint: string, connecting = false): BackupError {
  if (err instanceof BackupError) return err;
  const code = (err as Partial<QueryError> | undefined)?.code;
  const detail = messageOf(err);
  const { reason, retryable } = reasonOf(classifyMySQLError(code, detail, connecting), connecting);
  let message: string;
  switch (reason) {
    case "DatabaseUnreachable":
      message = `could not connect to MySQL at ${endpoint}: ${detail}`;
      break;
    case "ConnectionLost":
      message = `lost the connection to MySQL at ${endpoint} while trying to ${what}: ${detail}`;
      break;
    case "SchemaChanged":
      message = `could not ${what}: the table was altered during the backup (${detail}); run the backup again`;
      break;
    default:
      message = `could not ${what}: ${detail}`;
  }
  return new BackupError(reason, message, { retryable, cause: withoutStatement(err) });
}

export interface OpenOptions {
  /**
   * Character set of the handshake. Defaults to utf8mb4. The restore uses
   * "binary" so that mysql2 sends statement bytes unchanged; the objects then
   * set their own character set with SET NAMES.
   */
  charset?: "utf8mb4" | "binary";
}

/**
 * mysql2's queryFormat for our connections: a statement without values goes
 * out exactly as written. mysql2's default formats every statement, and with
 * no values that scans all of it for `?` placeholders it has nothing to put
 * in: 3.5 s of the manager's CPU per 1.2 GB a restore sends, the largest item
 * of its profile after garbage collection. With values, it is mysql2's own
 * format (values escaped, objects not stringified, dates in `timezone`).
 */
export function formatOnlyWithValues(sql: string, values: unknown, timezone?: string): string {
  if (values === undefined || (Array.isArray(values) && values.length === 0)) return sql;
  return mysql.format(sql, values as SqlValue[], false, timezone);
}

/** One connection; `query` for small results, `raw` for streaming. */
export class MySQLSession {
  readonly raw: Connection;
  readonly endpoint: string;
  /** A fatal error the connection reported (server gone, killed, network). */
  private idleError: Error | undefined;
  private readonly errorListeners = new Set<(err: Error) => void>();

  private constructor(raw: Connection, endpoint: string) {
    this.raw = raw;
    this.endpoint = endpoint;
    // Without a listener, a fatal error on an idle connection would be an
    // unhandled 'error' event and take the whole manager down.
    raw.on("error", (err: Error) => {
      this.idleError = err;
      for (const listener of this.errorListeners) listener(err);
    });
  }

  /**
   * Calls `listener` when the connection fails. A streaming query has no
   * callback, and mysql2 then reports a lost connection only here, never on
   * the query's stream. Returns the function that unsubscribes.
   */
  onFailure(listener: (err: Error) => void): () => void {
    if (this.idleError) {
      const err = this.idleError;
      queueMicrotask(() => listener(err));
      return () => undefined;
    }
    this.errorListeners.add(listener);
    return () => this.errorListeners.delete(listener);
  }

  static async open(options: MySQLConnectionOptions, openOptions: OpenOptions = {}): Promise<MySQLSession> {
    const endpoint = endpointOf(options);
    const raw = mysql.createConnection({
      host: options.host,
      port: options.port ?? 3306,
      user: options.user,
      password: options.password ?? "",
      ...(options.ssl ? { ssl: options.ssl } : {}),
      connectTimeout: options.connectTimeoutMs ?? 10_000,
      charset: openOptions.charset === "binary" ? "BINARY" : "UTF8MB4_GENERAL_CI",
      // Metadata only: numbers and dates as text, never lossy JS numbers.
      supportBigNumbers: true,
      bigNumberStrings: true,
      dateStrings: true,
      multipleStatements: false,
      queryFormat: formatOnlyWithValues,
      // No stack captured per query, no 16,000-slot statement cache per connection: as the operators' pools.
      ...driverDefaults,
      // No LOAD DATA LOCAL (a hostile dump file must not read our files); no
      // IGNORE_SPACE, which the stock client does not set either and which
      // changes how the server parses names followed by a space; no session
      // tracking, whose character_set_client reports would make mysql2
      // re-encode the statements of a restore (sent as bytes: see restore/).
      flags: ["-LOCAL_FILES", "-IGNORE_SPACE", "-SESSION_TRACK"],
    });
    const session = new MySQLSession(raw, endpoint);
    await new Promise<void>((resolve, reject) => {
      raw.connect((err) => (err ? reject(mysqlFailure(err, "connect", endpoint, true)) : resolve()));
    });
    return session;
  }

  /** Runs one statement; `what` names it in errors ("read the table list"). */
  query<T = RowDataPacket>(sql: string, values: unknown[] = [], what = "run a query"): Promise<T[]> {
    if (this.idleError) return Promise.reject(mysqlFailure(this.idleError, what, this.endpoint));
    return new Promise((resolve, reject) => {
      this.raw.query(sql, values, (err, rows) => {
        if (err) reject(mysqlFailure(err, what, this.endpoint));
        else resolve(Array.isArray(rows) ? (rows as T[]) : []);
      });
    });
  }

  /**
   * Sends one statement of a backup as it is, and rejects with the raw
   * mysql2 error (the caller names the statement in its own message).
   */
  execute(sql: string): Promise<void> {
    if (this.idleError) return Promise.reject(this.idleError);
    return new Promise((resolve, reject) => {
      this.raw.query({ sql }, (err) => (err ? reject(err) : resolve()));
    });
  }

  /** Closes politely (COM_QUIT); a broken connection is simply dropped. */
  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.destroy();
        resolve();
      }, 5_000);
      this.raw.end(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /**
   * Drops the connection at once; the server rolls back what was open.
   * mysql2's own destroy() only half-closes the socket, which lets the server
   * go on streaming a table into it (for up to net_write_timeout) and leaves
   * a streaming query pending forever. Destroying the socket itself makes the
   * server stop at its next write, and whatever is in flight here fails with
   * a lost connection.
   */
  destroy(): void {
    const socket = (this.raw as unknown as { stream?: { destroy?: () => void } }).stream;
    if (typeof socket?.destroy === "function") socket.destroy();
    else this.raw.destroy();
  }
}
