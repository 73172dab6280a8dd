// A planned switchover, as a DBA does it: the old primary stops taking writes
// (read-only), the candidate applies everything the old primary had, then the
// candidate stops replicating and becomes writable. Only then is the primary
// role moved (by the caller: status, labels, the other replicas). No write the
// old primary acknowledged is lost: the candidate is only promoted once its
// executed GTIDs contain the old primary's final position.
import type { Clock } from "@stateward/core";
import type { InstanceConnection } from "@stateward/mysql";
import { awaitApplied } from "./catch-up.ts";
import { readServer, setReadOnly, stopReplica } from "./server.ts";

export class SwitchoverError extends Error {
  override readonly name = "SwitchoverError";
}

export interface SwitchoverResult {
  /** The old primary's final position, which the new primary has applied. */
  position: string;
  /** How long writes were refused (read-only to promotion), in milliseconds. */
  readOnlyMs: number;
}

export interface SwitchoverOptions {
  /** How long the candidate may take to apply the old primary's final position, measured by `clock`. */
  catchUpMs: number;
  clock: Clock;
  /**
   * The reconcile's (aborted when this manager stops or loses leadership), checked before each
   * step: an aborted switchover gives the old primary its writes back and changes nothing else,
   * so a new leader finds the cluster as status says.
   */
  signal?: AbortSignal;
}

/**
 * Moves the primary role from `from` to `to` (a caught-up replica of it).
 * On failure before the promotion the old primary is made writable again.
 * @throws SwitchoverError when the candidate does not catch up in time
 */
export async function switchover(from: InstanceConnection, to: InstanceConnection, { catchUpMs, clock, signal }: SwitchoverOptions): Promise<SwitchoverResult> {
  signal?.throwIfAborted();
  await setReadOnly(from, true);
  // How long writes were refused, for the SwitchedOver Event: a measurement, not a bound.
  const started = performance.now();
  let position: string;
  try {
    position = (await readServer(from)).gtidExecuted;
    const caughtUp = await awaitApplied(to, position, { clock, withinMs: catchUpMs, signal });
    if (!caughtUp.applied) {
      throw new SwitchoverError(`the candidate had not applied the primary's transactions (up to ${position}; applied ${caughtUp.executed || "nothing"}) after ${Math.round(catchUpMs / 1000)} s; the old primary takes writes again`);
    }
    signal?.throwIfAborted();
    await stopReplica(to);
    await setReadOnly(to, false);
  } catch (err) {
    await setReadOnly(from, false).catch(() => undefined);
    throw err;
  }
  return { position, readOnlyMs: Math.round(performance.now() - started) };
}
