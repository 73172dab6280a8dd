// One consistent point in time, as mydumper and the seeding of a replica take
// it: a brief global read lock (no commit can happen), a consistent-snapshot
// transaction opened on every session that reads, what the caller needs read
// while still locked (the GTID position), then the lock released. Every
// reading session then sees exactly the data of that position, however long
// it reads.
import type { Flavor } from "./flavor.ts";

type Row = Record<string, unknown>;

/** A session of the caller's own connection (the backup engine's, a pool's): runs one statement. */
export interface SnapshotSession {
  query(sql: string, values?: unknown[]): Promise<Row[]>;
}

export interface SnapshotOptions {
  flavor: Flavor;
  /**
   * How long FLUSH TABLES WITH READ LOCK may wait for tables in use. While it
   * waits, every writer of the server queues behind it: the caller's bound on
   * how long writes may stall.
   */
  lockWaitSeconds: number;
  /** Sessions that open the consistent-snapshot transaction while locked. Defaults to the locking session itself. */
  readers?: readonly SnapshotSession[];
  /**
   * Called, instead of throwing, when UNLOCK TABLES fails (the locking session
   * broke: closing it releases the lock). Without it, the failure is thrown.
   */
  onUnlockFailed?: (err: unknown) => void;
}

export interface Snapshot<T> {
  /** When the lock was taken: the moment the data represents. */
  at: Date;
  /** How long writes were blocked. */
  lockedMs: number;
  /** What `whileLocked` returned. */
  value: T;
}

/** The global read lock was not granted within the lock wait: statements or DDL hold tables open. */
export class SnapshotLockTimeoutError extends Error {
  override name = "SnapshotLockTimeoutError";
}

/** Server errors of a lock not granted in time: lock wait timeout (1205), statement time exceeded (MariaDB 1969, MySQL 3024). */
const LOCK_TIMEOUT_ERRNOS = new Set([1205, 1969, 3024]);

/** The errno of a driver error, or of the driver error a caller's error wraps as its cause. */
function errnoOf(err: unknown): number | undefined {
  for (let e: unknown = err, depth = 0; typeof e === "object" && e !== null && depth < 3; e = (e as { cause?: unknown }).cause, depth++) {
    const errno = (e as { errno?: unknown }).errno;
    if (typeof errno === "number") return errno;
  }
  return undefined;
}

/**
 * Takes the snapshot: `control` holds the lock (its session keeps the lock
 * wait timeout set here); every reader ends up inside a consistent-snapshot
 * transaction at the same point; `whileLocked` runs before the release.
 * @throws SnapshotLockTimeoutError when the lock was not granted in time
 */
export async function takeConsistentSnapshot<T>(control: SnapshotSession, options: SnapshotOptions, whileLocked: () => Promise<T>): Promise<Snapshot<T>> {
  const { lockWaitSeconds } = options;
  await control.query("SET SESSION lock_wait_timeout = ?", [lockWaitSeconds]);
  // MariaDB's FTWRL may wait for a table flush beyond the lock wait; the statement time bounds it too.
  const mariadb = options.flavor === "MariaDB";
  const [saved] = mariadb ? await control.query("SELECT @@SESSION.max_statement_time AS t") : [];
  if (mariadb) await control.query("SET SESSION max_statement_time = ?", [lockWaitSeconds + 1]);
  try {
    await control.query("FLUSH TABLES WITH READ LOCK");
  } catch (err) {
    const errno = errnoOf(err);
    if (errno !== undefined && LOCK_TIMEOUT_ERRNOS.has(errno)) {
      throw new SnapshotLockTimeoutError(`the global read lock was not granted within ${lockWaitSeconds} s: statements or DDL hold tables open`, { cause: err });
    }
    throw err;
  } finally {
    if (mariadb) await control.query("SET SESSION max_statement_time = ?", [Number(saved?.t ?? 0)]).catch(() => undefined);
  }
  const lockedAt = performance.now();
  const at = new Date();
  const release = async () => {
    try {
      await control.query("UNLOCK TABLES");
    } catch (err) {
      if (!options.onUnlockFailed) throw err;
      options.onUnlockFailed(err);
    }
  };
  let value: T;
  try {
    await Promise.all(
      (options.readers ?? [control]).map(async (s) => {
        await s.query("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ");
        await s.query("START TRANSACTION WITH CONSISTENT SNAPSHOT");
      }),
    );
    value = await whileLocked();
  } catch (err) {
    // What failed is the error to report; a failed release of a broken session is not.
    await release().catch(() => undefined);
    throw err;
  }
  await release();
  return { at, lockedMs: Math.round(performance.now() - lockedAt), value };
}

/** The server's GTID position: `@@gtid_binlog_pos` on MariaDB, the `@@gtid_executed` set on MySQL (as the server prints it). */
export async function readGtidPosition(session: SnapshotSession, flavor: Flavor): Promise<string> {
  const [row] = await session.query(flavor === "MariaDB" ? "SELECT @@GLOBAL.gtid_binlog_pos AS gtid" : "SELECT @@GLOBAL.gtid_executed AS gtid");
  const v = row?.gtid;
  if (typeof v === "string") return v;
  if (Buffer.isBuffer(v)) return v.toString("utf8");
  return typeof v === "number" || typeof v === "bigint" ? String(v) : "";
}
