// Errors of backups and restores, turned into a condition reason and a
// message a user can act on. Messages never carry credentials: the engine's
// and the MySQL package's errors are already stripped of them.
import { MissingSecretError, MySQLError } from "@stateward/mysql";
import { isBackupError } from "../errors.ts";

export interface Failure {
  reason: string;
  message: string;
}

export function describeFailure(err: unknown, abortedBecause?: string): Failure {
  if (abortedBecause) return { reason: "Interrupted", message: `stopped because ${abortedBecause}` };
  if (err instanceof MissingSecretError) return { reason: err.reason, message: err.message };
  if (err instanceof MySQLError) return { reason: `MySQL${err.failure}`, message: err.message };
  if (isBackupError(err)) return { reason: err.reason, message: err.message };
  return { reason: "Error", message: err instanceof Error ? err.message : String(err) };
}

/**
 * Why an operation's signal was aborted: the reason the manager gave (e.g.
 * it stops for an unexpected error, FatalErrorStop), else `otherwise`.
 */
export function stopReason(signal: AbortSignal, otherwise: string): string {
  const r: unknown = signal.reason;
  return r instanceof Error && r.name !== "AbortError" && r.message ? r.message : otherwise;
}
