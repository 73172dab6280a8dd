// Cancellation errors of the backup engine and the restore: an operation told
// to stop through its AbortSignal fails with reason Aborted, naming what was
// stopped and why. The error type itself is the package's (../errors.ts).
import { BackupError } from "../errors.ts";

/** The error thrown for a cancelled operation, naming what was cancelled. */
export function abortedError(what: string, signal: AbortSignal | undefined): BackupError {
  const reason: unknown = signal?.reason;
  const detail = reason instanceof Error && reason.name !== "AbortError" ? `: ${reason.message}` : "";
  return new BackupError("Aborted", `${what} was aborted${detail}`, { retryable: true });
}

export function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw abortedError(what, signal);
}
