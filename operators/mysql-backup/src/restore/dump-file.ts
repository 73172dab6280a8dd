// What a plain mysqldump/mariadb-dump file says about databases: made with
// --databases or --all-databases, it has `CREATE DATABASE` and `USE` before
// each database's objects. Following those is how a `databases` filter is
// applied to such a file (as `mariadb --one-database` does).
import type { Statement } from "./statements.ts";

/** Identifier text: `quoted` (backticks doubled inside) or bare. */
function identifier(raw: string): string {
  return raw.startsWith("`") ? raw.slice(1, -1).replaceAll("``", "`") : raw;
}

const identifierPattern = "(`(?:[^`]|``)+`|[^\\s;`/]+)";
const usePattern = new RegExp(`^USE\\s+${identifierPattern}\\s*$`, "i");
const createDatabasePattern = new RegExp(
  `^CREATE\\s+(?:DATABASE|SCHEMA)\\s+(?:/\\*!\\d+\\s*IF\\s+NOT\\s+EXISTS\\s*\\*/\\s*|IF\\s+NOT\\s+EXISTS\\s+)?${identifierPattern}`,
  "i",
);

/** `USE db` or `CREATE DATABASE db`: which, and the database's name. */
export function databaseStatement(statement: Statement): { kind: "use" | "create"; database: string } | undefined {
  const head = statement.sql.slice(0, 16).toUpperCase();
  if (!head.startsWith("USE") && !head.startsWith("CREATE")) return undefined;
  // Names are UTF-8 bytes in the latin1 form of the statement.
  const text = Buffer.from(statement.sql.length > 4096 ? statement.sql.slice(0, 4096) : statement.sql, "latin1").toString("utf8").trim();
  const use = usePattern.exec(text);
  if (use?.[1]) return { kind: "use", database: identifier(use[1]) };
  const create = createDatabasePattern.exec(text);
  if (create?.[1]) return { kind: "create", database: identifier(create[1]) };
  return undefined;
}

/**
 * Follows the current database through a dump and says which statements
 * belong to the wanted databases. Statements before the first USE (session
 * settings) always pass.
 */
export class DatabaseFilter {
  private readonly wanted: ReadonlySet<string> | undefined;
  private current: string | undefined;
  /** Every database the dump created or switched to, in order of appearance. */
  readonly seen: string[] = [];

  constructor(wanted: readonly string[] | undefined) {
    this.wanted = wanted && wanted.length > 0 ? new Set(wanted) : undefined;
  }

  accept(statement: Statement): boolean {
    const db = databaseStatement(statement);
    if (db) {
      if (!this.seen.includes(db.database)) this.seen.push(db.database);
      if (db.kind === "use") this.current = db.database;
      return this.wanted === undefined || this.wanted.has(db.database);
    }
    return this.wanted === undefined || this.current === undefined || this.wanted.has(this.current);
  }
}
