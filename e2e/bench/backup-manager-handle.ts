// The benchmark's side of backup-manager-process.ts: forks it, waits until
// its caches are synced, asks it for its memoryUsage(), and stops it the way
// Kubernetes stops a Pod (SIGTERM, then SIGKILL after a grace).
import { fork, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { join } from "node:path";
import { logTail } from "../harness/index.ts";
import type { BackupManagerConfig, BackupManagerMessage, BackupManagerRequest } from "./backup-manager-process.ts";

const entry = join(import.meta.dirname, "backup-manager-process.ts");

/** Kubernetes' default terminationGracePeriodSeconds. */
const terminationGraceMs = 30_000;
/** One IPC round trip; a process busy compressing still answers well within this. */
const memoryTimeoutMs = 5_000;

export interface BackupManagerHandle {
  readonly pid: number;
  readonly logFile: string;
  /** Milliseconds from fork() to the manager's "caches synced". */
  readonly startupMs: number;
  /** The process's own process.memoryUsage(): V8 heap and Buffers (external), to explain its RSS. */
  memory(): Promise<NodeJS.MemoryUsage>;
  /** SIGTERM, wait for exit (SIGKILL after 30 s). */
  stop(): Promise<void>;
  /** SIGKILL if still running; for cleanup after a failure. */
  kill(): void;
}

export async function startBackupManager(config: BackupManagerConfig, logFile: string, timeoutMs: number): Promise<BackupManagerHandle> {
  const fd = openSync(logFile, "a");
  const started = performance.now();
  let child: ChildProcess;
  try {
    child = fork(entry, [JSON.stringify(config)], { stdio: ["ignore", fd, fd, "ipc"] });
  } finally {
    closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${entry}`);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  const fail = (why: string) => new Error(`manager process (pid ${pid}) ${why}. Its log (${logFile}) ends with:\n${logTail(logFile)}`);

  // By request id, so an answer that comes after its timeout is dropped rather than taken for the next one.
  const waiting = new Map<number, { resolve: (m: NodeJS.MemoryUsage) => void; reject: (e: Error) => void }>();
  let nextId = 0;
  let onStart: ((m: BackupManagerMessage) => void) | undefined;
  child.on("message", (m: BackupManagerMessage) => {
    if (m.type === "memory") waiting.get(m.id)?.resolve(m.memory);
    else onStart?.(m);
  });
  child.once("exit", (code, signal) => {
    for (const w of waiting.values()) w.reject(fail(`exited (${signal ?? `code ${code}`}) before answering`));
  });

  const first = await new Promise<BackupManagerMessage>((resolve, reject) => {
    const timer = setTimeout(() => reject(fail(`did not sync its caches within ${timeoutMs} ms`)), timeoutMs);
    onStart = (m) => {
      clearTimeout(timer);
      resolve(m);
    };
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(fail(`exited (${signal ?? `code ${code}`}) while starting`));
    });
  }).catch((err: unknown) => {
    child.kill("SIGKILL");
    throw err;
  });
  if (first.type !== "synced") {
    child.kill("SIGKILL");
    throw fail(`failed to start: ${first.type === "failed" ? first.message : first.type}`);
  }
  const startupMs = performance.now() - started;

  return {
    pid,
    logFile,
    startupMs,
    memory: () =>
      new Promise<NodeJS.MemoryUsage>((resolve, reject) => {
        if (!running()) return reject(fail("is not running"));
        const id = nextId++;
        const settle = () => {
          clearTimeout(timer);
          waiting.delete(id);
        };
        const timer = setTimeout(() => {
          settle();
          reject(fail(`did not answer within ${memoryTimeoutMs} ms`));
        }, memoryTimeoutMs);
        waiting.set(id, {
          resolve: (m) => {
            settle();
            resolve(m);
          },
          reject: (e) => {
            settle();
            reject(e);
          },
        });
        const request: BackupManagerRequest = { type: "memory", id };
        child.send(request);
      }),
    stop: async () => {
      if (!running()) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), terminationGraceMs);
      await exited;
      clearTimeout(timer);
      if (child.signalCode === "SIGKILL") throw fail(`ignored SIGTERM for ${terminationGraceMs} ms and was killed`);
      if (child.exitCode !== 0) throw fail(`exited with code ${child.exitCode} on SIGTERM`);
    },
    kill: () => {
      if (running()) child.kill("SIGKILL");
    },
  };
}
