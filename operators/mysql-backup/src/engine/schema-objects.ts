// The SQL of a database's two schema objects (see schema.ts for what each
// holds), rendered from what describeDatabase read. Every object is plain SQL
// a stock `mariadb`/`mysql` client applies: the bodies of routines, triggers
// and events sit between DELIMITER lines.
import { BackupError } from "../errors.ts";
import { viewPlaceholder } from "@stateward/mysql";
import { charsetName, qualifiedName, quoteIdentifier, stringLiteral } from "./sql.ts";
import { sessionDefaults, type CreationContext, type DatabaseSchema } from "./schema.ts";

/** A `-- ` comment line; identifiers may contain line breaks, comments may not. */
function comment(textLine: string): string {
  return `-- ${textLine.replace(/[\r\n]+/g, " ")}\n`;
}

/** The session settings every object starts with (and returns to after special sections). */
export function objectHeader(title: string): string {
  return (
    comment(`Stateward MySQL backup: ${title}`) +
    comment("Plain SQL for any mysql/mariadb client; apply the objects in manifest order.") +
    `SET NAMES ${sessionDefaults.names};\n` +
    `SET TIME_ZONE='${sessionDefaults.timeZone}';\n` +
    "SET FOREIGN_KEY_CHECKS=0;\n" +
    "SET UNIQUE_CHECKS=0;\n" +
    `SET SQL_MODE='${sessionDefaults.sqlMode}';\n` +
    "SET SQL_NOTES=0;\n"
  );
}

const delimiterCandidates = [";;", "$$", "//", ";;;", "$$$", "///"];

/**
 * A DELIMITER for a compound statement: `;;` as mariadb-dump uses, unless the
 * body contains it (say, in a string), in which case the next that it does not.
 */
export function delimiterFor(statement: string): string {
  const found = delimiterCandidates.find((d) => !statement.includes(d));
  if (found === undefined) throw new BackupError("DatabaseError", "no usable DELIMITER for a routine body that contains all of ;; $$ // ;;; $$$ ///");
  return found;
}

/**
 * SET statements that recreate an object's character set context. The
 * statement text itself travels as utf8mb4, so a non-UTF-8 client character
 * set is only replayed when the text is ASCII (where both read the same);
 * otherwise utf8mb4 stays, and a warning says so.
 */
function creationContext(ctx: CreationContext, statement: string, what: string, warnings: string[]): string {
  let client = charsetName(ctx.characterSetClient, "character set");
  const collation = charsetName(ctx.collationConnection, "collation");
  // eslint-disable-next-line no-control-regex -- ASCII is exactly the range \x00-\x7f
  const ascii = /^[\x00-\x7f]*$/.test(statement);
  if (!ascii && !/^utf8/i.test(client)) {
    warnings.push(`${what} was created with character_set_client ${client}; it is recreated with utf8mb4`);
    client = sessionDefaults.names;
  }
  return `SET character_set_client = ${client};\nSET character_set_results = ${client};\nSET collation_connection = ${collation};\n`;
}

/** A compound statement between DELIMITER lines, under its own sql_mode, then back to the defaults. */
function compound(statement: string, sqlMode: string): string {
  const d = delimiterFor(statement);
  // sql_mode last: it may switch backslash escapes off, which changes how
  // every later literal would be read.
  return (
    `SET SQL_MODE = ${stringLiteral(sqlMode)};\n` +
    `DELIMITER ${d}\n${statement} ${d}\nDELIMITER ;\n` +
    `SET SQL_MODE='${sessionDefaults.sqlMode}';\n` +
    `SET NAMES ${sessionDefaults.names};\n`
  );
}

/** `CREATE DATABASE` → `CREATE DATABASE IF NOT EXISTS`, so restoring into an existing database works. */
function createDatabaseIfNotExists(statement: string): string {
  return statement.replace(/^CREATE DATABASE (?!IF NOT EXISTS)/i, "CREATE DATABASE IF NOT EXISTS ");
}

/** The schema object of a database: statements, in order. */
export function renderSchemaObject(schema: DatabaseSchema): string[] {
  const db = quoteIdentifier(schema.name);
  const out: string[] = [objectHeader(`schema of database ${db}`)];
  out.push(`${createDatabaseIfNotExists(schema.createStatement)};\n`, `USE ${db};\n`);
  for (const s of schema.sequences) {
    const name = quoteIdentifier(s.name);
    out.push(`\nDROP SEQUENCE IF EXISTS ${name};\n${s.createStatement};\n`);
    // Only digits and a sign come back from the server; checked all the same.
    if (!/^-?\d+$/.test(s.nextValue)) throw new BackupError("DatabaseError", `sequence ${name} reported a next value that is not a number`);
    out.push(`DO SETVAL(${name}, ${s.nextValue}, 0);\n`);
  }
  for (const t of schema.tables) {
    const name = quoteIdentifier(t.name);
    out.push(`\nDROP TABLE IF EXISTS ${name};\n${t.createStatement};\n`);
  }
  for (const v of schema.views) {
    // A stand-in with the view's columns; post-data replaces it.
    const name = quoteIdentifier(v.name);
    out.push(`\nDROP TABLE IF EXISTS ${name};\nDROP VIEW IF EXISTS ${name};\n${viewPlaceholder(v.name, v.columns)};\n`);
  }
  return out;
}

/** True when the database has anything for a post-data object. */
export function hasPostData(schema: DatabaseSchema): boolean {
  return schema.routines.length + schema.views.length + schema.triggers.length + schema.events.length > 0;
}

/** The post-data object of a database: statements, in order, plus warnings. */
export function renderPostDataObject(schema: DatabaseSchema): { statements: string[]; warnings: string[] } {
  const db = quoteIdentifier(schema.name);
  const warnings: string[] = [];
  const out: string[] = [objectHeader(`routines, views, triggers and events of database ${db}`), `USE ${db};\n`];
  for (const r of schema.routines) {
    const name = quoteIdentifier(r.name);
    const what = `${r.type.toLowerCase()} ${qualifiedName(schema.name, r.name)}`;
    out.push(`\nDROP ${r.type} IF EXISTS ${name};\n`, creationContext(r, r.createStatement, what, warnings), compound(r.createStatement, r.sqlMode));
  }
  for (const v of schema.views) {
    const name = quoteIdentifier(v.name);
    const what = `view ${qualifiedName(schema.name, v.name)}`;
    out.push(
      `\nDROP TABLE IF EXISTS ${name};\nDROP VIEW IF EXISTS ${name};\n`,
      creationContext(v, v.createStatement, what, warnings),
      `${v.createStatement};\nSET NAMES ${sessionDefaults.names};\n`,
    );
  }
  for (const t of schema.triggers) {
    const name = quoteIdentifier(t.name);
    const what = `trigger ${qualifiedName(schema.name, t.name)}`;
    out.push(`\nDROP TRIGGER IF EXISTS ${name};\n`, creationContext(t, t.createStatement, what, warnings), compound(t.createStatement, t.sqlMode));
  }
  for (const e of schema.events) {
    const name = quoteIdentifier(e.name);
    const what = `event ${qualifiedName(schema.name, e.name)}`;
    out.push(
      `\nDROP EVENT IF EXISTS ${name};\n`,
      // An event's schedule is read in its own time zone.
      `SET TIME_ZONE = ${stringLiteral(e.timeZone)};\n`,
      creationContext(e, e.createStatement, what, warnings),
      compound(e.createStatement, e.sqlMode),
      `SET TIME_ZONE='${sessionDefaults.timeZone}';\n`,
    );
  }
  return { statements: out, warnings };
}
