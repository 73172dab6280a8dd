// The statements that replay one archived transaction on a server, the way
// `mariadb-binlog | mariadb` does (pure: no connection here, see replay.ts).
//
// - Row events (Table_map + Write/Update/Delete_rows) go to the server as
//   they are, base64 in `BINLOG '…'`: the server's own row applier decodes
//   them. No SQL is ever generated from row images (types, charsets, NULLs,
//   BLOB bytes would all be ours to get right; the server already is).
// - Query events (DDL, statement-logged DML) are executed as their bytes,
//   after the context they were logged with: the default database (USE), the
//   statement time (SET TIMESTAMP, with the microseconds MariaDB records), and
//   the session variables the event carries (sql_mode, foreign_key_checks,
//   unique_checks, sql_auto_is_null, auto_increment_increment/offset,
//   character_set_client, collation_connection/server/database, time_zone,
//   lc_time_names). Intvar, Rand and User_var events become the SETs of
//   INSERT_ID/LAST_INSERT_ID, RAND_SEED1/2 and @variables before it.
// - Group boundaries come from the GTID event: a transaction is sent as
//   BEGIN … COMMIT (its Xid, or its own COMMIT/ROLLBACK query event), one of a
//   single row statement as that statement alone (autocommitted: one round
//   trip instead of three); a standalone group (DDL) as its one statement.
//   `autocommit` is therefore not replayed: the session stays autocommit=1
//   and each group is exactly one commit, as on the source.
// - The source's GTIDs are not kept (no SET gtid_domain_id/server_id/
//   gtid_seq_no): the target may be the very server the archive came from,
//   whose own sequence is already past them (gtid_strict_mode would refuse
//   them, and a lower seq_no in its domain would confuse its replicas). The
//   replayed transactions get the target's next GTIDs, like any new writes.
//
// Database filter (`databases`), like `mariadb-binlog --database`: a row
// event belongs to the database its Table_map names; a Query event to its
// default database (the USE in effect when it ran, not the tables it names:
// `USE a; INSERT INTO b.t …` counts as `a`). A statement run without a
// default database (`DROP TABLE shop.t` from a session that never ran USE)
// names its tables itself, which only the server resolves: under a filter it
// is replayed when `withoutDatabase` is "replay" (the restore covers every
// database of the backup) and otherwise skipped — restoreToPoint refuses a
// plan holding one (findUnattributed) rather than restore a state that never
// existed. Events of the system databases (mysql, sys, information_schema,
// performance_schema), statements without a default database whose first
// qualified name is one of them, maintenance statements (FLUSH, ANALYZE,
// OPTIMIZE, REPAIR, CHECK: no data changes) and account-management
// statements (CREATE/ALTER/DROP/RENAME USER, GRANT, REVOKE, SET PASSWORD,
// CREATE/DROP ROLE, SET DEFAULT ROLE) are never replayed: accounts belong to
// the target, not to the backup.
import { quoteIdentifier } from "../engine/sql.ts";
import { BinlogFormatError, EventType, GtidFlag, HEADER_LENGTH, QUERY_POST_HEADER, ROWS_EVENTS, sameFormat, writeChecksum, type BinlogEvent, type FormatDescription } from "./events.ts";
import { formatGtid } from "./gtid.ts";
import { type Transaction } from "./transactions.ts";

/** Databases whose events are never replayed. */
export const SYSTEM_DATABASES: ReadonlySet<string> = new Set(["mysql", "sys", "information_schema", "performance_schema"]);

/** Statements that manage accounts (the target's, never replayed). */
const ACCOUNT_STATEMENT = /^(?:(?:CREATE|ALTER|DROP|RENAME)\s+USER|GRANT|REVOKE|SET\s+PASSWORD|(?:CREATE|DROP)\s+ROLE|SET\s+DEFAULT\s+ROLE)\b/i;

/** A transaction or statement the replay cannot apply (an event it does not support). */
export class ReplayUnsupportedError extends Error {
  override name = "ReplayUnsupportedError";
}

// flags2 bits of a Query event (MariaDB sql_priv.h, OPTIONS_WRITTEN_TO_BIN_LOG).
const OPTION_AUTO_IS_NULL = 1 << 14;
const OPTION_NO_FOREIGN_KEY_CHECKS = 1 << 26;
const OPTION_RELAXED_UNIQUE_CHECKS = 1 << 27;

/** Header flag of a Query event whose database must not be USEd (CREATE/ALTER/DROP DATABASE). */
const LOG_EVENT_SUPPRESS_USE_F = 0x0008;

/** Rows event flag: the last event of its statement (the server closes the statement's tables after it). */
const STMT_END_F = 0x0001;

/** The status variables of a Query event that shape how its statement runs. */
export interface QueryStatus {
  flags2?: number;
  sqlMode?: bigint;
  autoIncrement?: { increment: number; offset: number };
  charset?: { client: number; connection: number; server: number };
  timeZone?: string;
  lcTimeNames?: number;
  collationDatabase?: number;
  /** Microseconds of the statement time (MariaDB's Q_HRNOW). */
  microseconds?: number;
}

export interface QueryEvent {
  /** The default database ("" for none). */
  database: string;
  /** The error the statement had on the source (0: none); a replay expects the same. */
  errorCode: number;
  status: QueryStatus;
  /** The statement's bytes, in the character set of `status.charset.client`. */
  statement: Buffer;
}

/** Parses a Query event fully (status variables the server itself reads; it stops at an unknown one, and so does this). */
export function parseQueryEvent(event: BinlogEvent, format: FormatDescription): QueryEvent {
  const { raw } = event;
  const postHeader = format.postHeaderLengths[EventType.QUERY - 1] ?? QUERY_POST_HEADER;
  const end = raw.length - (format.checksum ? 4 : 0);
  if (end < HEADER_LENGTH + postHeader) throw new BinlogFormatError(`a Query event of ${raw.length} bytes is too short`);
  const dbLength = raw.readUInt8(HEADER_LENGTH + 8);
  const errorCode = raw.readUInt16LE(HEADER_LENGTH + 9);
  const statusLength = raw.readUInt16LE(HEADER_LENGTH + 11);
  const statusStart = HEADER_LENGTH + postHeader;
  const statusEnd = statusStart + statusLength;
  const dbStart = statusEnd;
  if (dbStart + dbLength + 1 > end) throw new BinlogFormatError(`a Query event of ${raw.length} bytes is too short for its database name and status`);
  const status: QueryStatus = {};
  let at = statusStart;
  const need = (n: number): boolean => at + n <= statusEnd;
  scan: while (at < statusEnd) {
    const code = raw.readUInt8(at++);
    switch (code) {
      case 0: // Q_FLAGS2_CODE
        if (!need(4)) break scan;
        status.flags2 = raw.readUInt32LE(at);
        at += 4;
        break;
      case 1: // Q_SQL_MODE_CODE
        if (!need(8)) break scan;
        status.sqlMode = raw.readBigUInt64LE(at);
        at += 8;
        break;
      case 2: // Q_CATALOG_CODE (old): length, name, NUL
        if (!need(1)) break scan;
        at += 1 + raw.readUInt8(at) + 1;
        break;
      case 3: // Q_AUTO_INCREMENT
        if (!need(4)) break scan;
        status.autoIncrement = { increment: raw.readUInt16LE(at), offset: raw.readUInt16LE(at + 2) };
        at += 4;
        break;
      case 4: // Q_CHARSET_CODE
        if (!need(6)) break scan;
        status.charset = { client: raw.readUInt16LE(at), connection: raw.readUInt16LE(at + 2), server: raw.readUInt16LE(at + 4) };
        at += 6;
        break;
      case 5: {
        // Q_TIME_ZONE_CODE
        if (!need(1)) break scan;
        const n = raw.readUInt8(at);
        if (!need(1 + n)) break scan;
        status.timeZone = raw.subarray(at + 1, at + 1 + n).toString("utf8");
        at += 1 + n;
        break;
      }
      case 6: // Q_CATALOG_NZ_CODE
        if (!need(1)) break scan;
        at += 1 + raw.readUInt8(at);
        break;
      case 7: // Q_LC_TIME_NAMES_CODE
        if (!need(2)) break scan;
        status.lcTimeNames = raw.readUInt16LE(at);
        at += 2;
        break;
      case 8: // Q_CHARSET_DATABASE_CODE
        if (!need(2)) break scan;
        status.collationDatabase = raw.readUInt16LE(at);
        at += 2;
        break;
      case 9: // Q_TABLE_MAP_FOR_UPDATE_CODE
        at += 8;
        break;
      case 10: // Q_MASTER_DATA_WRITTEN_CODE
        at += 4;
        break;
      case 11: // Q_INVOKER: user, host (length-prefixed)
        if (!need(1)) break scan;
        at += 1 + raw.readUInt8(at);
        if (!need(1)) break scan;
        at += 1 + raw.readUInt8(at);
        break;
      case 12: {
        // Q_UPDATED_DB_NAMES: a count (254: too many to list), then NUL-terminated names
        if (!need(1)) break scan;
        const count = raw.readUInt8(at++);
        if (count === 254) break;
        for (let i = 0; i < count && at < statusEnd; i++) {
          const nul = raw.indexOf(0, at);
          at = nul < 0 || nul >= statusEnd ? statusEnd : nul + 1;
        }
        break;
      }
      case 128: // Q_HRNOW: microseconds of the statement time
        if (!need(3)) break scan;
        status.microseconds = raw.readUIntLE(at, 3);
        at += 3;
        break;
      case 129: // Q_XID
        at += 8;
        break;
      default:
        // What the server does too: an unknown code ends the status it reads.
        break scan;
    }
  }
  return {
    database: raw.subarray(dbStart, dbStart + dbLength).toString("utf8"),
    errorCode,
    status,
    statement: Buffer.from(raw.subarray(dbStart + dbLength + 1, end)),
  };
}

/** The 6-byte (or, in an old layout, 4-byte) table id of a Table_map or rows event, and where its flags are. */
function tableIdOf(event: BinlogEvent, format: FormatDescription): { id: number; flagsAt: number } {
  const postHeader = format.postHeaderLengths[event.header.type - 1] ?? 8;
  const idLength = postHeader === 6 ? 4 : 6;
  if (event.raw.length < HEADER_LENGTH + idLength + 2) throw new BinlogFormatError(`a binlog event of type ${event.header.type} is too short for its table id`);
  return { id: event.raw.readUIntLE(HEADER_LENGTH, idLength), flagsAt: HEADER_LENGTH + idLength };
}

/** The database and table a Table_map event maps its table id to. */
export function parseTableMap(event: BinlogEvent, format: FormatDescription): { tableId: number; database: string; table: string } {
  const postHeader = format.postHeaderLengths[EventType.TABLE_MAP - 1] ?? 8;
  const { id } = tableIdOf(event, format);
  const { raw } = event;
  let at = HEADER_LENGTH + postHeader;
  const dbLength = raw.readUInt8(at);
  const database = raw.subarray(at + 1, at + 1 + dbLength).toString("utf8");
  at += 1 + dbLength + 1;
  const tableLength = raw.readUInt8(at);
  const table = raw.subarray(at + 1, at + 1 + tableLength).toString("utf8");
  return { tableId: id, database, table };
}

/** SQL text as the bytes a connection with the binary character set sends (one latin1 character per byte). */
export function sqlBytes(text: string): string {
  return Buffer.from(text, "utf8").toString("latin1");
}

/** `BINLOG '<base64>'` of events, as `mariadb-binlog` writes them for the server's own row applier. */
export function binlogStatement(events: readonly Buffer[]): string {
  return `BINLOG '\n${Buffer.concat(events).toString("base64")}\n'`;
}

/** One statement of a replay. */
export interface ReplayStatement {
  /** The bytes to send, as a latin1 string (see sqlBytes). */
  sql: string;
  /** The error number the statement had on the source: getting that one again is success. */
  expectedError?: number;
}

/** Character set and collation names by collation id (information_schema.COLLATIONS of the target). */
export type CollationNames = ReadonlyMap<number, { charset: string; collation: string }>;

/**
 * What the replaying session has been told so far, so that a SET is sent
 * only when a value changes (most events share their context).
 */
export class SessionState {
  database: string | undefined;
  timestamp: string | undefined;
  readonly vars = new Map<string, string>();
  /** The Format_description the server has for BINLOG statements. */
  format: FormatDescription | undefined;

  /** Forgets everything (a new session, or after a failure). */
  reset(): void {
    this.database = undefined;
    this.timestamp = undefined;
    this.vars.clear();
    this.format = undefined;
  }
}

/**
 * Raw event bytes per BINLOG statement at most (unless one event is larger):
 * 4 MiB is 5.4 MiB of base64, well within MariaDB's default max_allowed_packet
 * (16 MiB). A single event larger than the target's max_allowed_packet can
 * not be replayed (the target's limit must be raised).
 */
export const defaultMaxBinlogBytes = 4 * 1024 * 1024;

export interface TranslateOptions {
  /** Raw bytes per BINLOG statement (defaultMaxBinlogBytes). */
  maxBinlogBytes?: number;
  /** Only these databases (see the rule above); all but the system ones when absent. */
  databases?: ReadonlySet<string>;
  /**
   * Statements logged without a default database, under a `databases` filter:
   * "replay" when the filter is every database of the backup (the server
   * resolves their qualified names), "skip" (the default) otherwise.
   */
  withoutDatabase?: "replay" | "skip";
  collations: CollationNames;
}

/** Whether events of `database` are replayed. */
export function replaysDatabase(database: string, databases: ReadonlySet<string> | undefined): boolean {
  if (SYSTEM_DATABASES.has(database.toLowerCase())) return false;
  if (!databases) return true;
  return databases.has(database);
}

/** The statement text without leading whitespace and comments (`/*!…*\/` version comments are kept: their body is SQL). */
function leadingText(statement: Buffer): string {
  let text = statement.subarray(0, 512).toString("latin1");
  for (;;) {
    const trimmed = text.trimStart();
    if (trimmed.startsWith("/*") && !trimmed.startsWith("/*!") && !trimmed.startsWith("/*M!")) {
      const close = trimmed.indexOf("*/");
      text = close < 0 ? "" : trimmed.slice(close + 2);
    } else if (trimmed.startsWith("#") || trimmed.startsWith("-- ")) {
      const nl = trimmed.indexOf("\n");
      text = nl < 0 ? "" : trimmed.slice(nl + 1);
    } else {
      return trimmed;
    }
  }
}

export function isAccountStatement(statement: Buffer): boolean {
  return ACCOUNT_STATEMENT.test(leadingText(statement));
}

/** Statements that change no data (FLUSH, table maintenance). */
const MAINTENANCE_STATEMENT = /^(?:FLUSH|ANALYZE|OPTIMIZE|REPAIR|CHECK)\b/i;

/** The database of the statement's first qualified name (`db`.t, db.t), if any. */
function firstQualifier(text: string): string | undefined {
  const m = /(?:`((?:[^`]|``)+)`|([A-Za-z0-9_$]+))\s*\.\s*[`A-Za-z0-9_$]/.exec(text);
  if (!m) return undefined;
  return m[1] !== undefined ? m[1].replaceAll("``", "`") : m[2];
}

/**
 * Whether a statement logged without a default database is one the replay
 * leaves out whatever the filter: an account or maintenance statement, or
 * one whose first qualified name is a system database.
 */
function systemStatement(statement: Buffer): boolean {
  const text = leadingText(statement);
  if (ACCOUNT_STATEMENT.test(text) || MAINTENANCE_STATEMENT.test(text)) return true;
  const qualifier = firstQualifier(text);
  return qualifier !== undefined && SYSTEM_DATABASES.has(qualifier.toLowerCase());
}

/** A statement's kind for messages: its first two words ("DROP TABLE"), never its names or values. */
export function statementKind(statement: Buffer): string {
  return leadingText(statement).split(/\s+/, 2).join(" ").replace(/[^A-Za-z ]/g, "").toUpperCase() || "(empty statement)";
}

/**
 * A Query event a database filter cannot attribute: no default database, and
 * not one the replay leaves out anyway (systemStatement, BEGIN/COMMIT).
 */
export function isUnattributed(query: QueryEvent): boolean {
  return query.database === "" && queryKind(query.statement) === "other" && !systemStatement(query.statement);
}

function queryKind(statement: Buffer): "begin" | "commit" | "rollback" | "other" {
  const text = leadingText(statement).toUpperCase();
  if (/^(BEGIN|START\s+TRANSACTION)\b/.test(text)) return "begin";
  if (/^COMMIT\b/.test(text)) return "commit";
  if (/^ROLLBACK\b/.test(text) && !/^ROLLBACK\s+TO\b/.test(text)) return "rollback";
  return "other";
}

/** `SET @@session.x=…` for the variables that changed since the session last heard of them. */
function setVars(state: SessionState, values: [name: string, value: string][]): ReplayStatement[] {
  const changed = values.filter(([name, value]) => state.vars.get(name) !== value);
  if (changed.length === 0) return [];
  for (const [name, value] of changed) state.vars.set(name, value);
  return [{ sql: `SET ${changed.map(([name, value]) => `@@session.${name}=${value}`).join(", ")}` }];
}

/** A string literal for a SET (quote and backslash escaped; the value is ASCII: a time zone name or offset). */
function stringLiteral(value: string): string {
  return `'${value.replace(/[\\']/g, (c) => `\\${c}`)}'`;
}

/** The context statements of a Query event, then the statement itself. */
function queryStatements(event: BinlogEvent, query: QueryEvent, state: SessionState): ReplayStatement[] {
  const out: ReplayStatement[] = [];
  // CREATE/ALTER/DROP DATABASE name their database as the event's default one (for filters) but flag it not to be USEd: it may not exist.
  const suppressUse = (event.header.flags & LOG_EVENT_SUPPRESS_USE_F) !== 0;
  if (query.database !== "" && !suppressUse && state.database !== query.database) {
    out.push({ sql: sqlBytes(`USE ${quoteIdentifier(query.database)}`) });
    state.database = query.database;
    // USE sets collation_database to the database's own.
    state.vars.delete("collation_database");
  }
  const timestamp = query.status.microseconds !== undefined ? `${event.header.timestamp}.${String(query.status.microseconds).padStart(6, "0")}` : String(event.header.timestamp);
  if (state.timestamp !== timestamp) {
    out.push({ sql: `SET TIMESTAMP=${timestamp}` });
    state.timestamp = timestamp;
  }
  const s = query.status;
  const vars: [string, string][] = [];
  if (s.flags2 !== undefined) {
    vars.push(["foreign_key_checks", s.flags2 & OPTION_NO_FOREIGN_KEY_CHECKS ? "0" : "1"]);
    vars.push(["unique_checks", s.flags2 & OPTION_RELAXED_UNIQUE_CHECKS ? "0" : "1"]);
    vars.push(["sql_auto_is_null", s.flags2 & OPTION_AUTO_IS_NULL ? "1" : "0"]);
  }
  if (s.sqlMode !== undefined) vars.push(["sql_mode", String(s.sqlMode)]);
  if (s.autoIncrement) vars.push(["auto_increment_increment", String(s.autoIncrement.increment)], ["auto_increment_offset", String(s.autoIncrement.offset)]);
  if (s.charset) vars.push(["character_set_client", String(s.charset.client)], ["collation_connection", String(s.charset.connection)], ["collation_server", String(s.charset.server)]);
  if (s.timeZone !== undefined) vars.push(["time_zone", stringLiteral(s.timeZone)]);
  if (s.lcTimeNames !== undefined) vars.push(["lc_time_names", String(s.lcTimeNames)]);
  if (s.collationDatabase !== undefined) vars.push(["collation_database", String(s.collationDatabase)]);
  out.push(...setVars(state, vars));
  out.push({ sql: query.statement.toString("latin1"), ...(query.errorCode !== 0 ? { expectedError: query.errorCode } : {}) });
  // DROP DATABASE of the current database leaves the session without one.
  if (/^DROP\s+(DATABASE|SCHEMA)\b/i.test(leadingText(query.statement))) state.database = undefined;
  return out;
}

/** The SET of an Intvar event (INSERT_ID or LAST_INSERT_ID for the statement after it). */
export function intvarStatement(event: BinlogEvent): ReplayStatement {
  const type = event.raw.readUInt8(HEADER_LENGTH);
  const value = event.raw.readBigUInt64LE(HEADER_LENGTH + 1);
  if (type === 1) return { sql: `SET LAST_INSERT_ID=${value}` };
  if (type === 2) return { sql: `SET INSERT_ID=${value}` };
  throw new ReplayUnsupportedError(`an Intvar event of type ${type} is not known`);
}

/** The SET of a Rand event (the seeds of RAND() in the statement after it). */
export function randStatement(event: BinlogEvent): ReplayStatement {
  return { sql: `SET @@RAND_SEED1=${event.raw.readBigUInt64LE(HEADER_LENGTH)}, @@RAND_SEED2=${event.raw.readBigUInt64LE(HEADER_LENGTH + 8)}` };
}

const DIG2BYTES = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];

/** A DECIMAL in the server's binary form (my_decimal's decimal2bin) as text. */
export function decodeDecimal(bytes: Buffer, precision: number, scale: number): string {
  const intg = precision - scale;
  const intg0 = Math.floor(intg / 9);
  const intgx = intg % 9;
  const frac0 = Math.floor(scale / 9);
  const fracx = scale % 9;
  const size = intg0 * 4 + (DIG2BYTES[intgx] as number) + frac0 * 4 + (DIG2BYTES[fracx] as number);
  if (bytes.length < size) throw new BinlogFormatError(`a DECIMAL(${precision},${scale}) value needs ${size} bytes, ${bytes.length} given`);
  const b = Buffer.from(bytes.subarray(0, size));
  const negative = ((b[0] as number) & 0x80) === 0;
  b[0] = (b[0] as number) ^ 0x80;
  if (negative) for (let i = 0; i < b.length; i++) b[i] = (b[i] as number) ^ 0xff;
  let at = 0;
  const read = (n: number): number => {
    const v = n === 0 ? 0 : b.readUIntBE(at, n);
    at += n;
    return v;
  };
  let integer = "";
  if (intgx > 0) integer += String(read(DIG2BYTES[intgx] as number));
  for (let i = 0; i < intg0; i++) integer += String(read(4)).padStart(9, "0");
  let fraction = "";
  for (let i = 0; i < frac0; i++) fraction += String(read(4)).padStart(9, "0");
  if (fracx > 0) fraction += String(read(DIG2BYTES[fracx] as number)).padStart(fracx, "0");
  integer = integer.replace(/^0+(?=\d)/, "") || "0";
  return `${negative ? "-" : ""}${integer}${fraction ? `.${fraction}` : ""}`;
}

/** The SET of a User_var event (an @variable the statement after it reads). */
export function userVarStatement(event: BinlogEvent, format: FormatDescription, collations: CollationNames): ReplayStatement {
  const { raw } = event;
  const end = raw.length - (format.checksum ? 4 : 0);
  let at = HEADER_LENGTH;
  const nameLength = raw.readUInt32LE(at);
  const name = raw.subarray(at + 4, at + 4 + nameLength).toString("utf8");
  at += 4 + nameLength;
  const target = `SET @${quoteIdentifier(name)} := `;
  const isNull = raw.readUInt8(at) !== 0;
  at += 1;
  if (isNull) return { sql: sqlBytes(`${target}NULL`) };
  const type = raw.readUInt8(at);
  const charsetId = raw.readUInt32LE(at + 1);
  const length = raw.readUInt32LE(at + 5);
  at += 9;
  const value = raw.subarray(at, at + length);
  const flags = at + length < end ? raw.readUInt8(at + length) : 0;
  switch (type) {
    case 0: {
      // STRING_RESULT
      const names = collations.get(charsetId);
      if (!names || !/^\w+$/.test(names.charset) || !/^\w+$/.test(names.collation)) throw new ReplayUnsupportedError(`user variable @${name} has collation ${charsetId}, which the target server does not know`);
      return { sql: sqlBytes(`${target}_${names.charset} X'${value.toString("hex")}' COLLATE ${quoteIdentifier(names.collation)}`) };
    }
    case 1: {
      // REAL_RESULT
      const n = value.readDoubleLE(0);
      const text = String(n);
      return { sql: `${target}${/[e.]/.test(text) ? text : `${text}e0`}` };
    }
    case 2: // INT_RESULT (flag 1: unsigned)
      return { sql: sqlBytes(`${target}${flags & 1 ? value.readBigUInt64LE(0) : value.readBigInt64LE(0)}`) };
    case 4: // DECIMAL_RESULT: precision, scale, the binary decimal
      return { sql: sqlBytes(`${target}${decodeDecimal(value.subarray(2), value.readUInt8(0), value.readUInt8(1))}`) };
    default:
      throw new ReplayUnsupportedError(`user variable @${name} has value type ${type}, which a replay does not support`);
  }
}

/** The statements of one transaction, or none when nothing of it is replayed (filtered out). */
export function transactionStatements(tx: Transaction, state: SessionState, options: TranslateOptions): ReplayStatement[] {
  const { format } = tx;
  const gtid = formatGtid(tx.gtid);
  if (tx.flags & (GtidFlag.PREPARED_XA | GtidFlag.COMPLETED_XA)) throw new ReplayUnsupportedError(`transaction ${gtid} is an XA transaction, which a replay does not support yet`);
  const standalone = (tx.flags & GtidFlag.STANDALONE) !== 0;
  const body: ReplayStatement[] = [];
  let ending: ReplayStatement | undefined;
  // Intvar/Rand/User_var events wait for the statement they belong to.
  let prefix: ReplayStatement[] = [];
  // A row statement: its Table_maps and rows events, up to the one flagged STMT_END.
  const tables = new Map<number, string>();
  let rows: BinlogEvent[] = [];
  const flushRows = (): void => {
    const kept = rows.filter((e) => {
      const database = tables.get(tableIdOf(e, format).id);
      return database !== undefined && replaysDatabase(database, options.databases);
    });
    rows = [];
    const maps = kept.filter((e) => e.header.type === EventType.TABLE_MAP).map((e) => e.raw);
    const changes = kept.filter((e) => e.header.type !== EventType.TABLE_MAP);
    if (changes.length === 0) return;
    // One BINLOG per row statement, cut into several when large: a statement that changes many rows
    // has many rows events, and a BINLOG statement must fit the target's max_allowed_packet. Each
    // part repeats the statement's Table_maps and ends with STMT_END: the server forgets the table
    // ids at the end of every BINLOG statement, and silently skips rows of a table id it does not
    // know (as a replica does for a filtered table) — a part without its Table_maps would be lost.
    const limit = options.maxBinlogBytes ?? defaultMaxBinlogBytes;
    const mapBytes = maps.reduce((n, m) => n + m.length, 0);
    let part: BinlogEvent[] = [];
    let bytes = mapBytes;
    const flushPart = (): void => {
      const raws = part.map((e) => e.raw);
      const last = part.length - 1;
      const { flagsAt } = tableIdOf(part[last] as BinlogEvent, format);
      // Filtered or cut, each part ends where the server closes the statement's tables.
      if (!((raws[last] as Buffer).readUInt16LE(flagsAt) & STMT_END_F)) {
        const copy = Buffer.from(raws[last] as Buffer);
        copy.writeUInt16LE(copy.readUInt16LE(flagsAt) | STMT_END_F, flagsAt);
        if (format.checksum) writeChecksum(copy);
        raws[last] = copy;
      }
      body.push({ sql: binlogStatement([...maps, ...raws]) });
      part = [];
      bytes = mapBytes;
    };
    for (const e of changes) {
      if (part.length > 0 && bytes + e.raw.length > limit) flushPart();
      part.push(e);
      bytes += e.raw.length;
    }
    flushPart();
  };
  for (const event of tx.events.slice(1)) {
    const type = event.header.type;
    if (type === EventType.TABLE_MAP) {
      const map = parseTableMap(event, format);
      tables.set(map.tableId, map.database);
      rows.push(event);
    } else if (ROWS_EVENTS.has(type)) {
      rows.push(event);
      if (event.raw.readUInt16LE(tableIdOf(event, format).flagsAt) & STMT_END_F) flushRows();
    } else if (type === EventType.ANNOTATE_ROWS) {
      // The statement text of the rows after it: a comment for the reader.
    } else if (type === EventType.INTVAR) {
      prefix.push(intvarStatement(event));
    } else if (type === EventType.RAND) {
      prefix.push(randStatement(event));
    } else if (type === EventType.USER_VAR) {
      prefix.push(userVarStatement(event, format, options.collations));
    } else if (type === EventType.QUERY) {
      const query = parseQueryEvent(event, format);
      const kind = queryKind(query.statement);
      if (kind === "begin") continue;
      if (kind === "commit" || kind === "rollback") {
        ending = { sql: kind === "commit" ? "COMMIT" : "ROLLBACK" };
        continue;
      }
      const replayed =
        query.database === ""
          ? isUnattributed(query) && (!options.databases || options.withoutDatabase === "replay")
          : replaysDatabase(query.database, options.databases) && !isAccountStatement(query.statement);
      if (replayed) body.push(...prefix, ...queryStatements(event, query, state));
      prefix = [];
    } else if (type === EventType.XID) {
      ending = { sql: "COMMIT" };
    } else if (type === EventType.QUERY_COMPRESSED || (type >= 166 && type <= 172 && !ROWS_EVENTS.has(type))) {
      throw new ReplayUnsupportedError(`transaction ${gtid} has a compressed event (type ${type}, log_bin_compress), which a replay does not support yet`);
    } else {
      throw new ReplayUnsupportedError(`transaction ${gtid} has an event of type ${type}, which a replay does not know`);
    }
  }
  if (rows.length > 0) flushRows();
  if (body.length === 0) return [];
  const out: ReplayStatement[] = [];
  if (!state.format || !sameFormat(state.format, format)) {
    out.push({ sql: binlogStatement([format.event.raw]) });
    state.format = format;
  }
  if (standalone) return [...out, ...body];
  // The transaction's start time, as its GTID event (MariaDB's BEGIN) has it, for what its row events do not carry.
  const begin = tx.events[0] as BinlogEvent;
  const timestamp = String(begin.header.timestamp);
  const clock: ReplayStatement[] = [];
  if (state.timestamp !== timestamp) {
    clock.push({ sql: `SET TIMESTAMP=${timestamp}` });
    state.timestamp = timestamp;
  }
  // A transaction of one row statement is that statement, autocommitted: one round trip instead of three
  // (most OLTP transactions are one INSERT/UPDATE/DELETE). The server commits it at the statement's end.
  if (body.length === 1 && body[0]?.sql.startsWith("BINLOG ") && (ending?.sql ?? "COMMIT") === "COMMIT") return [...out, ...clock, body[0]];
  return [...out, ...clock, { sql: "BEGIN" }, ...body, ending ?? { sql: "COMMIT" }];
}
