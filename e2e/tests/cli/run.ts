// Runs the `stateward` command as a user does — a separate process, the
// environment's kubeconfig as the current one — and collects what it printed.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { repoRoot } from "../../harness/index.ts";

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export function stateward(kubeconfig: string, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(repoRoot, "cli", "src", "main.ts"), ...args],
      { env: { ...process.env, KUBECONFIG: kubeconfig }, timeout: 120_000 },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr }));
  });
}
