// How the steps of a reconcile fail: a problem the user must fix (written
// into status, no retry until the object changes), a server that does not
// answer (said in its member's message), anything else (thrown, retried).
import { ReconcileError, isNotFound } from "@stateward/core";
import { MissingSecretError, MySQLError } from "@stateward/mysql";

/**
 * A problem the user must fix before the operator can go on: status, an Event, no retry until
 * the object changes. A Failed one is terminal; a Pending one waits for a Secret (watched).
 */
export class ClusterProblem extends ReconcileError {
  override name = "ClusterProblem";
  readonly phase: "Pending" | "Failed";
  constructor(phase: "Pending" | "Failed", reason: string, message: string) {
    super(reason, message, { terminal: phase === "Failed" });
    this.phase = phase;
  }
}

/** Why a server could not be used, for its member's message; anything but a server's or a Secret's error is thrown on. */
export function memberError(err: unknown): string {
  if (err instanceof MySQLError || err instanceof MissingSecretError) return err.message;
  throw err;
}

/** A pod (or other object) already gone is fine to skip. */
export function ignoreNotFound(err: unknown): void {
  if (!isNotFound(err)) throw err;
}
