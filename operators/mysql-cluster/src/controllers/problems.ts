// How the steps of a reconcile fail: a problem the user must fix (written
// into status, no retry until the object changes), a server that does not
// answer (said in its member's message), anything else (thrown, retried).
import { isNotFound } from "@stateward/core";
import { MissingSecretError, MySQLError } from "@stateward/mysql";

/** A problem the user must fix before the operator can go on: status, an Event, no retry until the object changes. */
export class ClusterProblem extends Error {
  readonly reason: string;
  readonly phase: "Pending" | "Failed";
  constructor(phase: "Pending" | "Failed", reason: string, message: string) {
    super(message);
    this.phase = phase;
    this.reason = reason;
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
