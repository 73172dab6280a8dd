// Staged restores: each restored database is first built in a staging
// database of its own, and the target is changed only once every object was
// verified and applied there, by one atomic RENAME TABLE that moves the
// target's tables of the same names aside and the staged ones in.
//
// Names are derived from the restore's run id, so a later attempt (or the
// MySQLRestore's deletion) finds and drops the staging databases a killed run
// left behind (a later attempt refuses to run over its replaced tables):
//
//   stw_restore_<token>_<n>    the staging database of the n-th restored database
//   stw_replaced_<token>       the holding database the replaced tables move to,
//                              each as <n>_<its name>
//   stw_replaced_<token>_<n>_<its name>
//                              a replaced table with triggers, moved aside in its
//                              own database
// (a name longer than MySQL's 64 characters is cut; <n> keeps it unique).
//
// The replaced tables are the target's data as it was before the restore:
// they are dropped when the restore completes, and kept when it stops after
// the swap (cleanUpRestore) — the restored tables are then in place but
// views, routines, triggers or events of the backup may be missing, and the
// user may want the old data back.
//
// Where a replaced table goes: MySQL and MariaDB refuse to move a table with
// triggers to another database, so such a table stays in its database under
// another name; but InnoDB's foreign key names are unique per database, so a
// table with foreign keys must leave it (its staged successor has the same
// keys). A table with both loses its triggers just before the RENAME: all
// replaced tables are locked first (LOCK TABLES … WRITE waits for whoever uses
// them, changing nothing), the triggers dropped, the locks released and the
// RENAME sent at once; if it fails, the triggers are recreated. That window,
// milliseconds long, is the only one in which a killed manager leaves the
// target changed (such triggers missing; the backup's own are recreated after
// the swap).
import { createHash } from "node:crypto";
import type { MySQLConnectionOptions } from "../engine/connection.ts";
import { MySQLSession } from "../engine/connection.ts";
import { messageOf } from "@stateward/core";
import { BackupError } from "../errors.ts";
import { qualifiedName, quoteIdentifier, validateIdentifier } from "../engine/sql.ts";

const stagingPrefix = "stw_restore_";
const replacedPrefix = "stw_replaced_";

/** 12 hex digits of the run id's SHA-256: short enough for any name, unique enough per server. */
export function runToken(runId: string): string {
  return createHash("sha256").update(runId).digest("hex").slice(0, 12);
}

/** The staging database of the `index`-th (0-based) restored database; at most 32 characters. */
export function stagingDatabaseName(runId: string, index: number): string {
  return `${stagingPrefix}${runToken(runId)}_${index + 1}`;
}

/** The names of every staging database of a run, as a pattern for messages: `stw_restore_<token>_*`. */
export function stagingDatabasesPattern(runId: string): string {
  return `${stagingPrefix}${runToken(runId)}_*`;
}

/** `name`, cut to MySQL's 64-character limit for identifiers (and not ending in a space, which MySQL refuses). */
function identifierOf(name: string): string {
  return name.slice(0, 64).trimEnd();
}

/** The name the `index`-th (0-based) replaced table, `table`, gets in its own database when it has triggers. */
export function replacedTableName(runId: string, index: number, table: string): string {
  return identifierOf(`${replacedPrefix}${runToken(runId)}_${index + 1}_${table}`);
}

/** The name the `index`-th (0-based) replaced table, `table`, gets in the holding database. */
export function heldTableName(index: number, table: string): string {
  return identifierOf(`${index + 1}_${table}`);
}

/** The database the other replaced tables move to while the swap runs; 25 characters. */
export function holdingDatabaseName(runId: string): string {
  return `${replacedPrefix}${runToken(runId)}`;
}

/** `name` as a LIKE pattern matching itself followed by anything (its `_` escaped). */
function likePrefix(name: string): string {
  return `${name.replace(/[\\_%]/g, (c) => `\\${c}`)}%`;
}

type Row = Record<string, unknown>;

function textOf(v: unknown): string {
  if (typeof v === "string") return v;
  if (Buffer.isBuffer(v)) return v.toString("utf8");
  return String(v);
}

/** What a run left on a server: its staging databases and the target tables it moved aside. */
export interface StagingLeftovers {
  /** Staging databases, and the holding database when there was one. */
  stagingDatabases: string[];
  /** `db`.`table` of replaced tables found (only a run killed after its swap leaves any). */
  replacedTables: string[];
}

/** The leftovers of run `runId` on the server `session` is connected to. */
export async function findLeftovers(session: MySQLSession, runId: string): Promise<StagingLeftovers> {
  const token = runToken(runId);
  const holding = holdingDatabaseName(runId);
  const dbs = await session.query<Row>(
    "SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE ? OR SCHEMA_NAME = ?",
    [likePrefix(`${stagingPrefix}${token}_`), holding],
    "look for staging databases",
  );
  const tables = await session.query<Row>(
    "SELECT TABLE_SCHEMA AS db, TABLE_NAME AS name FROM information_schema.TABLES WHERE (TABLE_NAME LIKE ? AND TABLE_SCHEMA NOT LIKE ?) OR TABLE_SCHEMA = ?",
    [likePrefix(`${replacedPrefix}${token}_`), likePrefix(stagingPrefix), holding],
    "look for replaced tables",
  );
  return {
    stagingDatabases: dbs.map((r) => textOf(r.name)).sort(),
    replacedTables: tables.map((r) => qualifiedName(textOf(r.db), textOf(r.name))).sort(),
  };
}

/**
 * Drops what run `runId` left behind (see findLeftovers) and says what it
 * found: with `drop` "all", the replaced tables too (dropping them never
 * touches restored data); with "staging", only the staging databases — the
 * replaced tables, and the holding database that has some, stay.
 */
export async function dropLeftovers(session: MySQLSession, runId: string, drop: "all" | "staging" = "all"): Promise<StagingLeftovers> {
  const found = await findLeftovers(session, runId);
  const holding = holdingDatabaseName(runId);
  let databases = found.stagingDatabases;
  if (drop === "all") {
    // Replaced tables may be parents of one another's keys.
    await session.query("SET SESSION FOREIGN_KEY_CHECKS = 0", [], "drop a restore's leftovers");
    const aside = found.replacedTables.filter((t) => !t.startsWith(`${quoteIdentifier(holding)}.`));
    // Names came from the server and are re-quoted by qualifiedName above.
    if (aside.length > 0) await session.query(`DROP TABLE IF EXISTS ${aside.join(", ")}`, [], "drop replaced tables");
  } else if (found.replacedTables.length > 0) {
    databases = databases.filter((db) => db !== holding);
  }
  for (const db of databases) {
    validateIdentifier(db, "staging database");
    await session.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(db)}`, [], `drop staging database ${quoteIdentifier(db)}`);
  }
  return found;
}

/**
 * Connects to `target` and drops the staging databases run `runId` left:
 * the cleanup of a restore that failed, was deleted, or whose manager died.
 * The replaced tables of a swap that went through are kept (keptReplaced
 * says where).
 */
export async function cleanUpRestore(target: MySQLConnectionOptions, runId: string): Promise<StagingLeftovers> {
  const session = await MySQLSession.open(target);
  try {
    return await dropLeftovers(session, runId, "staging");
  } finally {
    await session.close();
  }
}

/** Replaced tables a sentence names one by one, at most. */
const keptNamed = 5;

/**
 * A sentence saying where the target's tables from before the restore were
 * kept (found by cleanUpRestore after the swap) and how to be rid of them;
 * empty when none were.
 */
export function keptReplaced(found: StagingLeftovers, runId: string): string {
  const n = found.replacedTables.length;
  if (n === 0) return "";
  const holding = quoteIdentifier(holdingDatabaseName(runId));
  const held = found.replacedTables.filter((t) => t.startsWith(`${holding}.`)).length;
  const aside = found.replacedTables.filter((t) => !t.startsWith(`${holding}.`));
  const where: string[] = [];
  if (held > 0) where.push(`${held} in database ${holding}, each named <n>_<its name>`);
  if (aside.length > 0) {
    const more = aside.length > keptNamed ? ` and ${aside.length - keptNamed} more` : "";
    where.push(`${aside.slice(0, keptNamed).join(", ")}${more} (tables with triggers, each beside the restored one)`);
  }
  const drop = [...(held > 0 ? [`DROP DATABASE ${holding}`] : []), ...(aside.length > 0 ? ["DROP TABLE on the others"] : [])].join(", ");
  // Triggers are not kept with them for sure: a replaced table's triggers were dropped for the swap when it has
  // foreign keys too, and one beside its restored table loses a trigger the backup creates under the same name.
  return `The target's ${n} tables as they were before the restore were kept: ${where.join("; ")}. Rename them back to undo the restore of those tables (their triggers may be missing: compare SHOW TRIGGERS with what they had), or drop them once not needed (${drop})`;
}

/**
 * Where the target's tables from before the restore are kept if run `runId`
 * swapped: for a message written when the server cannot be asked.
 */
export function replacedTablesPlace(runId: string): string {
  const holding = holdingDatabaseName(runId);
  return `the target's tables from before the restore are kept in database ${quoteIdentifier(holding)} (those with triggers beside the restored ones, named ${holding}_<n>_<name>)`;
}

/** A table to move in by the swap: from the staging database into the target. */
export interface StagedTable {
  database: string;
  staging: string;
  table: string;
}

/** A trigger as SHOW CREATE TRIGGER gives it: enough to create it again. */
interface SavedTrigger {
  database: string;
  name: string;
  statement: string;
  sqlMode: string;
}

/** A swap that failed after it dropped something of the target (a view in the way, triggers) it could not create again. */
export class SwapUndoFailed extends BackupError {
  constructor(message: string, options: { cause?: unknown }) {
    super("DatabaseError", message, options);
  }
}

/** What the swap changes, decided before it runs. */
export interface SwapPlan {
  holding: string;
  moves: StagedTable[];
  /** Target tables (or sequences) replaced, and where each goes aside. */
  replaced: { database: string; table: string; asideDatabase: string; aside: string }[];
  /** Triggers of replaced tables that have foreign keys too: dropped just before the RENAME. */
  triggersToDrop: { database: string; name: string }[];
  /** Target views that have the name of a restored table (dropped just before the swap). */
  viewsInTheWay: { database: string; view: string }[];
}

/**
 * Reads the staging databases and the targets, and plans the swap. Refuses
 * (before anything changes) a swap that would break a foreign key of a
 * table the restore does not replace: moving its parent aside would make
 * the key follow the old table.
 */
export async function planSwap(session: MySQLSession, runId: string, databases: { database: string; staging: string }[]): Promise<SwapPlan> {
  const holding = holdingDatabaseName(runId);
  const plan: SwapPlan = { holding, moves: [], replaced: [], triggersToDrop: [], viewsInTheWay: [] };
  /** `db`.`table` of every table the swap replaces or creates. */
  const restored = new Set<string>();
  let n = 0;
  for (const { database, staging } of databases) {
    const staged = await session.query<Row>(
      "SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE <> 'VIEW' ORDER BY TABLE_NAME",
      [staging],
      `list the tables of ${quoteIdentifier(staging)}`,
    );
    const existing = new Map<string, string>();
    for (const r of await session.query<Row>(
      "SELECT TABLE_NAME AS name, TABLE_TYPE AS type FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?",
      [database],
      `list the tables of ${quoteIdentifier(database)}`,
    )) {
      existing.set(textOf(r.name), textOf(r.type));
    }
    const triggersOf = new Map<string, string[]>();
    for (const r of await session.query<Row>(
      "SELECT TRIGGER_NAME AS name, EVENT_OBJECT_TABLE AS tbl FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = ? ORDER BY EVENT_OBJECT_TABLE, ACTION_TIMING, EVENT_MANIPULATION, ACTION_ORDER",
      [database],
      `list the triggers of ${quoteIdentifier(database)}`,
    )) {
      triggersOf.set(textOf(r.tbl), [...(triggersOf.get(textOf(r.tbl)) ?? []), textOf(r.name)]);
    }
    const withKeys = new Set(
      (
        await session.query<Row>(
          "SELECT DISTINCT TABLE_NAME AS name FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = ?",
          [database],
          `list the foreign keys of ${quoteIdentifier(database)}`,
        )
      ).map((r) => textOf(r.name)),
    );
    for (const r of staged) {
      const table = textOf(r.name);
      restored.add(qualifiedName(database, table));
      plan.moves.push({ database, staging, table });
      const type = existing.get(table);
      if (type === "VIEW") {
        plan.viewsInTheWay.push({ database, view: table });
        continue;
      }
      if (type === undefined) continue;
      const triggers = triggersOf.get(table) ?? [];
      n += 1;
      if (triggers.length > 0 && !withKeys.has(table)) {
        plan.replaced.push({ database, table, asideDatabase: database, aside: replacedTableName(runId, n - 1, table) });
      } else {
        plan.replaced.push({ database, table, asideDatabase: holding, aside: heldTableName(n - 1, table) });
        for (const name of triggers) plan.triggersToDrop.push({ database, name });
      }
    }
  }
  for (const { database } of databases) {
    const replacedHere = new Set(plan.replaced.filter((r) => r.database === database).map((r) => r.table));
    if (replacedHere.size === 0) continue;
    const keys = await session.query<Row>(
      "SELECT CONSTRAINT_SCHEMA AS db, TABLE_NAME AS child, CONSTRAINT_NAME AS name, REFERENCED_TABLE_NAME AS parent FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE UNIQUE_CONSTRAINT_SCHEMA = ?",
      [database],
      `list the foreign keys referencing ${quoteIdentifier(database)}`,
    );
    for (const k of keys) {
      const child = qualifiedName(textOf(k.db), textOf(k.child));
      const parent = textOf(k.parent);
      if (replacedHere.has(parent) && !restored.has(child)) {
        throw new BackupError(
          "InvalidOptions",
          `table ${child}, which the restore does not replace, has foreign key ${quoteIdentifier(textOf(k.name))} to ${qualifiedName(database, parent)}, which it does: a staged restore would leave that key pointing at the replaced table. Drop the key, or restore with mode InPlace; nothing was changed`,
        );
      }
    }
  }
  return plan;
}

async function saveTrigger(session: MySQLSession, database: string, name: string): Promise<SavedTrigger> {
  const [row] = await session.query<Row>(`SHOW CREATE TRIGGER ${qualifiedName(database, name)}`, [], `read trigger ${qualifiedName(database, name)}`);
  return {
    database,
    name,
    statement: textOf(row?.["SQL Original Statement"]),
    sqlMode: textOf(row?.sql_mode),
  };
}

/**
 * Creates a trigger again as it was, under its sql_mode (the order of a
 * table's triggers follows from the order of creation). Its text travels
 * as utf8mb4, on this session's character set.
 */
async function restoreTrigger(session: MySQLSession, t: SavedTrigger): Promise<void> {
  await session.query(`USE ${quoteIdentifier(t.database)}`, [], "recreate a trigger");
  await session.query("SET SESSION sql_mode = ?", [t.sqlMode], "recreate a trigger");
  await session.query(t.statement, [], `recreate trigger ${qualifiedName(t.database, t.name)}`);
}

/**
 * Swaps the staged tables in (see the file comment). On a utf8mb4 session of
 * its own: trigger definitions travel as text. Resolves once the RENAME
 * TABLE ran; the caller drops the replaced tables afterwards (dropReplaced),
 * once post-data is applied.
 */
export async function swapIn(session: MySQLSession, plan: SwapPlan): Promise<void> {
  if (plan.moves.length === 0) return;
  if (plan.replaced.some((r) => r.asideDatabase === plan.holding)) {
    await session.query(`CREATE DATABASE IF NOT EXISTS ${quoteIdentifier(plan.holding)}`, [], "create the holding database");
  }
  const saved: SavedTrigger[] = [];
  if (plan.triggersToDrop.length > 0) {
    // Wait for the tables here, where waiting changes nothing, not after the triggers are gone.
    const locks = plan.replaced.map((r) => `${qualifiedName(r.database, r.table)} WRITE`);
    await session.query(`LOCK TABLES ${locks.join(", ")}`, [], "lock the tables the restore replaces");
    try {
      for (const t of plan.triggersToDrop) saved.push(await saveTrigger(session, t.database, t.name));
      for (const t of plan.triggersToDrop) await session.query(`DROP TRIGGER ${qualifiedName(t.database, t.name)}`, [], "drop a trigger of a replaced table");
    } finally {
      await session.query("UNLOCK TABLES", [], "unlock the tables the restore replaces");
    }
  }
  const renames = [
    ...plan.replaced.map((r) => `${qualifiedName(r.database, r.table)} TO ${qualifiedName(r.asideDatabase, r.aside)}`),
    ...plan.moves.map((m) => `${qualifiedName(m.staging, m.table)} TO ${qualifiedName(m.database, m.table)}`),
  ];
  try {
    // A view cannot be renamed into another database, nor replaced by RENAME;
    // the restore replaces it by a table as the in-place restore does.
    for (const v of plan.viewsInTheWay) await session.query(`DROP VIEW IF EXISTS ${qualifiedName(v.database, v.view)}`, [], "drop a view in the way");
    await session.query(`RENAME TABLE ${renames.join(", ")}`, [], "swap the restored tables in");
  } catch (err) {
    const lost: string[] = plan.viewsInTheWay.map((v) => `view ${qualifiedName(v.database, v.view)}`);
    for (const t of saved) await restoreTrigger(session, t).catch(() => lost.push(`trigger ${qualifiedName(t.database, t.name)}`));
    if (lost.length === 0) throw err;
    throw new SwapUndoFailed(`${messageOf(err)}; ${lost.join(", ")}, dropped for the swap, could not be created again`, { cause: err });
  }
}

/**
 * Views of the backup may read each other in any order, so the schema object
 * creates a stand-in for each (a view of constants with its columns) before
 * post-data creates the real ones. Those stand-ins were made in the staging
 * databases; after the swap they are made again in the targets, where
 * post-data replaces them. A target table with a view's name is dropped, as
 * the in-place schema object does.
 */
export async function createViewStandIns(session: MySQLSession, databases: { database: string; staging: string }[]): Promise<void> {
  for (const { database, staging } of databases) {
    const views = await session.query<Row>(
      "SELECT TABLE_NAME AS name, VIEW_DEFINITION AS definition FROM information_schema.VIEWS WHERE TABLE_SCHEMA = ?",
      [staging],
      `list the view stand-ins of ${quoteIdentifier(staging)}`,
    );
    for (const v of views) {
      const name = qualifiedName(database, textOf(v.name));
      const definition = textOf(v.definition);
      // Stand-ins select constants only (schema.ts); anything else is not one.
      if (!/^select 1 AS `(?:[^`]|``)*`(?:,\s*1 AS `(?:[^`]|``)*`)*$/i.test(definition)) {
        throw new BackupError("InvalidManifest", `the stand-in of view ${name} is not a view of constants: ${definition.slice(0, 200)}`);
      }
      await session.query("SET SESSION FOREIGN_KEY_CHECKS = 0", [], "create view stand-ins");
      await session.query(`DROP TABLE IF EXISTS ${name}`, [], `replace table ${name} by a view`);
      await session.query(`CREATE OR REPLACE VIEW ${name} AS ${definition}`, [], `create the stand-in of view ${name}`);
    }
  }
}

/** Drops the tables the swap moved aside. */
export async function dropReplaced(session: MySQLSession, plan: SwapPlan): Promise<void> {
  if (plan.replaced.length === 0) return;
  await session.query("SET SESSION FOREIGN_KEY_CHECKS = 0", [], "drop the replaced tables");
  await session.query(`DROP TABLE IF EXISTS ${plan.replaced.map((r) => qualifiedName(r.asideDatabase, r.aside)).join(", ")}`, [], "drop the replaced tables");
}
