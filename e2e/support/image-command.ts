// The manager's command line as the image runs it: the Dockerfile's ENTRYPOINT — node
// with the V8 memory flags the image ships and the single-file build dist/stateward.js
// (`make build`) — with this process's node binary, and the ENV of the image's last stage
// (MALLOC_ARENA_MAX: glibc's share of the memory). Benchmarks and the memory tests
// measure the manager as users run it, not the .ts sources under the type stripper
// (docs/performance.md). The Dockerfile stays the one place those flags are written.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../harness/index.ts";

/** The ENTRYPOINT of a Dockerfile's last stage, in exec form, as an argv. */
export function entrypointOf(dockerfile: string): string[] {
  const lines = [...dockerfile.matchAll(/^ENTRYPOINT\s+(\[.*\])\s*$/gm)];
  const last = lines.at(-1);
  if (!last) throw new Error("the Dockerfile has no ENTRYPOINT in exec form ([\"node\", ...])");
  const argv = JSON.parse(last[1]!) as unknown;
  if (!Array.isArray(argv) || argv.length < 2 || argv[0] !== "node" || !argv.every((a) => typeof a === "string")) {
    throw new Error(`the Dockerfile's ENTRYPOINT is not ["node", ...]: ${last[1]}`);
  }
  return argv;
}

/** The variables `ENV NAME=value` (one per line) sets in a Dockerfile's last stage. */
export function envOf(dockerfile: string): Record<string, string> {
  const lastStage = dockerfile.slice(dockerfile.search(/^FROM\s[^\n]*$(?![\s\S]*^FROM\s)/m));
  const env: Record<string, string> = {};
  for (const [, name, value] of lastStage.matchAll(/^ENV\s+([A-Za-z_][A-Za-z0-9_]*)=(\S*)\s*$/gm)) env[name!] = value!;
  return env;
}

function dockerfile(): string {
  return readFileSync(join(repoRoot, "Dockerfile"), "utf8");
}

/** What the image passes to node: its options, then dist/stateward.js. */
function imageNodeArgs(): string[] {
  return entrypointOf(dockerfile()).slice(1);
}

/** The environment the image sets for its process (NODE_ENV, MALLOC_ARENA_MAX). */
export function imageEnv(): Record<string, string> {
  return envOf(dockerfile());
}

/**
 * The node options of the image's ENTRYPOINT (they size V8's heap): for managers
 * the benchmarks fork from the .ts sources, so that their memory figures are the image's.
 */
export function imageHeapFlags(): string[] {
  return imageNodeArgs().filter((a) => a.startsWith("--"));
}

let built = false;

/**
 * Builds dist/stateward.js (`make build`: hack/build.ts, 10–40 s) once per process
 * and returns the image's command line, run from the repository's root, followed by `args`,
 * and the variables the image sets (to add to the process's environment).
 */
export function imageCommand(args: string[]): { command: string; args: string[]; cwd: string; env: Record<string, string> } {
  if (!built) {
    execFileSync(process.execPath, [join(repoRoot, "hack", "build.ts")], { cwd: repoRoot, stdio: "ignore" });
    built = true;
  }
  return { command: process.execPath, args: [...imageNodeArgs(), ...args], cwd: repoRoot, env: imageEnv() };
}
