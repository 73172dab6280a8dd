// Quoting for the SQL the engine writes. Identifiers come from the server
// (or from a user's `databases` list) and are validated, then quoted with
// backticks doubled; the few values written into objects (sql_mode, time
// zone, collation names read from the server) are escaped string literals.
import { BackupError } from "../errors.ts";

/** MySQL's limit for database, table, column and routine names, in characters. */
const maxIdentifierLength = 64;

/**
 * Refuses names MySQL itself would refuse, so a bad name in the options fails
 * with a clear message instead of a syntax error deep inside a dump.
 */
export function validateIdentifier(name: string, what: string): void {
  if (name === "") throw new BackupError("InvalidOptions", `${what} name is empty`);
  if ([...name].length > maxIdentifierLength) {
    throw new BackupError("InvalidOptions", `${what} name "${name}" is longer than ${maxIdentifierLength} characters`);
  }
  if (name.includes("\0")) throw new BackupError("InvalidOptions", `${what} name contains a NUL character`);
  if (name.endsWith(" ")) throw new BackupError("InvalidOptions", `${what} name "${name}" ends with a space`);
}

/** `name` as a quoted identifier: backticks around it, inner backticks doubled. */
export function quoteIdentifier(name: string): string {
  if (name.includes("\0")) throw new BackupError("InvalidOptions", "an identifier contains a NUL character");
  return `\`${name.replaceAll("`", "``")}\``;
}

/** `db`.`table` */
export function qualifiedName(database: string, name: string): string {
  return `${quoteIdentifier(database)}.${quoteIdentifier(name)}`;
}

const literalEscapes: Readonly<Record<string, string>> = {
  "\\": "\\\\",
  "'": "\\'",
  "\0": "\\0",
  "\n": "\\n",
  "\r": "\\r",
  "\x1a": "\\Z",
};

/**
 * A single-quoted string literal. Valid wherever backslash escapes are on,
 * which every object guarantees by setting its own sql_mode first.
 */
export function stringLiteral(value: string): string {
  // eslint-disable-next-line no-control-regex -- NUL and Ctrl-Z are exactly what must be escaped
  return `'${value.replace(/[\\'\0\n\r\x1a]/g, (c) => literalEscapes[c] ?? c)}'`;
}

/** Character set and collation names are plain words; anything else is not one. */
export function charsetName(value: string, what: string): string {
  if (!/^[A-Za-z0-9_]+$/.test(value)) throw new BackupError("DatabaseError", `the server reported an unusable ${what} "${value}"`);
  return value;
}
