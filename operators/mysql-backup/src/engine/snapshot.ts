// The backup's consistent point in time: the shared snapshot of
// @stateward/mysql (global read lock, a consistent-snapshot transaction on
// every dump connection, release) with the replication position — binary log
// file, offset and GTID — read while still locked, and failures told as a
// backup tells them.
import { SnapshotLockTimeoutError, readGtidPosition, takeConsistentSnapshot, type Flavor as ServerFlavor, type SnapshotSession } from "@stateward/mysql";
import type { MySQLSession } from "./connection.ts";
import { BackupError } from "../errors.ts";
import type { ReplicationPosition } from "../storage/manifest.ts";

export interface Snapshot {
  /** When the lock was taken: the moment the data represents. */
  at: Date;
  /** How long writes were blocked. */
  lockedMs: number;
  position: ReplicationPosition | null;
  warnings: string[];
}

type Row = Record<string, unknown>;

function asText(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "bigint") return String(v);
  if (Buffer.isBuffer(v)) return v.toString("utf8");
  return undefined;
}

/** Session settings of a dump connection; run before the snapshot. */
export async function prepareDumpSession(session: MySQLSession, flavor: ServerFlavor): Promise<void> {
  const what = "prepare the dump session";
  // '' so SHOW CREATE output is plain MySQL syntax (no ANSI_QUOTES etc.).
  await session.query("SET SESSION sql_mode = ''", [], what);
  // TIMESTAMP values are read (and written into every object) in UTC.
  await session.query("SET SESSION time_zone = '+00:00'", [], what);
  await session.query("SET NAMES utf8mb4", [], what);
  // A paused result stream (slow S3) must not make the server give up on us:
  // the default of 60 s is far shorter than a stalled part upload may take.
  await session.query("SET SESSION net_write_timeout = 3600", [], what);
  await session.query("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ", [], what);
  // A server-wide statement time limit would cut a long table scan short.
  await session.query(flavor === "MariaDB" ? "SET SESSION max_statement_time = 0" : "SET SESSION max_execution_time = 0", [], what);
}

async function readPosition(control: MySQLSession, flavor: ServerFlavor, warnings: string[]): Promise<ReplicationPosition | null> {
  const position: ReplicationPosition = {};
  let status: Row[] | undefined;
  for (const statement of ["SHOW MASTER STATUS", "SHOW BINARY LOG STATUS"]) {
    try {
      status = await control.query<Row>(statement, [], "read the binary log position");
      break;
    } catch (err) {
      if (err instanceof BackupError && err.reason === "DatabaseAccessDenied") {
        warnings.push("the backup user may not read the binary log position (needs BINLOG MONITOR or REPLICATION CLIENT); none is recorded");
        break;
      }
      // MySQL 8.4 removed SHOW MASTER STATUS; the second form is its successor.
    }
  }
  const row = status?.[0];
  if (row) {
    const file = asText(row.File);
    const offset = Number(asText(row.Position));
    if (file) position.binlogFile = file;
    if (Number.isSafeInteger(offset)) position.binlogPosition = offset;
    const executed = asText(row.Executed_Gtid_Set);
    if (executed) position.gtid = executed.replace(/\s+/g, "");
  }
  try {
    const value = (await readGtidPosition(snapshotSession(control, "read the GTID position"), flavor)).replace(/\s+/g, "");
    if (value) position.gtid = value;
  } catch {
    // Servers without GTIDs: the binlog file and offset are what there is.
  }
  return Object.keys(position).length > 0 ? position : null;
}

/** The engine's session as the shared snapshot's: `what` names the statement in errors. */
function snapshotSession(session: MySQLSession, what: string | ((sql: string) => string)): SnapshotSession {
  return { query: (sql, values = []) => session.query<Row>(sql, values, typeof what === "string" ? what : what(sql)) };
}

/** What the locking session's statements do, for their errors. */
function controlStatement(sql: string): string {
  if (sql.startsWith("SET SESSION lock_wait_timeout")) return "set the lock wait timeout";
  if (sql.startsWith("UNLOCK")) return "release the global read lock";
  return "take the global read lock (FLUSH TABLES WITH READ LOCK)";
}

/**
 * Takes the snapshot (takeConsistentSnapshot of @stateward/mysql). `control`
 * holds the lock; every session in `dumpers` ends up inside a
 * consistent-snapshot transaction at the same point.
 */
export async function takeSnapshot(
  control: MySQLSession,
  dumpers: readonly MySQLSession[],
  flavor: ServerFlavor,
  lockWaitTimeoutSeconds: number,
): Promise<Snapshot> {
  const warnings: string[] = [];
  try {
    const taken = await takeConsistentSnapshot(
      snapshotSession(control, controlStatement),
      {
        flavor,
        lockWaitSeconds: lockWaitTimeoutSeconds,
        readers: dumpers.map((s) => snapshotSession(s, "open the consistent snapshot")),
        // A broken control connection releases its lock by going away.
        onUnlockFailed: () => control.destroy(),
      },
      () => readPosition(control, flavor, warnings),
    );
    return { at: taken.at, lockedMs: taken.lockedMs, position: taken.value, warnings };
  } catch (err) {
    if (err instanceof BackupError && err.reason === "DatabaseAccessDenied") {
      throw new BackupError(
        "DatabaseAccessDenied",
        `the backup user may not take the global read lock: it needs the RELOAD privilege (${err.message})`,
        { cause: err },
      );
    }
    if (err instanceof SnapshotLockTimeoutError || (err instanceof BackupError && err.reason === "LockTimeout")) {
      throw new BackupError(
        "LockTimeout",
        `could not take the global read lock within ${lockWaitTimeoutSeconds} s: long-running statements or DDL hold tables open; retry later`,
        { retryable: true, cause: err },
      );
    }
    throw err;
  }
}
