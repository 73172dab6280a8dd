// How rows become SQL. The server formats each row into one `(v1,v2,…)` tuple
// (SELECT CONCAT(...)): formatting values one by one in JavaScript is what
// made an early experiment of the backup engine 0.6× as fast as mariadb-dump.
// Shared: the backup engine dumps with it, the cluster operator seeds replicas.
// The client only joins tuples into multi-row INSERT statements.
//
// Each column type gets the expression that round-trips it exactly:
//   integers, DECIMAL, YEAR   the server's decimal text, unquoted
//   FLOAT, DOUBLE             CAST(… AS DOUBLE): the shortest text that reads
//                             back to the same double (a FLOAT widens to a
//                             double exactly; plain FLOAT text has 6 digits)
//   BIT                       b'0101…'
//   binary strings, BLOBs,    X'…' hex, so any byte survives any client; X''
//   spatial types             is the empty string
//   everything else           QUOTE(), converted to utf8mb4 first: text, ENUM,
//                             SET, JSON, dates and times (read with the session
//                             time zone at +00:00), INET6, UUID; with CR
//                             written as \r (see textExpression)
// NULL becomes the word NULL. The whole CONCAT is a binary string, so no
// character set conversion happens on the way to the client.
import { quoteIdentifier } from "./identifiers.ts";

export interface ColumnInfo {
  name: string;
  /** information_schema.COLUMNS.DATA_TYPE, e.g. "int", "varchar", "longblob". */
  dataType: string;
  /** CHARACTER_SET_NAME; null for types without one. */
  charset: string | null;
  /** A virtual or stored generated column: the server computes it, so it is never dumped. */
  generated: boolean;
}

export type ValueEncoding = "number" | "float" | "bit" | "hex" | "text";

const numberTypes = new Set(["tinyint", "smallint", "mediumint", "int", "integer", "bigint", "decimal", "numeric", "dec", "fixed", "year"]);
const floatTypes = new Set(["float", "double", "real", "double precision"]);
const hexTypes = new Set([
  "binary",
  "varbinary",
  "tinyblob",
  "blob",
  "mediumblob",
  "longblob",
  "geometry",
  "point",
  "linestring",
  "polygon",
  "multipoint",
  "multilinestring",
  "multipolygon",
  "geometrycollection",
  "geomcollection",
]);

export function valueEncoding(column: ColumnInfo): ValueEncoding {
  const type = column.dataType.toLowerCase();
  if (numberTypes.has(type)) return "number";
  if (floatTypes.has(type)) return "float";
  if (type === "bit") return "bit";
  if (hexTypes.has(type) || column.charset === "binary") return "hex";
  return "text";
}

/** The SQL expression that renders one value of `column` as a literal. */
export function valueExpression(column: ColumnInfo): string {
  const c = quoteIdentifier(column.name);
  switch (valueEncoding(column)) {
    case "number":
      return `IFNULL(${c},'NULL')`;
    case "float":
      return `IFNULL(CAST(${c} AS DOUBLE),'NULL')`;
    case "bit":
      return `IFNULL(CONCAT('b''',BIN(${c}),''''),'NULL')`;
    case "hex":
      return `IFNULL(CONCAT('X''',HEX(${c}),''''),'NULL')`;
    case "text": {
      const charset = column.charset?.toLowerCase();
      return textExpression(charset && charset !== "utf8mb4" ? `CONVERT(${c} USING utf8mb4)` : c);
    }
  }
}

/**
 * A string literal the stock `mariadb`/`mysql` client restores byte for
 * byte. QUOTE() escapes what the client would otherwise mangle — backslash,
 * quote, NUL (refused outside --binary-mode) and Ctrl-Z (end of file on
 * Windows) — but leaves CR and LF raw. The client reads its input line by
 * line: within a string it joins the lines again with LF, so a raw LF comes
 * back, but the CR before an LF is dropped with the line end ("a\r\nb" came
 * back "a\nb"). So CR is written as \r — one REPLACE on the server, in hex
 * so that no sql_mode changes its meaning; CR is never produced by QUOTE
 * itself, and QUOTE has doubled every backslash, so the \r is unambiguous.
 * LF stays raw: escaping it too would cost the server a second pass over
 * every text value for no byte that changes.
 */
export function textExpression(value: string): string {
  return `REPLACE(QUOTE(${value}),X'0D',X'5C72')`;
}

/** The columns that are dumped: all but generated ones, in table order. */
export function dumpedColumns(columns: readonly ColumnInfo[]): ColumnInfo[] {
  return columns.filter((c) => !c.generated);
}

/** SELECT list item that yields one `(…)` tuple per row, as a binary string. */
export function rowExpression(columns: readonly ColumnInfo[]): string {
  if (columns.length === 0) return "_binary'()'";
  const parts = columns.map(valueExpression).join(",',',");
  return `CONCAT(_binary'(',${parts},')')`;
}

/** "INSERT INTO `t` (`a`,`b`) VALUES\n": columns named, so generated ones are left to the server. */
export function insertPrefix(table: string, columns: readonly ColumnInfo[]): string {
  return `INSERT INTO ${quoteIdentifier(table)} (${columns.map((c) => quoteIdentifier(c.name)).join(",")}) VALUES\n`;
}
