// Errors of backups and restores, turned into a condition reason and a
// message a user can act on. Messages never carry credentials: the engine's
// and the MySQL package's errors are already stripped of them.
import { MissingSecretError, MySQLError } from "@stateward/mysql";
import { isBackupError } from "../errors.ts";
import { leftTargetUntouched, targetNoteOf } from "../restore/index.ts";
import type { FailedRun } from "./operation-reconciler.ts";
import { messageOf } from "@stateward/core";

export interface Failure {
  reason: string;
  message: string;
}

export function describeFailure(err: unknown, abortedBecause?: string): Failure {
  if (abortedBecause) return { reason: "Interrupted", message: `stopped because ${abortedBecause}` };
  if (err instanceof MissingSecretError) return { reason: err.reason, message: err.message };
  if (err instanceof MySQLError) return { reason: `MySQL${err.failure}`, message: err.message };
  if (isBackupError(err)) return { reason: err.reason, message: err.message };
  return { reason: "Error", message: messageOf(err) };
}

/**
 * Why an operation's signal was aborted: the reason the manager gave (e.g.
 * it stops for an unexpected error, FatalErrorStop), else `otherwise`.
 */
export function stopReason(signal: AbortSignal, otherwise: string): string {
  const r: unknown = signal.reason;
  return r instanceof Error && r.name !== "AbortError" && r.message ? r.message : otherwise;
}

/** What a failed restore's status and Event say. */
export function restoreFailed(err: unknown, signal: AbortSignal, deleted: boolean, mode: "Staged" | "InPlace"): FailedRun {
  const stoppedBecause = signal.aborted ? (deleted ? "the MySQLRestore was deleted" : "the manager is shutting down") : undefined;
  const f = describeFailure(err, stoppedBecause);
  // The stop reason replaces the error's message, not what it says of the target (where the replaced tables were kept).
  const note = stoppedBecause ? targetNoteOf(err) : "";
  const message = [`Restore failed: ${f.message}.`, note && `${note}.`, targetState(err, mode)].filter(Boolean).join(" ");
  return { reason: deleted ? "Deleted" : f.reason, message, event: message };
}

/** What a failed restore left the target as: a sentence for its status and Event. */
function targetState(err: unknown, mode: "Staged" | "InPlace"): string {
  if (leftTargetUntouched(err)) return "The target was left untouched: nothing was swapped in, and the staging databases were dropped.";
  if (mode === "InPlace") return "The target may hold part of the data (it was applied in place).";
  return "";
}
