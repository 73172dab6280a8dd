// Seeding: copying the primary's data into an empty replica when the primary
// no longer has the binary logs the replica would need to build it by
// replication alone. A logical copy, streamed server to server through the
// operator, of one consistent snapshot:
//
//   primary  no statement may have been running for a second or more (they
//            would hold FLUSH TABLES WITH READ LOCK, and every writer queues
//            behind a waiting FTWRL); then FTWRL bounded by lock_wait_timeout
//            (and, on MariaDB, max_statement_time); START TRANSACTION WITH
//            CONSISTENT SNAPSHOT; read the GTID position (and, on MariaDB, the
//            binary log state it ends); UNLOCK TABLES
//   replica  accounts (the mysql privilege tables), then per database: the
//            tables, their rows (formatted by the server, as the backup engine
//            does: row-format.ts) and a placeholder for each view; then, for
//            all databases, routines, the real views (which may use tables,
//            views and functions of any database), triggers and events —
//            after the data; nothing written to the replica's binary log
//   replica  the snapshot's GTID position becomes its replication position,
//            so replication continues exactly after the snapshot; its binary
//            log starts over from the snapshot's history (MariaDB: RESET
//            MASTER, gtid_binlog_state; MySQL: RESET MASTER, gtid_purged), so
//            it says, as any primary's does, that what came before is not in
//            it: made the primary, it seeds a new replica instead of handing
//            it only what it logged after the copy.
//
// A primary too busy to lock is a SeedBusyError: the caller tries again later
// (with back-off), the primary's writers having waited at most the lock wait.
// MariaDB sequences are not copied: a primary holding one makes the seed
// fail with a message saying so, never a replica that silently lacks it.
import type { Connection } from "mysql2";
import type { PoolConnection } from "mysql2/promise";
import { cellText } from "./cell.ts";
import {
  SYSTEM_DATABASES,
  SnapshotLockTimeoutError,
  dumpedColumns,
  insertPrefix,
  notSystemDatabase,
  quoteIdentifier,
  readGtidPosition,
  rowExpression,
  takeConsistentSnapshot,
  viewPlaceholder,
  type ColumnInfo,
  type Flavor,
  type InstanceConnection,
} from "@stateward/mysql";

type Row = Record<string, unknown>;

export interface SeedResult {
  /** The GTID position (MariaDB) or set (MySQL) of the snapshot. */
  position: string;
  databases: number;
  tables: number;
  rows: number;
}

/** Seeding cannot go on: the message says why and what to do. */
export class SeedError extends Error {
  override readonly name: string = "SeedError";
}

/** The primary could not be locked for the snapshot without holding up its writers: try again later. */
export class SeedBusyError extends SeedError {
  override readonly name = "SeedBusyError";
}

export interface SeedOptions {
  /**
   * How long FLUSH TABLES WITH READ LOCK may wait for tables in use — and so
   * how long the primary's writers may queue behind it. Default 2 s.
   */
  lockWaitSeconds?: number;
  /** Statements running at least this long on the primary put the seed off. Default 1 s. */
  longStatementSeconds?: number;
  /** Stops the copy between tables (the manager is shutting down). */
  signal?: AbortSignal;
}

/** The privilege tables that hold accounts, roles and grants, per flavor. Missing ones are skipped. */
const ACCOUNT_TABLES = {
  MariaDB: ["global_priv", "db", "tables_priv", "columns_priv", "procs_priv", "proxies_priv", "roles_mapping"],
  MySQL: ["user", "db", "tables_priv", "columns_priv", "procs_priv", "proxies_priv", "role_edges", "default_roles", "global_grants"],
} as const;
/** One INSERT carries about this much. */
const STATEMENT_BYTES = 1 << 20;

async function q(conn: PoolConnection, sql: string, values: unknown[] = []): Promise<Row[]> {
  // Without values the text is sent as is: copied SQL may hold "?" in its literals.
  const [rows] = values.length > 0 ? await conn.query(sql, values) : await conn.query(sql);
  return Array.isArray(rows) ? (rows as Row[]) : [];
}

function text(row: Row | undefined, name: string): string {
  return cellText(row?.[name]);
}

async function columnsOf(src: PoolConnection, database: string, table: string): Promise<ColumnInfo[]> {
  const rows = await q(
    src,
    "SELECT COLUMN_NAME AS name, DATA_TYPE AS type, CHARACTER_SET_NAME AS charset, EXTRA AS extra, GENERATION_EXPRESSION AS expr FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
    [database, table],
  );
  return rows.map((r) => ({
    name: text(r, "name"),
    dataType: text(r, "type").toLowerCase(),
    charset: text(r, "charset") || null,
    generated: /GENERATED|VIRTUAL|PERSISTENT|STORED/i.test(text(r, "extra")) || text(r, "expr") !== "",
  }));
}

/** Streams a table's rows from `src` (in its snapshot) into `dst` as multi-row INSERT (or REPLACE) statements. */
async function copyRows(src: PoolConnection, dst: PoolConnection, database: string, table: string, verb: "INSERT" | "REPLACE"): Promise<number> {
  const columns = dumpedColumns(await columnsOf(src, database, table));
  if (columns.length === 0) return 0;
  // "INSERT INTO `t` (…) VALUES" qualified with the database: the target session may be in another one.
  const prefix = `${verb} INTO ${quoteIdentifier(database)}.${insertPrefix(table, columns).slice("INSERT INTO ".length)}`;
  // The promise wrapper's underlying connection is mysql2's callback one, which streams.
  const raw = src.connection as unknown as Connection;
  const stream = raw.query(`SELECT ${rowExpression(columns)} AS t FROM ${quoteIdentifier(database)}.${quoteIdentifier(table)}`).stream();
  let batch: string[] = [];
  let bytes = 0;
  let rows = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    await dst.query(`${prefix}${batch.join(",\n")}`);
    batch = [];
    bytes = 0;
  };
  for await (const row of stream as AsyncIterable<Row>) {
    const tuple = text(row, "t");
    batch.push(tuple);
    bytes += tuple.length;
    rows++;
    if (bytes >= STATEMENT_BYTES) await flush();
  }
  await flush();
  return rows;
}

/** Where a snapshot stands: its GTID position, and on MariaDB the binary log state that ends there. */
interface SnapshotPoint {
  position: string;
  /**
   * MariaDB gtid_binlog_state: the last transaction of each origin server, which the position (one per
   * domain) does not name. "" on MySQL, whose gtid_executed is the whole history already.
   */
  history: string;
}

/**
 * The snapshot (takeConsistentSnapshot of @stateward/mysql) and where it stands,
 * only when nothing has been running long on the primary and bounded in time:
 * while FTWRL waits for a table in use, every write on the server waits behind it.
 */
async function snapshotPoint(src: PoolConnection, flavor: Flavor, lockWaitSeconds: number, longStatementSeconds: number): Promise<SnapshotPoint> {
  // Who runs what is not said: a statement's text may hold data or passwords.
  const busy = await q(
    src,
    "SELECT ID AS id, USER AS user, TIME AS seconds FROM information_schema.PROCESSLIST WHERE COMMAND IN ('Query', 'Execute') AND ID <> CONNECTION_ID() AND TIME >= ? ORDER BY TIME DESC LIMIT 3",
    [longStatementSeconds],
  );
  if (busy.length > 0) {
    throw new SeedBusyError(
      `the primary is running long statements (${busy.map((r) => `connection ${text(r, "id")} of ${text(r, "user")} for ${text(r, "seconds")} s`).join(", ")}); the snapshot's read lock would hold up every write behind them, so seeding waits until they end`,
    );
  }
  const session = { query: (sql: string, values: unknown[] = []) => q(src, sql, values) };
  let point: SnapshotPoint;
  try {
    point = (
      await takeConsistentSnapshot(session, { flavor, lockWaitSeconds }, async () => ({
        position: await readGtidPosition(session, flavor),
        // Read under the same lock: no commit between the two.
        history: flavor === "MariaDB" ? text((await q(src, "SELECT @@GLOBAL.gtid_binlog_state AS state"))[0], "state") : "",
      }))
    ).value;
  } catch (err) {
    await q(src, "SET SESSION lock_wait_timeout = DEFAULT").catch(() => undefined);
    if (err instanceof SnapshotLockTimeoutError) {
      throw new SeedBusyError(`the primary's tables could not be locked for the snapshot within ${lockWaitSeconds} s (statements or DDL hold them); seeding waits and tries again`);
    }
    throw err;
  }
  // The session goes back to the pool with the server's lock wait.
  await q(src, "SET SESSION lock_wait_timeout = DEFAULT");
  return point;
}

/**
 * Copies the primary's accounts and databases into `replica`, which must hold
 * no database of its own, and sets its replication position to the snapshot's.
 * @throws SeedError when the replica holds data or the primary holds something that cannot be copied
 * @throws MySQLError when a statement fails
 */
export async function seedReplica(primary: InstanceConnection, replica: InstanceConnection, options: SeedOptions = {}): Promise<SeedResult> {
  const flavor = primary.server.flavor;
  const signal = options.signal;
  return primary.withConnection((src) =>
    replica.withConnection(async (dst) => {
      const result: SeedResult = { position: "", databases: 0, tables: 0, rows: 0 };
      await q(src, "SET SESSION time_zone = '+00:00', NAMES utf8mb4");
      const point = await snapshotPoint(src, flavor, options.lockWaitSeconds ?? 2, options.longStatementSeconds ?? 1);
      result.position = point.position;

      const databases = (await q(src, "SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME"))
        .map((r) => text(r, "name"))
        .filter((d) => !SYSTEM_DATABASES.has(d));
      const sequences = await q(src, "SELECT TABLE_SCHEMA AS db, TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_TYPE = 'SEQUENCE' LIMIT 1");
      if (sequences.length > 0) {
        throw new SeedError(`the primary holds the sequence ${text(sequences[0], "db")}.${text(sequences[0], "name")}, which seeding does not copy; restore a backup into the replica instead`);
      }

      try {
        await q(dst, "SET SESSION sql_log_bin = 0, foreign_key_checks = 0, unique_checks = 0, time_zone = '+00:00', NAMES utf8mb4, sql_mode = 'NO_AUTO_VALUE_ON_ZERO'");
        const userDatabases = notSystemDatabase("SCHEMA_NAME");
        const [own] = await q(dst, `SELECT COUNT(*) AS n FROM information_schema.SCHEMATA WHERE ${userDatabases.sql}`, userDatabases.values);
        if (Number(text(own, "n")) > 0) throw new SeedError("the replica already holds databases; seeding only fills an empty server");

        // Accounts first: views, routines and triggers name their definers.
        const present = new Set((await q(src, "SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'mysql'")).map((r) => text(r, "name")));
        for (const table of ACCOUNT_TABLES[flavor]) {
          if (present.has(table)) await copyRows(src, dst, "mysql", table, "REPLACE");
        }
        await q(dst, "FLUSH PRIVILEGES");

        // After every database's data: routines, then the real views (over their placeholders), then triggers
        // (which must not fire on copied rows) and events. Each as [statement, values], in its database.
        const routines: [string, unknown[]][] = [];
        const views: [string, unknown[]][] = [];
        const triggersAndEvents: [string, unknown[]][] = [];
        for (const database of databases) {
          signal?.throwIfAborted();
          const db = quoteIdentifier(database);
          const [createDb] = await q(src, `SHOW CREATE DATABASE ${db}`);
          await q(dst, text(createDb, "Create Database"));
          await q(dst, `USE ${db}`);
          await q(src, `USE ${db}`);
          result.databases++;
          const tables = await q(src, "SELECT TABLE_NAME AS name, TABLE_TYPE AS type FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME", [database]);
          for (const t of tables) {
            signal?.throwIfAborted();
            const name = text(t, "name");
            if (text(t, "type") === "VIEW") {
              const [v] = await q(src, `SHOW CREATE VIEW ${db}.${quoteIdentifier(name)}`);
              const columns = (await q(src, "SELECT COLUMN_NAME AS name FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", [database, name])).map((c) => text(c, "name"));
              await q(dst, viewPlaceholder(name, columns));
              views.push([`USE ${db}`, []], [`DROP VIEW IF EXISTS ${quoteIdentifier(name)}`, []], [text(v, "Create View"), []]);
              continue;
            }
            const [ct] = await q(src, `SHOW CREATE TABLE ${db}.${quoteIdentifier(name)}`);
            await q(dst, text(ct, "Create Table"));
            result.rows += await copyRows(src, dst, database, name, "INSERT");
            result.tables++;
          }
          for (const r of await q(src, "SELECT ROUTINE_NAME AS name, ROUTINE_TYPE AS type FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ?", [database])) {
            const type = text(r, "type") === "FUNCTION" ? "FUNCTION" : "PROCEDURE";
            const [c] = await q(src, `SHOW CREATE ${type} ${db}.${quoteIdentifier(text(r, "name"))}`);
            routines.push([`USE ${db}`, []], ["SET SESSION sql_mode = ?", [text(c, "sql_mode")]], [text(c, type === "FUNCTION" ? "Create Function" : "Create Procedure"), []]);
          }
          for (const r of await q(src, "SELECT TRIGGER_NAME AS name FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?", [database])) {
            const [c] = await q(src, `SHOW CREATE TRIGGER ${db}.${quoteIdentifier(text(r, "name"))}`);
            triggersAndEvents.push([`USE ${db}`, []], ["SET SESSION sql_mode = ?", [text(c, "sql_mode")]], [text(c, "SQL Original Statement"), []]);
          }
          for (const r of await q(src, "SELECT EVENT_NAME AS name FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ?", [database])) {
            const [c] = await q(src, `SHOW CREATE EVENT ${db}.${quoteIdentifier(text(r, "name"))}`);
            triggersAndEvents.push([`USE ${db}`, []], ["SET SESSION sql_mode = ?", [text(c, "sql_mode")]], [text(c, "Create Event"), []]);
          }
        }
        const defaultMode: [string, unknown[]] = ["SET SESSION sql_mode = ?", ["NO_AUTO_VALUE_ON_ZERO"]];
        for (const [sql, values] of [...routines, defaultMode, ...views, ...triggersAndEvents]) await q(dst, sql, values);
        await q(src, "COMMIT");

        if (flavor === "MariaDB") {
          // Its binary log begins with the primary's history at the snapshot (the Gtid_list of its first log):
          // made the primary later, it does not claim to hold every transaction from the first one on — an
          // empty list means "nothing purged", and a new replica would replicate only what came after the copy
          // (primaryHasHistoryFor) — and its history compares with the other servers' as theirs does
          // (primary selection, errant transactions). Only an empty binary log takes a state: RESET MASTER first.
          await q(dst, "RESET MASTER");
          await q(dst, "SET GLOBAL gtid_binlog_state = ?", [point.history]);
          await q(dst, "SET GLOBAL gtid_slave_pos = ?", [result.position]);
        } else {
          await q(dst, "RESET MASTER");
          await q(dst, "SET GLOBAL gtid_purged = ?", [result.position]);
        }
        return result;
      } catch (err) {
        // The replica was empty: what a failed seed left is removed, so the next attempt starts clean.
        if (!(err instanceof SeedError)) {
          for (const database of databases) await q(dst, `DROP DATABASE IF EXISTS ${quoteIdentifier(database)}`).catch(() => undefined);
        }
        throw err;
      } finally {
        // The session goes back to the pool: it must log and check again.
        await q(dst, "SET SESSION sql_log_bin = 1, foreign_key_checks = 1, unique_checks = 1").catch(() => undefined);
      }
    }),
  );
}
