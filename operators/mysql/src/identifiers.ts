// Identifiers in SQL text. Account names, hosts, databases and tables cannot
// be bound as `?` parameters in account statements (GRANT, CREATE USER, ...),
// so they are validated and then quoted as identifiers: wrapped in backticks,
// a backtick inside doubled. Backtick quoting does not depend on sql_mode
// (a backslash is an ordinary character inside backticks), which is why it is
// used even for the parts of an account name.

/** MySQL's limit on database and table names (characters). */
export const MAX_IDENTIFIER_LENGTH = 64;
/** MySQL 8's limit on user names; MariaDB allows more, the portable limit is MySQL's. */
export const MAX_USER_LENGTH = 32;
/** The limit on the host part of an account (MySQL 8.0.17+, MariaDB 10.4+). */
export const MAX_HOST_LENGTH = 255;

/** Why an identifier was refused. */
export class InvalidIdentifierError extends Error {
  override name = "InvalidIdentifierError";
}

/** C0 control characters and DEL (NUL included, which MySQL identifiers can never hold). */
function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}
// Characters outside the Basic Multilingual Plane: MySQL identifiers cannot hold them.
const ASTRAL = /[\u{10000}-\u{10ffff}]/u;

function checkText(what: string, value: string, max: number, opts: { allowEmpty?: boolean } = {}): void {
  if (typeof value !== "string") throw new InvalidIdentifierError(`${what} must be a string`);
  if (value === "" && !opts.allowEmpty) throw new InvalidIdentifierError(`${what} must not be empty`);
  if ([...value].length > max) throw new InvalidIdentifierError(`${what} ${JSON.stringify(value)} is longer than ${max} characters`);
  if (hasControl(value)) throw new InvalidIdentifierError(`${what} ${JSON.stringify(value)} contains a control character`);
  if (ASTRAL.test(value)) throw new InvalidIdentifierError(`${what} ${JSON.stringify(value)} contains a character outside the Basic Multilingual Plane`);
}

function backticks(value: string): string {
  return `\`${value.replaceAll("`", "``")}\``;
}

/** A database or table name as a quoted identifier; refuses what MySQL would (or could misread). */
export function quoteIdentifier(name: string, what = "identifier"): string {
  checkText(what, name, MAX_IDENTIFIER_LENGTH);
  if (name.endsWith(" ")) throw new InvalidIdentifierError(`${what} ${JSON.stringify(name)} ends with a space, which MySQL does not allow`);
  return backticks(name);
}

/** `user`@`host`, each part quoted. The host is a pattern by nature (`%`, `10.0.0.%`) and is kept as given. */
export function quoteAccount(user: string, host: string): string {
  checkText("user name", user, MAX_USER_LENGTH);
  checkText("host", host, MAX_HOST_LENGTH);
  return `${backticks(user)}@${backticks(host)}`;
}

/**
 * The name of a database as written in a database-level GRANT/REVOKE
 * (`ON db.*`), where `_` and `%` are wildcards: escaped with a backslash so
 * that the grant applies to exactly the database named. (At table level the
 * database name is literal, and this must not be applied.)
 */
export function databasePattern(name: string): string {
  return name.replace(/[\\_%]/g, "\\$&");
}

/**
 * How a grant's database is written in SQL (and how SHOW GRANTS prints it):
 * at database level (`table` is "*") the wildcard-escaped pattern, at table
 * level the literal name; "*" stays "*".
 */
export function databaseInGrant(database: string, table: string): string {
  if (database === "*") return "*";
  return table === "*" ? databasePattern(database) : database;
}

/**
 * The level of a grant in SQL: `*.*`, `` `db`.* `` or `` `db`.`table` ``.
 * `database` is in its SQL form (see `databaseInGrant`): a pattern at
 * database level, which may be up to twice as long as a name once escaped.
 */
export function grantLevelSql(database: string, table: string): string {
  if (database === "*") {
    if (table !== "*") throw new InvalidIdentifierError(`a global grant (database "*") cannot name table ${JSON.stringify(table)}`);
    return "*.*";
  }
  checkText("database name", database, MAX_IDENTIFIER_LENGTH * 2);
  if (table === "*") return `${backticks(database)}.*`;
  return `${quoteIdentifier(database, "database name")}.${quoteIdentifier(table, "table name")}`;
}

/** Privilege names go into SQL text as keywords: only upper-case words, spaces and underscores. */
export function checkPrivilegeKeyword(name: string): string {
  if (!/^[A-Z][A-Z_]*( [A-Z_]+)*$/.test(name)) throw new InvalidIdentifierError(`${JSON.stringify(name)} is not a privilege name`);
  return name;
}
