// The schema side of a backup: what a database contains (read from
// information_schema and SHOW CREATE), and the SQL of its two schema objects:
//
//   schema     CREATE DATABASE, sequences, tables, and a placeholder for every
//              view (a view with the same columns), so that views may refer to
//              each other in any order
//   post-data  routines, then the real views (which may call functions), then
//              triggers (after the data, so they do not fire on it), then events
//
// Every object is plain SQL a stock `mariadb`/`mysql` client applies: the
// bodies of routines, triggers and events sit between DELIMITER lines.
//
// Here: what a database contains; schema-objects.ts renders the SQL.
import { BackupError } from "../errors.ts";
import type { MySQLSession } from "./connection.ts";
import { SYSTEM_DATABASES, type ColumnInfo } from "@stateward/mysql";
import { qualifiedName, quoteIdentifier } from "./sql.ts";

/** Session settings at the top of every object; restored after each special section. */
export const sessionDefaults = {
  names: "utf8mb4",
  timeZone: "+00:00",
  sqlMode: "NO_AUTO_VALUE_ON_ZERO",
} as const;

export interface TableSchema {
  name: string;
  /** SHOW CREATE TABLE (or SHOW CREATE SEQUENCE). */
  createStatement: string;
  /** Storage engine, e.g. "InnoDB"; null if the server did not say. */
  engine: string | null;
  columns: ColumnInfo[];
  /** information_schema's estimate of the data size, to dump big tables first. */
  estimatedBytes: number;
  /** MariaDB system-versioned table: only current rows are dumped. */
  systemVersioned: boolean;
}

export interface SequenceSchema {
  name: string;
  createStatement: string;
  /** The value NEXTVAL returns next, to SETVAL after creating it. */
  nextValue: string;
}

/** Character set context an object was created in, replayed when it is recreated. */
export interface CreationContext {
  characterSetClient: string;
  collationConnection: string;
}

export interface ViewSchema extends CreationContext {
  name: string;
  columns: string[];
  createStatement: string;
}

export interface RoutineSchema extends CreationContext {
  type: "PROCEDURE" | "FUNCTION";
  name: string;
  createStatement: string;
  sqlMode: string;
}

export interface TriggerSchema extends CreationContext {
  name: string;
  table: string;
  createStatement: string;
  sqlMode: string;
}

export interface EventSchema extends CreationContext {
  name: string;
  createStatement: string;
  sqlMode: string;
  timeZone: string;
}

export interface DatabaseSchema {
  name: string;
  /** SHOW CREATE DATABASE */
  createStatement: string;
  tables: TableSchema[];
  sequences: SequenceSchema[];
  views: ViewSchema[];
  routines: RoutineSchema[];
  triggers: TriggerSchema[];
  events: EventSchema[];
}

type Row = Record<string, unknown>;

function text(row: Row | undefined, field: string, what: string): string {
  const v = row?.[field];
  if (typeof v === "string") return v;
  if (Buffer.isBuffer(v)) return v.toString("utf8");
  if (typeof v === "number") return String(v);
  throw new BackupError(
    "DatabaseAccessDenied",
    `could not read ${what}: the server returned no ${field} (the backup user may lack a privilege such as SHOW VIEW, TRIGGER, EVENT or SELECT on mysql.proc)`,
  );
}

function optionalText(row: Row, field: string): string | null {
  const v = row[field];
  if (typeof v === "string") return v;
  if (Buffer.isBuffer(v)) return v.toString("utf8");
  return null;
}

/** The user databases on the server, sorted by name. */
export async function listUserDatabases(session: MySQLSession): Promise<string[]> {
  const rows = await session.query<Row>("SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA", [], "list the databases");
  return rows
    .map((r) => text(r, "name", "the database list"))
    .filter((n) => !SYSTEM_DATABASES.has(n.toLowerCase()))
    .sort();
}

function isGenerated(row: Row): boolean {
  const expression = optionalText(row, "GENERATION_EXPRESSION");
  if (expression !== null && expression !== "") return true;
  // MariaDB also marks system-versioning period columns (ROW START/END) this way.
  if (optionalText(row, "IS_GENERATED") === "ALWAYS") return true;
  return /\b(VIRTUAL|STORED|PERSISTENT) GENERATED\b|\bROW (START|END)\b/i.test(optionalText(row, "EXTRA") ?? "");
}

/**
 * Everything about one database that the schema objects need. Reads
 * information_schema and SHOW CREATE, which are not part of any snapshot:
 * run it right after the snapshot is taken (DDL during a backup is not
 * supported by any logical dump, mariadb-dump's included).
 */
export async function describeDatabase(session: MySQLSession, database: string): Promise<DatabaseSchema> {
  const db = quoteIdentifier(database);
  // SHOW CREATE VIEW names tables of the current database without it, as
  // mariadb-dump's output does: the view then reads its own database's tables
  // wherever it is restored.
  await session.query(`USE ${db}`, [], `read database ${db}`);
  const [createDb] = await session.query<Row>(`SHOW CREATE DATABASE ${db}`, [], `read database ${db}`);
  const tableRows = await session.query<Row>(
    "SELECT TABLE_NAME AS name, TABLE_TYPE AS type, ENGINE AS engine, DATA_LENGTH AS bytes FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME",
    [database],
    `list the tables of ${db}`,
  );
  const columnRows = await session.query<Row>(
    "SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME, ORDINAL_POSITION",
    [database],
    `list the columns of ${db}`,
  );
  const columnsOf = new Map<string, ColumnInfo[]>();
  const viewColumnsOf = new Map<string, string[]>();
  for (const r of columnRows) {
    const table = text(r, "TABLE_NAME", "a column's table");
    const name = text(r, "COLUMN_NAME", "a column name");
    const list = columnsOf.get(table) ?? [];
    list.push({
      name,
      dataType: text(r, "DATA_TYPE", `the type of column ${name}`).toLowerCase(),
      charset: optionalText(r, "CHARACTER_SET_NAME"),
      generated: isGenerated(r),
    });
    columnsOf.set(table, list);
    const viewList = viewColumnsOf.get(table) ?? [];
    viewList.push(name);
    viewColumnsOf.set(table, viewList);
  }

  const schema: DatabaseSchema = {
    name: database,
    createStatement: text(createDb, "Create Database", `database ${db}`),
    tables: [],
    sequences: [],
    views: [],
    routines: [],
    triggers: [],
    events: [],
  };

  for (const t of tableRows) {
    const name = text(t, "name", "a table name");
    const type = text(t, "type", `the type of ${name}`);
    const qualified = qualifiedName(database, name);
    if (type === "VIEW") {
      const [row] = await session.query<Row>(`SHOW CREATE VIEW ${qualified}`, [], `read view ${qualified}`);
      schema.views.push({
        name,
        columns: viewColumnsOf.get(name) ?? [],
        createStatement: text(row, "Create View", `view ${qualified}`),
        characterSetClient: text(row, "character_set_client", `view ${qualified}`),
        collationConnection: text(row, "collation_connection", `view ${qualified}`),
      });
    } else if (type === "SEQUENCE") {
      const [row] = await session.query<Row>(`SHOW CREATE SEQUENCE ${qualified}`, [], `read sequence ${qualified}`);
      const [state] = await session.query<Row>(
        `SELECT next_not_cached_value AS next FROM ${qualified}`,
        [],
        `read sequence ${qualified}`,
      );
      schema.sequences.push({
        name,
        createStatement: text(row, "Create Table", `sequence ${qualified}`),
        nextValue: text(state, "next", `sequence ${qualified}`),
      });
    } else if (type === "BASE TABLE" || type === "SYSTEM VERSIONED") {
      const [row] = await session.query<Row>(`SHOW CREATE TABLE ${qualified}`, [], `read table ${qualified}`);
      const bytes = Number(optionalText(t, "bytes") ?? t.bytes ?? 0);
      schema.tables.push({
        name,
        createStatement: text(row, "Create Table", `table ${qualified}`),
        engine: optionalText(t, "engine"),
        columns: columnsOf.get(name) ?? [],
        estimatedBytes: Number.isFinite(bytes) ? bytes : 0,
        systemVersioned: type === "SYSTEM VERSIONED",
      });
    }
    // Temporary tables are session-local and never listed for other sessions.
  }

  const routineRows = await session.query<Row>(
    "SELECT ROUTINE_NAME AS name, ROUTINE_TYPE AS type FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ? ORDER BY ROUTINE_TYPE, ROUTINE_NAME",
    [database],
    `list the routines of ${db}`,
  );
  for (const r of routineRows) {
    const name = text(r, "name", "a routine name");
    const type = text(r, "type", `the type of routine ${name}`);
    if (type !== "PROCEDURE" && type !== "FUNCTION") {
      throw new BackupError("DatabaseError", `routine ${qualifiedName(database, name)} is a ${type}, which this backup cannot dump (only procedures and functions)`);
    }
    const qualified = qualifiedName(database, name);
    const [row] = await session.query<Row>(`SHOW CREATE ${type} ${qualified}`, [], `read ${type.toLowerCase()} ${qualified}`);
    schema.routines.push({
      type,
      name,
      createStatement: text(row, type === "PROCEDURE" ? "Create Procedure" : "Create Function", `${type.toLowerCase()} ${qualified}`),
      sqlMode: text(row, "sql_mode", `${type.toLowerCase()} ${qualified}`),
      characterSetClient: text(row, "character_set_client", `${type.toLowerCase()} ${qualified}`),
      collationConnection: text(row, "collation_connection", `${type.toLowerCase()} ${qualified}`),
    });
  }

  // ACTION_ORDER: triggers of one table, timing and event are recreated in
  // the order they fire.
  const triggerRows = await session.query<Row>(
    "SELECT TRIGGER_NAME AS name, EVENT_OBJECT_TABLE AS tbl FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? ORDER BY EVENT_OBJECT_TABLE, ACTION_TIMING, EVENT_MANIPULATION, ACTION_ORDER",
    [database],
    `list the triggers of ${db}`,
  );
  for (const r of triggerRows) {
    const name = text(r, "name", "a trigger name");
    const qualified = qualifiedName(database, name);
    const [row] = await session.query<Row>(`SHOW CREATE TRIGGER ${qualified}`, [], `read trigger ${qualified}`);
    schema.triggers.push({
      name,
      table: text(r, "tbl", `the table of trigger ${qualified}`),
      createStatement: text(row, "SQL Original Statement", `trigger ${qualified}`),
      sqlMode: text(row, "sql_mode", `trigger ${qualified}`),
      characterSetClient: text(row, "character_set_client", `trigger ${qualified}`),
      collationConnection: text(row, "collation_connection", `trigger ${qualified}`),
    });
  }

  const eventRows = await session.query<Row>(
    "SELECT EVENT_NAME AS name FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ? ORDER BY EVENT_NAME",
    [database],
    `list the events of ${db}`,
  );
  for (const r of eventRows) {
    const name = text(r, "name", "an event name");
    const qualified = qualifiedName(database, name);
    const [row] = await session.query<Row>(`SHOW CREATE EVENT ${qualified}`, [], `read event ${qualified}`);
    schema.events.push({
      name,
      createStatement: text(row, "Create Event", `event ${qualified}`),
      sqlMode: text(row, "sql_mode", `event ${qualified}`),
      timeZone: text(row, "time_zone", `event ${qualified}`),
      characterSetClient: text(row, "character_set_client", `event ${qualified}`),
      collationConnection: text(row, "collation_connection", `event ${qualified}`),
    });
  }
  return schema;
}
