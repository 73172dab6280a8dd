// Errors from the server or the network, turned into something a user can act
// on — and stripped of what must never leave the process. mysql2 attaches the
// full SQL text to a failed query's error (`err.sql`), including the password
// of an `IDENTIFIED BY` clause; logging that error as it is (the controller
// logs every failed reconcile, with the error's own properties) would leak it.
// So every error that crosses this package's boundary is a MySQLError built
// from the server's code and message only, with no `cause` and no SQL.

/** What went wrong, in the terms a condition reason uses. */
export type MySQLFailure =
  /** No TCP connection: refused, timed out, DNS, reset. */
  | "Unreachable"
  /** The server refused the admin credentials. */
  | "AuthenticationFailed"
  /** The TLS handshake failed, or the server does not offer TLS where it is required. */
  | "TLSFailed"
  /** The admin account lacks a privilege the statement needs. */
  | "InsufficientPrivileges"
  /** A table named in a grant does not exist (yet). */
  | "NoSuchTable"
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
}

const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
  "PROTOCOL_CONNECTION_LOST",
  "PROTOCOL_SEQUENCE_TIMEOUT",
  "PROTOCOL_PACKETS_OUT_OF_ORDER",
]);

const TLS_CODE = /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|HANDSHAKE_NO_SSL_SUPPORT|ERR_TLS/;

const AUTH_CODES = new Set(["ER_ACCESS_DENIED_ERROR", "ER_ACCESS_DENIED_NO_PASSWORD_ERROR", "ER_DBACCESS_DENIED_ERROR", "ER_HOST_NOT_PRIVILEGED", "ER_HOST_IS_BLOCKED"]);

const PRIVILEGE_CODES = new Set([
  "ER_SPECIFIC_ACCESS_DENIED_ERROR",
  "ER_TABLEACCESS_DENIED_ERROR",
  "ER_COLUMNACCESS_DENIED_ERROR",
  "ER_DBACCESS_DENIED_ERROR",
  "ER_ACCESS_DENIED_ERROR",
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
  const make = (failure: MySQLFailure) => new MySQLError(failure, message, code, errno);
  if (code === undefined) return make(/timeout|timed out/i.test(message) ? "Unreachable" : "ServerError");
  if (NETWORK_CODES.has(code)) return make("Unreachable");
  if (TLS_CODE.test(code)) return make("TLSFailed");
  if (opts.connecting && AUTH_CODES.has(code)) return make("AuthenticationFailed");
  if (PRIVILEGE_CODES.has(code)) return make("InsufficientPrivileges");
  if (code === "ER_NO_SUCH_TABLE") return make("NoSuchTable");
  if (code === "ER_NOT_VALID_PASSWORD" || code === "ER_NOT_VALID_PASSWORD_LENGTH") return make("PasswordRejected");
  if (INVALID_CODES.has(code)) return make("InvalidStatement");
  return make("ServerError");
}
