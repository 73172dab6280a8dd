// What the command prints reaches a pipe whole, however slowly the reader reads:
// `stateward crds | kubectl apply -f -`, `stateward status -A -o json | jq`. A
// pipe holds 64 KiB; the rest waits in the process until the reader takes it,
// and process.exit would drop it (the CRDs are ~110 KiB: a reader starting late
// got the first 64 KiB, cut mid-line, and exit status 0).
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { join } from "node:path";

// Two CLI processes that strip the types of the CLI and its imports: seconds each on a loaded machine.
const main = join(import.meta.dirname, "main.ts");

/** `stateward ARGS` with stdout into a pipe whose reader waits a second before reading. */
function throughSlowPipe(args: string[]): string {
  // "$0" is node, "$1" main.ts, the rest the arguments: nothing is interpolated into the script.
  return execFileSync("sh", ["-c", `"$0" "$@" | (sleep 1; cat)`, process.execPath, main, ...args], { encoding: "utf8", maxBuffer: 16 << 20 });
}

describe("output into a pipe", () => {
  it("crds arrives whole when the reader starts late", () => {
    const whole = execFileSync(process.execPath, [main, "crds"], { encoding: "utf8", maxBuffer: 16 << 20 });
    expect(whole.length).toBeGreaterThan(64 * 1024);
    const piped = throughSlowPipe(["crds"]);
    expect(piped.length).toBe(whole.length);
    expect(piped).toBe(whole);
  }, 120_000);
});
