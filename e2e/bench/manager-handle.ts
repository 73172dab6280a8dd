// The benchmark's side of manager-process.ts: forks it, waits until its
// caches are synced, asks it for its stats, scrapes its /metrics, and stops
// it the way Kubernetes stops a Pod (SIGTERM, then SIGKILL after a grace).
import { fork, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { join } from "node:path";
import { logTail } from "../harness/index.ts";
import { imageEnv, imageHeapFlags } from "../support/image-command.ts";
import type { ManagerProcessConfig, ManagerProcessMessage, ManagerProcessRequest, ManagerStats } from "./manager-process.ts";

const entry = join(import.meta.dirname, "manager-process.ts");

/** Kubernetes' default terminationGracePeriodSeconds. */
const terminationGraceMs = 30_000;
/** A stats answer is one IPC round trip; this long means the process is wedged. */
const statsTimeoutMs = 10_000;

export interface ManagerHandle {
  readonly pid: number;
  readonly logFile: string;
  /** performance.now() of this process when the manager process was forked. */
  readonly forkedAt: number;
  /** Milliseconds from fork() to the manager's "caches synced": Node start, module loading, CRDs, LIST. */
  readonly startupMs: number;
  /** Stats at the moment the caches were synced. */
  readonly atSync: ManagerStats;
  /** With `gc`, also the live heap after a full garbage collection (which takes the process some milliseconds). */
  stats(opts?: { gc?: boolean }): Promise<ManagerStats>;
  /** Starts recording write requests afresh (earlier ones are dropped). */
  recordWrites(): Promise<ManagerStats>;
  /** GET /metrics: the Prometheus text exposition. */
  scrape(): Promise<string>;
  /** SIGTERM, wait for exit (SIGKILL after 30 s); resolves with milliseconds from the signal to the exit. */
  stop(): Promise<number>;
  /** SIGKILL if still running; for cleanup after a failure. */
  kill(): void;
  running(): boolean;
}

/** `env`: variables set for the manager process on top of this one's (e.g. a TMPDIR). */
export async function startManagerProcess(config: ManagerProcessConfig, logFile: string, timeoutMs: number, env: Record<string, string> = {}): Promise<ManagerHandle> {
  const fd = openSync(logFile, "a");
  const started = performance.now();
  let child: ChildProcess;
  try {
    child = fork(entry, [JSON.stringify(config)], {
      stdio: ["ignore", fd, fd, "ipc"],
      // The image's V8 heap flags and environment: its memory as a pod's (support/image-command.ts).
      execArgv: [...process.execArgv, ...imageHeapFlags(), "--expose-gc"],
      env: { ...process.env, ...imageEnv(), ...env },
    });
  } finally {
    closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${entry}`);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  const fail = (why: string) => new Error(`manager process (pid ${pid}) ${why}. Its log (${logFile}) ends with:\n${logTail(logFile)}`);

  // Answers come back in request order: one IPC channel, one handler.
  const waiting: { resolve: (s: ManagerStats) => void; reject: (e: Error) => void }[] = [];
  let onSynced: ((m: ManagerProcessMessage) => void) | undefined;
  child.on("message", (m: ManagerProcessMessage) => {
    if (m.type === "stats") waiting.shift()?.resolve(m.stats);
    else onSynced?.(m);
  });
  child.once("exit", (code, signal) => {
    for (const w of waiting.splice(0)) w.reject(fail(`exited (${signal ?? `code ${code}`}) before answering`));
  });

  const first = await new Promise<ManagerProcessMessage>((resolve, reject) => {
    const timer = setTimeout(() => reject(fail(`did not sync its caches within ${timeoutMs} ms`)), timeoutMs);
    onSynced = (m) => {
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
  const metricsUrl = `http://127.0.0.1:${first.metricsPort}/metrics`;

  const ask = (request: ManagerProcessRequest) =>
    new Promise<ManagerStats>((resolve, reject) => {
      if (!running()) return reject(fail("is not running"));
      const timer = setTimeout(() => reject(fail(`did not answer "${request.type}" within ${statsTimeoutMs} ms`)), statsTimeoutMs);
      waiting.push({
        resolve: (s) => {
          clearTimeout(timer);
          resolve(s);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      child.send(request);
    });

  return {
    pid,
    logFile,
    forkedAt: started,
    startupMs,
    atSync: first.stats,
    stats: (opts = {}) => ask({ type: "stats", gc: opts.gc }),
    recordWrites: () => ask({ type: "record-writes" }),
    scrape: async () => {
      const res = await fetch(metricsUrl);
      if (!res.ok) throw fail(`answered ${res.status} on /metrics`);
      return res.text();
    },
    stop: async () => {
      if (!running()) return 0;
      const signalled = performance.now();
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), terminationGraceMs);
      await exited;
      clearTimeout(timer);
      if (child.signalCode === "SIGKILL") throw fail(`ignored SIGTERM for ${terminationGraceMs} ms and was killed`);
      if (child.exitCode !== 0) throw fail(`exited with code ${child.exitCode} on SIGTERM`);
      return performance.now() - signalled;
    },
    kill: () => {
      if (running()) child.kill("SIGKILL");
    },
    running,
  };
}
