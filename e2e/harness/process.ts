// Child processes of the test environment: started with their output in a log
// file, waited for with a deadline, stopped by pid. A process that exits early
// or misses its deadline fails loudly with its name and the tail of its log.
import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { messageOf } from "@stateward/core/errors";

export interface ProcessSpec {
  /** Name used in messages, e.g. "kube-apiserver". */
  name: string;
  command: string;
  args: string[];
  logFile: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /**
   * Detached processes outlive the Node process that started them
   * (`make dev-up`); attached ones are for test runs. Defaults to false.
   */
  detached?: boolean;
}

export interface RunningProcess {
  name: string;
  pid: number;
  logFile: string;
  /** Resolves with the exit code once the process has exited (attached processes only). */
  exited: Promise<number | null> | undefined;
}

export class EnvironmentError extends Error {
  override name = "EnvironmentError";
}

/** The last `lines` lines of a log file, for error messages. */
export function logTail(file: string, lines = 25): string {
  if (!existsSync(file)) return "(no log written)";
  const text = readFileSync(file, "utf8").trimEnd().split("\n");
  return text.slice(-lines).join("\n");
}

export function startProcess(spec: ProcessSpec): RunningProcess {
  const fd = openSync(spec.logFile, "a");
  const child = spawn(spec.command, spec.args, {
    cwd: spec.cwd,
    env: spec.env ?? process.env,
    stdio: ["ignore", fd, fd],
    detached: spec.detached ?? false,
  });
  closeSync(fd);
  if (child.pid === undefined) {
    throw new EnvironmentError(`${spec.name}: could not start ${spec.command}`);
  }
  let exited: Promise<number | null> | undefined;
  if (spec.detached) {
    child.unref();
  } else {
    exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  }
  child.once("error", () => undefined);
  return { name: spec.name, pid: child.pid, logFile: spec.logFile, exited };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Polls `ready` until it returns true. Fails with the process's log tail when
 * the deadline passes or the process dies first.
 */
export async function waitUntilReady(
  proc: RunningProcess,
  ready: () => Promise<boolean>,
  deadlineMs: number,
): Promise<void> {
  const until = Date.now() + deadlineMs;
  let lastError = "";
  while (Date.now() < until) {
    if (!isAlive(proc.pid)) {
      throw new EnvironmentError(
        `${proc.name} exited before it became ready. Last lines of ${proc.logFile}:\n${logTail(proc.logFile)}`,
      );
    }
    try {
      if (await ready()) return;
    } catch (err) {
      lastError = messageOf(err);
    }
    await sleep(200);
  }
  throw new EnvironmentError(
    `${proc.name} did not become ready within ${Math.round(deadlineMs / 1000)} s` +
      (lastError ? ` (last check: ${lastError})` : "") +
      `. Last lines of ${proc.logFile}:\n${logTail(proc.logFile)}`,
  );
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the pid is gone. */
export async function stopPid(pid: number, graceMs = 10_000): Promise<void> {
  if (!isAlive(pid)) return;
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  const until = Date.now() + graceMs;
  while (Date.now() < until) {
    if (!isAlive(pid)) return;
    await sleep(50);
  }
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    return;
  }
  while (isAlive(pid)) await sleep(50);
}
