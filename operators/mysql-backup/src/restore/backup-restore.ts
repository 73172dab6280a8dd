// restoreBackup: a backup folder brought back into a server (see restore.ts
// for the two modes). It reads as its phases, each a function:
//   1. readManifest: check the bucket; read the manifest (refused if changed
//      since the backup) and take of it the databases asked for
//   2. connect: one connection per data object applied at once
//   3. InPlace: verifyAll, then applyInPlace: every object checked before
//      the first statement, then all applied to the target in order
//      Staged: stage, readPostData, swapIntoTarget, applyPostData,
//      dropStaging (staged-restore.ts)
//   4. finish: the result
// On any failure or abort: every connection is dropped, the staging
// databases are dropped by a fresh one (the tables a swap replaced are kept),
// and the error says what became of the target (failed, below).
import { MySQLSession } from "../engine/connection.ts";
import { abortedError, throwIfAborted } from "../engine/errors.ts";
import { messageOf } from "@stateward/core";
import { BackupError } from "../errors.ts";
import { validateIdentifier } from "../engine/sql.ts";
import { loadManifest } from "../storage/backup-folder.ts";
import type { S3Location } from "../storage/s3.ts";
import type { RestoreMode, RestoreOptions, RestoreResult } from "./restore.ts";
import { applyData, applyObject, forEachBounded, RestoreRun, type RestorePlan } from "./restore-run.ts";
import { applyPostData, dropStaging, readPostData, stage, swapIntoTarget } from "./staged-restore.ts";
import { cleanUpRestore, keptReplaced, replacedTablesPlace, SwapUndoFailed } from "./staging.ts";
import { verifyObject } from "./verified-object.ts";

/** Errors of restores that failed before anything of the target changed (and dropped what they had staged). */
const untouched = new WeakSet<object>();

/** Whether `err`, thrown by runRestore, means the target was left exactly as it was. */
export function leftTargetUntouched(err: unknown): boolean {
  return typeof err === "object" && err !== null && untouched.has(err);
}

/** Marks `err` as thrown before anything of the target changed (a point-in-time restore's download, before the restore starts). */
export function markTargetUntouched<E extends object>(err: E): E {
  untouched.add(err);
  return err;
}

/** `text` without its closing full stop, to be joined into a sentence. */
export function unstopped(text: string): string {
  return text.replace(/[.\s]+$/, "");
}

/** A BackupError with `note`, what became of the target, appended to its message and recorded for targetNoteOf. */
function withTargetNote(err: unknown, note: string): BackupError {
  const e = err instanceof BackupError ? err : new BackupError("DatabaseError", messageOf(err), { cause: err });
  return noteTarget(new BackupError(e.reason, `${unstopped(e.message)}. ${note}`, { retryable: e.retryable, cause: e.cause }), note);
}

/** Restores a backup folder; see the file comment for the order of work. */
export async function restoreBackup(options: RestoreOptions, location: S3Location, manifestSha256: string | undefined, parallelism: number, mode: RestoreMode): Promise<RestoreResult> {
  const startedAt = new Date();
  const t0 = performance.now();
  const run = new RestoreRun(options, location, parallelism, mode);
  const { signal } = run;
  signal.addEventListener("abort", run.stopAll, { once: true });
  try {
    const plan = await readManifest(run, manifestSha256);
    const main = await connect(run, plan);
    if (mode === "InPlace") {
      await verifyAll(run, plan);
      await applyInPlace(run, plan, main);
    } else {
      const staged = await stage(run, plan, main);
      const postData = await readPostData(run, plan);
      const swapped = await swapIntoTarget(run, plan, main, staged);
      await applyPostData(run, plan, main, postData);
      await dropStaging(run, main, swapped);
    }
    return await finish(run, plan, startedAt, t0);
  } catch (err) {
    throw await failed(run, err);
  } finally {
    signal.removeEventListener("abort", run.stopAll);
    run.store.destroy();
  }
}

/** Phase 1: the bucket answers; the manifest, verified, and of it the databases and objects to restore. */
async function readManifest(run: RestoreRun, manifestSha256: string | undefined): Promise<RestorePlan> {
  const { options, store, signal, progress } = run;
  throwIfAborted(signal, "the restore");
  await store.bucket.checkBucket(signal);
  const manifest = await loadManifest(store, signal, manifestSha256);
  const databases = options.databases ? [...new Set(options.databases)] : manifest.databases;
  const missing = databases.filter((d) => !manifest.databases.includes(d));
  if (missing.length > 0) {
    throw new BackupError("DatabaseNotFound", `the backup at ${store.url} has no database ${missing.join(", ")} (it has ${manifest.databases.join(", ")})`);
  }
  for (const d of databases) validateIdentifier(d, "database");
  const objects = manifest.objects.filter((o) => databases.includes(o.database));
  progress.objectsTotal = objects.length;
  progress.bytesTotal = objects.reduce((n, o) => n + o.uncompressedSize, 0);
  const dataObjects = objects.filter((o) => o.kind === "data");
  return { manifest, databases, objects, dataObjects };
}

/** Phase 2: a connection per data object applied at once (at least one); the first applies the rest. */
async function connect(run: RestoreRun, plan: RestorePlan): Promise<MySQLSession> {
  const { options, signal, sessions } = run;
  const connections = Math.max(1, Math.min(run.parallelism, plan.dataObjects.length));
  for (let i = 0; i < connections; i++) {
    throwIfAborted(signal, "the restore");
    sessions.push(await MySQLSession.open(options.target, { charset: "binary" }));
  }
  return sessions[0] as MySQLSession;
}

/** Phase 3, InPlace: every object checked before the first statement changes the target. */
async function verifyAll(run: RestoreRun, plan: RestorePlan): Promise<void> {
  const { store, signal } = run;
  await forEachBounded(plan.objects, Array.from({ length: run.parallelism }, (_, i) => i), async (o) => {
    throwIfAborted(signal, "the restore");
    await verifyObject(store, o, signal);
    run.report();
  }).catch((err: unknown) => {
    run.stopped.abort();
    throw err;
  });
}

/** Phase 3, InPlace: the objects applied to the target in manifest order, data in parallel. */
async function applyInPlace(run: RestoreRun, plan: RestorePlan, main: MySQLSession): Promise<void> {
  const { progress } = run;
  const { objects } = plan;
  const consequence = "the statements before it were applied: the target is partly restored";
  progress.phase = "schema";
  for (const o of objects.filter((x) => x.kind === "schema")) await applyObject(run, plan, o, main, undefined, consequence);
  progress.phase = "data";
  await applyData(run, plan, undefined, consequence);
  progress.phase = "post-data";
  for (const o of objects.filter((x) => x.kind === "post-data")) await applyObject(run, plan, o, main, undefined, consequence);
}

/** Phase 4: the connections closed, the last progress report, and the result. */
async function finish(run: RestoreRun, plan: RestorePlan, startedAt: Date, t0: number): Promise<RestoreResult> {
  const { options, store, sessions, progress, mode, leftoversDropped } = run;
  const { manifest, databases, objects } = plan;
  for (const s of sessions) await s.close();
  sessions.length = 0;
  progress.phase = "done";
  run.report(true);
  const rows = objects.reduce((n, o) => n + (o.rows ?? 0), 0);
  options.logger?.info("restore completed", { location: store.url, objects: objects.length, rows, mode });
  return {
    kind: "backup",
    location: store.url,
    databases,
    manifest,
    objects: objects.length,
    statements: progress.statements,
    bytes: run.sqlBytes,
    storedBytes: run.storedBytes,
    rows,
    mode,
    ...(leftoversDropped ? { leftoversDropped } : {}),
    startedAt,
    completedAt: new Date(),
    durations: { totalMs: Math.round(performance.now() - t0) },
  };
}

/**
 * What each failed restore's error says of the target after its own message
 * (where the replaced tables were kept): a message that replaces the error's
 * own (the restore was deleted, the manager stopped) carries it still.
 */
const targetNotes = new WeakMap<object, string>();

/** The sentences `err`, thrown by runRestore, ends with about what became of the target; empty if none. */
export function targetNoteOf(err: unknown): string {
  return typeof err === "object" && err !== null ? (targetNotes.get(err) ?? "") : "";
}

/** Records what `err` says of the target (its message ends with `note`), for a message that replaces its own. */
export function noteTarget<E extends object>(err: E, note: string): E {
  targetNotes.set(err, note);
  return err;
}

/**
 * The error a failed restore throws, after every connection is dropped and
 * the staging databases with a fresh one: it says what became of the target,
 * and leftTargetUntouched knows it if nothing did.
 */
async function failed(run: RestoreRun, err: unknown): Promise<BackupError> {
  const { options, runId, mode, targetChanged } = run;
  run.stopAll();
  let cleanupFailed = false;
  const aborted = options.signal?.aborted === true;
  let failure = aborted ? abortedError("the restore", options.signal) : err instanceof BackupError ? err : new BackupError("DatabaseError", messageOf(err), { cause: err });
  // The swap failed and its undo too (targetChanged is set then): what it lost, told also when a stop replaced the error.
  const undo = err instanceof SwapUndoFailed ? err : undefined;
  const swapDone = mode === "Staged" && targetChanged && !undo;
  const notes: string[] = [];
  let replaced = 0;
  let kept = "";
  if (run.stagingCreated) {
    // Connections were dropped (the server rolls back what they had open); a fresh one cleans up.
    const dropped = await cleanUpRestore(options.target, runId).catch((e: unknown) => e as Error);
    if (dropped instanceof Error) {
      cleanupFailed = true;
      options.logger?.warn("could not drop the staging databases", { err: messageOf(dropped) });
      notes.push(`Its staging databases (stw_restore_*) could not be dropped: ${unstopped(messageOf(dropped))}`);
      if (run.swapSent) {
        // Without the server, what the swap did is not known for sure: say where its replaced tables are if it went through.
        const where = replacedTablesPlace(runId);
        notes.push(swapDone ? `The swap went through: ${where}` : `If the swap went through, ${where}`);
      }
    } else {
      replaced = dropped.replacedTables.length;
      kept = keptReplaced(dropped, runId);
    }
  }
  // Replaced tables found mean the RENAME went through, even when its answer was lost on the way back.
  const swapped = swapDone || (mode === "Staged" && replaced > 0);
  // No answer and nothing found replaced: a target that had none of the restored tables may hold them now.
  const unknown = !swapped && run.swapUnanswered && !cleanupFailed;
  const lost = undo && aborted ? `: ${unstopped(undo.message)}` : "";
  if (swapped) {
    const keptNote = kept ? ` ${kept}.` : "";
    notes.push(`The restored tables had been swapped in${lost}; views, routines, triggers or events of the backup may be missing.${keptNote} Restore again`);
  } else if (unknown) {
    notes.push(`The swap (RENAME TABLE) got no answer${lost}, and none of the target's tables were found moved aside: tables the target did not have may have been moved in. Look at the target, then restore again`);
  } else if (undo) {
    notes.push(`The target's tables were not replaced${lost}. Restore again`);
  }
  if (notes.length > 0) {
    const note = notes.join(". ");
    failure = withTargetNote(failure, note);
  }
  if (!targetChanged && !swapped && !unknown && !cleanupFailed) untouched.add(failure);
  return failure;
}
