// What the phases of one backup restore (backup-restore.ts, staged-restore.ts)
// share, and how they apply a backup object: streamed from S3 into a
// connection, verified against the manifest once its last byte went through.
import { randomUUID } from "node:crypto";
import type { MySQLSession } from "../engine/connection.ts";
import { throwIfAborted } from "../engine/errors.ts";
import { BackupError } from "../errors.ts";
import type { BackupManifest, ManifestObject } from "../storage/manifest.ts";
import { BackupStore, type S3Location } from "../storage/s3.ts";
import { applySql } from "./apply.ts";
import type { RestoreMode, RestoreOptions, RestoreProgress } from "./restore.ts";
import type { StagingLeftovers } from "./staging.ts";
import type { Statement } from "./statements.ts";
import { corrupt, streamObject } from "./verified-object.ts";
import { progressReporter } from "../progress.ts";

/** What this restore takes of the backup: its manifest, and of it the databases and objects asked for. */
export interface RestorePlan {
  manifest: BackupManifest;
  databases: string[];
  objects: ManifestObject[];
  dataObjects: ManifestObject[];
}

/** What the phases of one restore share: the folder, the connections to drop on failure, what has changed so far, progress. */
export class RestoreRun {
  readonly options: RestoreOptions;
  readonly parallelism: number;
  readonly mode: RestoreMode;
  readonly runId: string;
  // Aborted by the caller, or by the first failure: either way every
  // connection is dropped and every download stopped.
  readonly stopped = new AbortController();
  readonly signal: AbortSignal;
  readonly store: BackupStore;
  readonly sessions: MySQLSession[] = [];
  /** Staged: the target was changed (the swap ran); InPlace: the first statement was sent. */
  targetChanged = false;
  /** Staged: the swap was started; a RENAME whose answer was lost may have gone through. */
  swapSent = false;
  /** Staged: the swap's RENAME, which moved no target table aside, got no answer (the connection was lost or cut): whether it ran is not known. */
  swapUnanswered = false;
  stagingCreated = false;
  leftoversDropped: StagingLeftovers | undefined;
  storedBytes = 0;
  sqlBytes = 0;
  /** Its totals are set once the manifest is read. */
  readonly progress: RestoreProgress;
  /** Calls onProgress about once a second, or now when `force`. */
  readonly report: (force?: boolean) => void;

  constructor(options: RestoreOptions, location: S3Location, parallelism: number, mode: RestoreMode) {
    this.options = options;
    this.parallelism = parallelism;
    this.mode = mode;
    this.runId = options.runId ?? randomUUID();
    this.signal = options.signal ? AbortSignal.any([options.signal, this.stopped.signal]) : this.stopped.signal;
    // Objects are applied while they download: a long statement pauses the
    // download, so the socket must be allowed to stay quiet that long.
    this.store = new BackupStore({ ...location, idleTimeoutMs: 0 });
    this.progress = { phase: mode === "Staged" ? "schema" : "verify", objectsTotal: 0, objectsDone: 0, bytesTotal: 0, bytesApplied: 0, statements: 0 };
    this.report = progressReporter(this.progress, options.onProgress);
  }

  readonly stopAll = (): void => {
    for (const s of this.sessions) s.destroy();
  };
}

/** Applies one object as it downloads; fails after its last byte unless size and SHA-256 match. */
export async function applyObject(
  run: RestoreRun,
  plan: RestorePlan,
  object: ManifestObject,
  session: MySQLSession,
  rewrite: ((s: Statement) => string | null) | undefined,
  consequence: string,
): Promise<void> {
  const { store, signal, progress } = run;
  throwIfAborted(signal, "the restore");
  const source = `object ${object.key} of ${store.url}`;
  const { sql, verified } = await streamObject(store, object, plan.manifest.compression, signal, consequence);
  let applied: { bytes: number };
  try {
    if (run.mode === "InPlace") run.targetChanged = true;
    applied = await applySql(sql, {
      session,
      source,
      signal,
      ...(rewrite ? { rewrite } : {}),
      onApplied: (bytes) => {
        progress.bytesApplied += bytes;
        progress.statements += 1;
        run.report();
      },
    });
  } catch (err) {
    sql.destroy();
    if (err instanceof BackupError) throw err;
    // The download or the decompression failed: `verified` says which, in its words.
    await verified;
    throw corrupt(err, source) ?? err;
  }
  run.storedBytes += await verified;
  if (applied.bytes !== object.uncompressedSize) {
    throw new BackupError("ChecksumMismatch", `${source} decompressed to ${applied.bytes} bytes, the manifest says ${object.uncompressedSize}; ${consequence}`);
  }
  run.sqlBytes += applied.bytes;
  progress.objectsDone += 1;
  run.report(true);
}

/** A data object's table, as a key (of the map of tables being loaded that nextDataObject reads). */
export function tableOf(object: ManifestObject): string {
  return `${object.database}\u0000${object.table ?? ""}`;
}

/**
 * Which pending data object a free connection takes (an index into `pending`,
 * which is in manifest order): the next part of a table no connection is
 * loading, else simply the next part. The parts of a table are consecutive
 * ranges of its primary key: loaded one after the other, every insert goes to
 * the end of the index; loaded side by side, one of them inserts into the
 * middle. (Measured on two tables and two connections, the server's CPU
 * changed little: docs/performance.md, finding 10.)
 */
export function nextDataObject(pending: readonly ManifestObject[], loading: ReadonlyMap<string, number>): number {
  const free = pending.findIndex((o) => (loading.get(tableOf(o)) ?? 0) === 0);
  return free === -1 ? 0 : free;
}

/** Applies the data objects on all of the run's connections; the first failure stops the rest. */
export function applyData(run: RestoreRun, plan: RestorePlan, rewrite: ((s: Statement) => string | null) | undefined, consequence: string): Promise<void> {
  const loading = new Map<string, number>();
  const apply = async (object: ManifestObject, session: MySQLSession): Promise<void> => {
    const table = tableOf(object);
    loading.set(table, (loading.get(table) ?? 0) + 1);
    try {
      await applyObject(run, plan, object, session, rewrite, consequence);
    } finally {
      loading.set(table, (loading.get(table) ?? 1) - 1);
    }
  };
  return (
    // Different tables (and parts of one big table) load side by side.
    forEachBounded(plan.dataObjects, run.sessions, apply, (pending) => nextDataObject(pending, loading)).catch((err: unknown) => {
      run.stopped.abort();
      throw err;
    })
  );
}

/**
 * Runs `work` on `items`, one at a time per worker (a session); the first
 * failure stops the rest. `pick` chooses which of the items not started yet a
 * free worker takes (default: the first).
 */
export async function forEachBounded<T, W>(
  items: readonly T[],
  sessions: readonly W[],
  work: (item: T, session: W) => Promise<void>,
  pick: (pending: readonly T[]) => number = () => 0,
): Promise<void> {
  const pending = [...items];
  let failed = false;
  await Promise.all(
    sessions.map(async (session) => {
      while (!failed && pending.length > 0) {
        const [item] = pending.splice(pick(pending), 1) as [T];
        try {
          await work(item, session);
        } catch (err) {
          failed = true;
          throw err;
        }
      }
    }),
  );
}
