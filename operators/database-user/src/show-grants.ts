// Reading SHOW GRANTS. Each line is a GRANT statement as the server would
// accept it back; the formats differ in details between MariaDB and MySQL 8
// (MariaDB adds IDENTIFIED BY PASSWORD and resource limits to the USAGE line,
// MySQL 8 lists dynamic privileges on a line of their own, comma-separated
// without spaces), so the line is tokenized — quoted identifiers may contain
// anything, including " ON " or " TO " — rather than matched with a regex.

/** A privilege grant on `*.*`, `db.*` or `db.table`. */
export interface ObjectGrant {
  kind: "object";
  /** Upper-case privilege names as printed ("SELECT", "ALL PRIVILEGES", "BACKUP_ADMIN"); USAGE is dropped. */
  privileges: string[];
  /** Column-level privileges on the line ("SELECT (`a`, `b`)"), by privilege name; not managed by Stateward. */
  columnPrivileges: string[];
  /** "*" for a global grant; otherwise unquoted, as stored: a pattern (`a\_b`) at database level, a name at table level. */
  database: string;
  /** "*" for a database-level or global grant. */
  table: string;
  grantOption: boolean;
}

/** A line that is not an object grant: a role, PROXY, a routine (PROCEDURE/FUNCTION/PACKAGE), a partial revoke. */
export interface OtherGrant {
  kind: "other";
  line: string;
}

export type ParsedGrant = ObjectGrant | OtherGrant;

type Token =
  | { t: "word"; v: string }
  | { t: "ident"; v: string }
  | { t: "string"; v: string }
  | { t: "punct"; v: string };

export class ShowGrantsParseError extends Error {
  override name = "ShowGrantsParseError";
}

function tokenize(line: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < line.length) {
    const c = line[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === "`" || c === '"') {
      // Quoted identifier (backticks, or double quotes under ANSI_QUOTES); the quote doubled inside.
      let v = "";
      i++;
      for (;;) {
        if (i >= line.length) throw new ShowGrantsParseError(`unterminated identifier in ${JSON.stringify(line)}`);
        if (line[i] === c) {
          if (line[i + 1] === c) {
            v += c;
            i += 2;
            continue;
          }
          i++;
          break;
        }
        v += line[i];
        i++;
      }
      tokens.push({ t: "ident", v });
    } else if (c === "'") {
      // A string literal (host parts, password hashes): '' or \' inside.
      let v = "";
      i++;
      for (;;) {
        if (i >= line.length) throw new ShowGrantsParseError(`unterminated string in ${JSON.stringify(line)}`);
        const d = line[i]!;
        if (d === "\\" && i + 1 < line.length) {
          v += line[i + 1];
          i += 2;
          continue;
        }
        if (d === "'") {
          if (line[i + 1] === "'") {
            v += "'";
            i += 2;
            continue;
          }
          i++;
          break;
        }
        v += d;
        i++;
      }
      tokens.push({ t: "string", v });
    } else if (/[A-Za-z0-9_$]/.test(c)) {
      let v = "";
      while (i < line.length && /[A-Za-z0-9_$]/.test(line[i]!)) v += line[i++];
      tokens.push({ t: "word", v });
    } else {
      tokens.push({ t: "punct", v: c });
      i++;
    }
  }
  return tokens;
}

const isWord = (tok: Token | undefined, word: string): boolean => tok?.t === "word" && tok.v.toUpperCase() === word;
const isPunct = (tok: Token | undefined, p: string): boolean => tok?.t === "punct" && tok.v === p;

/** Parses one line of SHOW GRANTS output. */
export function parseGrantLine(line: string): ParsedGrant {
  const other: OtherGrant = { kind: "other", line };
  const tokens = tokenize(line);
  let i = 0;
  if (!isWord(tokens[i], "GRANT")) return other; // e.g. MySQL 8's partial revokes ("REVOKE ... FROM")
  i++;

  // Privilege list: items of words, each optionally followed by a column list, up to ON.
  const privileges: string[] = [];
  const columnPrivileges: string[] = [];
  for (;;) {
    const words: string[] = [];
    while (tokens[i]?.t === "word" && !(isWord(tokens[i], "ON") && words.length > 0)) {
      words.push(tokens[i]!.v.toUpperCase());
      i++;
    }
    if (words.length === 0) return other; // a role grant: GRANT `role`@`%` TO ...
    const name = words.join(" ");
    if (isPunct(tokens[i], "(")) {
      while (i < tokens.length && !isPunct(tokens[i], ")")) i++;
      if (i >= tokens.length) throw new ShowGrantsParseError(`unterminated column list in ${JSON.stringify(line)}`);
      i++;
      columnPrivileges.push(name);
    } else {
      privileges.push(name);
    }
    if (isPunct(tokens[i], ",")) {
      i++;
      continue;
    }
    break;
  }
  if (!isWord(tokens[i], "ON")) return other;
  i++;
  if (privileges.includes("PROXY")) return other;

  // Object: [TABLE] (* | ident) [. (* | ident)]; PROCEDURE/FUNCTION/PACKAGE [BODY] are routine grants.
  if (isWord(tokens[i], "TABLE")) i++;
  else if (["PROCEDURE", "FUNCTION", "PACKAGE"].some((w) => isWord(tokens[i], w))) return other;
  const part = (tok: Token | undefined): string | undefined => {
    if (isPunct(tok, "*")) return "*";
    if (tok?.t === "ident") return tok.v;
    if (tok?.t === "word") return tok.v; // an unquoted name
    return undefined;
  };
  const first = part(tokens[i]);
  if (first === undefined) throw new ShowGrantsParseError(`cannot read the object of ${JSON.stringify(line)}`);
  i++;
  if (!isPunct(tokens[i], ".")) return other; // `ON *` or `ON tbl`: relative to a current database
  i++;
  const second = part(tokens[i]);
  if (second === undefined) throw new ShowGrantsParseError(`cannot read the object of ${JSON.stringify(line)}`);
  i++;
  if (first === "*" && second !== "*") throw new ShowGrantsParseError(`unexpected object *.${second} in ${JSON.stringify(line)}`);
  if (!isWord(tokens[i], "TO")) throw new ShowGrantsParseError(`expected TO in ${JSON.stringify(line)}`);
  i++;

  // After the account: IDENTIFIED BY ..., REQUIRE ..., WITH [GRANT OPTION] [resource limits].
  let grantOption = false;
  for (let j = i; j < tokens.length - 1; j++) {
    if (isWord(tokens[j], "GRANT") && isWord(tokens[j + 1], "OPTION")) grantOption = true;
  }
  return {
    kind: "object",
    privileges: privileges.filter((p) => p !== "USAGE"),
    columnPrivileges,
    database: first,
    table: second,
    grantOption,
  };
}

/** Parses every line of SHOW GRANTS; see `parseGrantLine`. */
export function parseShowGrants(lines: readonly string[]): ParsedGrant[] {
  return lines.map(parseGrantLine);
}
