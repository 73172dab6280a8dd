// Errors from the server or the network, turned into something a user can act
// on — and stripped of what must never leave the process. mysql2 attaches the
// full SQL text to a failed query's error (`err.sql`), including the password
// of an `IDENTIFIED BY` clause; logging that error as it is (the controller
// logs every failed reconcile, with the error's own properties) would leak it.
// So every error that crosses this package's boundary is a MySQLError built
// from the server's code and message only, with no `cause` and no SQL.
// What went wrong is classified here, once, for every MySQL operator: each
// turns a MySQLFailure into its own condition reasons (failures.ts for
// MySQLInstance and DatabaseUser; the backup engine's BackupError reasons).

/** What went wrong, in the terms a condition reason uses. */
export type MySQLFailure =
  /** No TCP connection: refused, DNS, no route; or timed out while connecting. */
  | "Unreachable"
  /** The connection broke once made: reset, closed, killed, the server shutting down, a timeout mid-statement. */
  | "ConnectionLost"
  /** The server refused the admin credentials. */
  | "AuthenticationFailed"
  /** The TLS handshake failed, or the server does not offer TLS where it is required. */
  | "TLSFailed"
  /** The admin account lacks a privilege the statement needs. */
  | "InsufficientPrivileges"
  /** A database named in a statement does not exist. */
  | "NoSuchDatabase"
  /** A table named in a statement (a grant) does not exist (yet). */
  | "NoSuchTable"
  /** A lock was not granted within lock_wait_timeout. */
  | "LockTimeout"
  /** A table's definition changed while a consistent snapshot was reading it. */
  | "SchemaChanged"
  /** The statement cannot succeed as written (bad name, privilege not valid at that level). */
  | "InvalidStatement"
  /** The server refused the password (MySQL's validate_password component). */
  | "PasswordRejected"
  /** Anything else the server or driver reported. */
  | "ServerError";

export class MySQLError extends Error {
  override name = "MySQLError";
  readonly failure: MySQLFailure;
  /** The server's or driver's error code, e.g. "ER_ACCESS_DENIED_ERROR", "ECONNREFUSED". */
  readonly code: string | undefined;
  readonly errno: number | undefined;

  constructor(failure: MySQLFailure, message: string, code?: string, errno?: number) {
    super(message);
    this.failure = failure;
    this.code = code;
    this.errno = errno;
  }

  /** Retrying cannot help until the object that asked for the statement changes. */
  get terminal(): boolean {
    return this.failure === "InvalidStatement";
  }

  /**
   * The server itself answered with an error (a code of its own, ER_…): a
   * single statement it refused did not run. False when the connection could
   * not be made, failed or broke (also the server's own ER_CONNECTION_KILLED,
   * ER_SERVER_SHUTDOWN): after that a statement sent may or may not have run.
   */
  get refusedByServer(): boolean {
    return this.failure !== "ConnectionLost" && this.code?.startsWith("ER_") === true;
  }
}

/** No connection could be made (ETIMEDOUT: see classifyMySQLError). */
const UNREACHABLE_CODES = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);

/** A connection that was made broke. */
const LOST_CODES = new Set([
  "ECONNRESET",
  "EPIPE",
  "PROTOCOL_CONNECTION_LOST",
  "PROTOCOL_SEQUENCE_TIMEOUT",
  "PROTOCOL_PACKETS_OUT_OF_ORDER",
  "PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR",
  "ER_SERVER_SHUTDOWN",
  "ER_CONNECTION_KILLED",
  "ER_NET_READ_ERROR",
  "ER_NET_READ_INTERRUPTED",
  "ER_NET_WRITE_INTERRUPTED",
  "ER_NET_ERROR_ON_WRITE",
]);

const TLS_CODE = /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|HANDSHAKE_NO_SSL_SUPPORT|ERR_TLS/;

const AUTH_CODES = new Set(["ER_ACCESS_DENIED_ERROR", "ER_ACCESS_DENIED_NO_PASSWORD_ERROR", "ER_DBACCESS_DENIED_ERROR", "ER_HOST_NOT_PRIVILEGED", "ER_HOST_IS_BLOCKED"]);

const PRIVILEGE_CODES = new Set([
  "ER_SPECIFIC_ACCESS_DENIED_ERROR",
  "ER_TABLEACCESS_DENIED_ERROR",
  "ER_COLUMNACCESS_DENIED_ERROR",
  "ER_PROCACCESS_DENIED_ERROR",
  "ER_DBACCESS_DENIED_ERROR",
  "ER_ACCESS_DENIED_ERROR",
  "ER_ACCESS_DENIED_NO_PASSWORD_ERROR",
  "ER_PASSWORD_NOT_ALLOWED",
]);

const INVALID_CODES = new Set([
  "ER_WRONG_DB_NAME",
  "ER_WRONG_TABLE_NAME",
  "ER_WRONG_STRING_LENGTH",
  "ER_ILLEGAL_GRANT_FOR_TABLE",
  "ER_WRONG_USAGE",
  "ER_PARSE_ERROR",
  "ER_UNKNOWN_ERROR",
  "ER_TOO_LONG_IDENT",
  "ER_WRONG_NAME_FOR_INDEX",
  "ER_CANT_CREATE_USER_WITH_GRANT",
  "ER_SYNTAX_ERROR",
]);

interface DriverError {
  code?: unknown;
  errno?: unknown;
  sqlMessage?: unknown;
  message?: unknown;
  fatal?: unknown;
}

/** An error from mysql2 or the socket under it (it carries a string `code`), as opposed to one of our own. */
export function isDriverError(err: unknown): boolean {
  return typeof err === "object" && err !== null && !(err instanceof MySQLError) && typeof (err as DriverError).code === "string";
}

/** Replaces every occurrence of each secret in `text` (a last line of defence; messages are built not to contain them). */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length > 0) out = out.split(s).join("[REDACTED]");
  return out;
}

/**
 * What a server or driver error code means. `connecting` says whether it
 * happened while logging in (where "access denied" means wrong credentials,
 * and a timeout an unreachable server) or while running a statement (where
 * they mean a missing privilege and a lost connection). `message` decides
 * for errors without a code.
 */
export function classifyMySQLError(code: string | undefined, message: string, connecting = false): MySQLFailure {
  if (code === undefined) return /timeout|timed out/i.test(message) ? "Unreachable" : "ServerError";
  if (UNREACHABLE_CODES.has(code)) return "Unreachable";
  if (code === "ETIMEDOUT") return connecting ? "Unreachable" : "ConnectionLost";
  if (LOST_CODES.has(code)) return "ConnectionLost";
  if (TLS_CODE.test(code)) return "TLSFailed";
  if (connecting && AUTH_CODES.has(code)) return "AuthenticationFailed";
  if (PRIVILEGE_CODES.has(code)) return "InsufficientPrivileges";
  if (code === "ER_BAD_DB_ERROR") return "NoSuchDatabase";
  if (code === "ER_NO_SUCH_TABLE") return "NoSuchTable";
  if (code === "ER_LOCK_WAIT_TIMEOUT") return "LockTimeout";
  if (code === "ER_TABLE_DEF_CHANGED") return "SchemaChanged";
  if (code === "ER_NOT_VALID_PASSWORD" || code === "ER_NOT_VALID_PASSWORD_LENGTH") return "PasswordRejected";
  if (INVALID_CODES.has(code)) return "InvalidStatement";
  return "ServerError";
}

/**
 * A MySQLError for whatever mysql2 (or the network) threw. `connecting` says
 * whether the error happened while logging in (where "access denied" means
 * wrong credentials) or while running a statement (where it means a missing
 * privilege). `secrets` are removed from the message should the server echo
 * one back.
 */
export function toMySQLError(err: unknown, opts: { connecting?: boolean; secrets?: readonly string[] } = {}): MySQLError {
  if (err instanceof MySQLError) return err;
  const e = (typeof err === "object" && err !== null ? err : {}) as DriverError;
  const code = typeof e.code === "string" ? e.code : undefined;
  const errno = typeof e.errno === "number" ? e.errno : undefined;
  const text = typeof e.sqlMessage === "string" ? e.sqlMessage : typeof e.message === "string" ? e.message : "";
  // A refused connection to a name with several addresses is an AggregateError with an empty message.
  const raw = text || code || String(err);
  const message = redact(raw, opts.secrets ?? []);
  return new MySQLError(classifyMySQLError(code, message, opts.connecting), message, code, errno);
}
