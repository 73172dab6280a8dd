// Whether a server has applied everything up to a position — the candidate of
// a planned switchover (the old primary's final position) and of a failover
// (what its I/O thread received from the lost primary) must, before it takes
// writes. One helper for both, with its bound measured by the injected Clock,
// as every other time the reconciler keeps (health gate, detection, status):
// a test that moves the clock moves these bounds too.
//
//   appliedUpTo   one look, for a caller that must not hold its worker (the
//                 failover requeues and looks again; boundedWait says how
//                 long it has been waiting)
//   awaitApplied  looks until applied or the bound passes, for the planned
//                 switchover, whose old primary is read-only meanwhile: it
//                 finishes, or gives the writes back, within one reconcile
import { setTimeout as sleep } from "node:timers/promises";
import type { Clock } from "@stateward/core";
import type { InstanceConnection } from "@stateward/mysql";
import { gtidContains } from "./gtid.ts";
import { readServer } from "./server.ts";

export interface Applied {
  /** The server's executed transactions contain the position. */
  applied: boolean;
  /** What it has executed. */
  executed: string;
}

/** How often awaitApplied looks: a replica applies a relay log in milliseconds. */
const POLL_MS = 50;

/** One look: has `conn` executed everything in `position`? */
export async function appliedUpTo(conn: InstanceConnection, position: string): Promise<Applied> {
  const executed = (await readServer(conn)).gtidExecuted;
  return { applied: gtidContains(conn.server.flavor, executed, position), executed };
}

/**
 * Looks until `conn` has executed `position` or `withinMs` (by `clock`) have passed; the last look
 * is returned either way. `signal` (the reconcile's) stops the wait between looks.
 */
export async function awaitApplied(conn: InstanceConnection, position: string, wait: { clock: Clock; withinMs: number; signal?: AbortSignal }): Promise<Applied> {
  const since = wait.clock.now();
  for (;;) {
    const look = await appliedUpTo(conn, position);
    if (look.applied || boundedWait(since, wait.clock.now(), wait.withinMs).kind === "overdue") return look;
    wait.signal?.throwIfAborted();
    await sleep(POLL_MS, undefined, wait.signal ? { signal: wait.signal } : undefined);
  }
}

export type WaitState = { kind: "waiting"; leftMs: number } | { kind: "overdue"; waitedMs: number };

/** Where a wait that started at `since` stands at `now`, when it may last `boundMs`. Pure. */
export function boundedWait(since: Date, now: Date, boundMs: number): WaitState {
  const waitedMs = now.getTime() - since.getTime();
  return waitedMs > boundMs ? { kind: "overdue", waitedMs } : { kind: "waiting", leftMs: boundMs - waitedMs };
}
