import { setTimeout as sleep } from "node:timers/promises";

/**
 * Polls `probe` until it returns a value other than undefined (errors count
 * as "not yet"); fails with the last error after `timeoutMs`.
 */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < until) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await sleep(everyMs);
  }
  const reason = last instanceof Error ? `: ${last.message}` : "";
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${reason}`);
}
