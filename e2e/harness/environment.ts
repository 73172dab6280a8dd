// The whole test environment — control plane, MariaDB, S3, and the real node
// where the machine can run one — as one unit that `make dev-up`, `make demo`
// and Vitest's global setup all start the same way. Its description is
// written to <dir>/state.json (pids to stop) and <dir>/env (shell exports for
// users and scripts).
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ControlPlane } from "./controlplane.ts";
import { ensureMariaDB, type MariaDBEndpoint } from "./mariadb.ts";
import { ensurePki } from "./pki.ts";
import { EnvironmentError, isAlive, stopPid } from "./process.ts";
import {
  admissionConfigForRealNodeByDefault,
  admissionPlugins,
  realNodeDir,
  startRealNode,
  stopRealNode,
  type RealNodeInfo,
} from "./realnode/node.ts";
import { realNodeSupport, type RealNodeSupport } from "./realnode/support.ts";
import { startS3, type S3Endpoint } from "./s3.ts";
import { repoRoot, tools } from "./tools.ts";
import { messageOf } from "@stateward/core/errors";

export interface EnvironmentInfo {
  dir: string;
  kubeconfig: string;
  server: string;
  mysql: MariaDBEndpoint;
  s3: S3Endpoint;
  /** Every process the harness started, in start order. */
  processes: { name: string; pid: number; logFile: string }[];
  /** Whether this machine can run the real node, and why not (absent in a state.json older than the real node). */
  realNodeSupport: RealNodeSupport;
  /** The real node, when it runs (started with the environment, or by a suite with useRealNode). */
  realNode?: RealNodeInfo;
}

/**
 * The real node in an environment:
 * - "off": KWOK only;
 * - "on-demand": the apiserver is ready for it (admission plugins that route a namespace's
 *   pods to it) and a suite that needs it starts it (useRealNode) — the integration runs;
 * - "start": started with the environment, and every pod goes to it unless its
 *   namespace says otherwise — `make dev-up` where the machine allows it.
 */
export type RealNodeMode = "off" | "on-demand" | "start";

export interface EnvironmentHandle {
  info: EnvironmentInfo;
  controlPlane: ControlPlane;
  stop(): Promise<void>;
}

/** Folder of the developer environment (`make dev-up`); STATEWARD_DEV_DIR overrides it (tests). */
export const devDir = process.env.STATEWARD_DEV_DIR ?? join(repoRoot, ".stateward", "dev");
/** Where `kubectl`, `helm` and friends are linked, first on PATH in the env file. */
export const localBin = join(repoRoot, ".stateward", "bin");

function statePath(dir: string): string {
  return join(dir, "state.json");
}

export function readState(dir: string): EnvironmentInfo | undefined {
  const path = statePath(dir);
  if (!existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, "utf8")) as EnvironmentInfo;
}

/** True when /proc says `pid` is still the process we started (guards against pid reuse). */
function isOurs(pid: number, logFile: string, name: string): boolean {
  if (!isAlive(pid)) return false;
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    const base = name.split(":")[0] ?? name;
    return cmdline.includes(base) || cmdline.includes(dirname(logFile));
  } catch {
    return false;
  }
}

/**
 * Stops what a state file records, by pid, and removes the state. Everything
 * but etcd stops side by side (kube-apiserver alone takes seconds to drain);
 * etcd goes last so the apiserver never loses its store mid-shutdown.
 */
export async function stopRecorded(dir: string): Promise<string[]> {
  const state = readState(dir);
  if (!state) return [];
  const ours = state.processes.filter((p) => isOurs(p.pid, p.logFile, p.name));
  const stop = (p: (typeof ours)[number]) => stopPid(p.pid, p.name.startsWith("mariadbd") ? 30_000 : 10_000);
  await Promise.all(ours.filter((p) => p.name !== "etcd").map(stop));
  await Promise.all(ours.filter((p) => p.name === "etcd").map(stop));
  rmSync(statePath(dir), { force: true });
  return ours.map((p) => `${p.name} (pid ${p.pid})`);
}

/**
 * Stops mariadbd servers a test started under `dir` beyond the recorded ones
 * (one per pod of a MySQLCluster test), found by their pid files; a pid is
 * only signalled when its command line names that pid file.
 */
export async function stopStrayServers(dir: string): Promise<void> {
  const pidFiles = (readdirSync(dir, { recursive: true }) as string[]).filter((f) => f.endsWith("mariadbd.pid")).map((f) => join(dir, f));
  await Promise.all(
    pidFiles.map(async (file) => {
      const pid = Number(readFileSync(file, "utf8").trim());
      let cmdline: string;
      try {
        cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      } catch {
        return; // not running
      }
      if (cmdline.includes(file)) await stopPid(pid, 30_000);
    }),
  );
}

/**
 * The manager `make demo` starts in the background (e2e/demo/manager.ts),
 * recorded in <dir>/manager.pid; it stops its pods' servers itself, and the
 * ones a killed manager left behind are stopped by their pid files.
 */
export async function stopDemoManager(dir: string): Promise<string[]> {
  const pidFile = join(dir, "manager.pid");
  const stopped: string[] = [];
  if (existsSync(pidFile)) {
    const pid = Number(readFileSync(pidFile, "utf8").trim());
    rmSync(pidFile, { force: true });
    if (pid && isOurs(pid, join(dir, "manager.log"), "e2e/demo/manager.ts")) {
      await stopPid(pid, 60_000);
      stopped.push(`the demo manager and its pods' servers (pid ${pid})`);
    }
  }
  if (existsSync(dir)) await stopStrayServers(dir);
  return stopped;
}

/** Everything started under `dir`: a demo manager, the real node (host put back), the recorded processes, stray servers. */
export async function stopAll(dir: string): Promise<string[]> {
  const stopped = await stopDemoManager(dir);
  stopped.push(...(await stopRealNode(realNodeDir(dir), join(dir, "kubeconfig"))));
  stopped.push(...(await stopRecorded(dir)));
  return stopped;
}

/** All recorded processes still alive? */
export function isRunning(dir: string): boolean {
  const state = readState(dir);
  return !!state && state.processes.every((p) => isOurs(p.pid, p.logFile, p.name));
}

function linkTool(name: string, target: string): void {
  mkdirSync(localBin, { recursive: true });
  const link = join(localBin, name);
  try {
    if (readlinkSync(link) === target) return;
    unlinkSync(link);
  } catch {
    // absent or not a link
  }
  symlinkSync(target, link);
}

/** Shell `export` lines that put a user's shell into the environment. */
export function envFile(info: EnvironmentInfo): string {
  const q = (v: string | number) => `'${String(v).replaceAll("'", `'\\''`)}'`;
  const vars: [string, string | number][] = [
    ["KUBECONFIG", info.kubeconfig],
    ["MYSQL_HOST", info.mysql.host],
    ["MYSQL_PORT", info.mysql.port],
    ["MYSQL_ROOT_PASSWORD", info.mysql.password],
    ["S3_ENDPOINT", info.s3.endpoint],
    ["S3_REGION", info.s3.region],
    ["S3_ACCESS_KEY_ID", info.s3.accessKeyId],
    ["S3_SECRET_ACCESS_KEY", info.s3.secretAccessKey],
    ["S3_BUCKET", info.s3.bucket],
  ];
  const lines = vars.map(([k, v]) => `export ${k}=${q(v)}`);
  lines.push(`export PATH=${q(localBin)}:"$PATH"`);
  return `# Written by the Stateward test environment; source it: . ${join(info.dir, "env")}\n${lines.join("\n")}\n`;
}

/**
 * Starts everything under `dir`. Leftovers of an earlier run recorded there
 * are stopped first, so a crashed run never blocks the next one.
 */
export async function startEnvironment(opts: {
  dir: string;
  detached: boolean;
  nodes?: number;
  /** A mariadbd of its own even when the machine's server answers on 3306 (nothing shared with other environments). */
  ownMariaDB?: boolean;
  /** The real node (see RealNodeMode). Defaults to "off". */
  realNode?: RealNodeMode;
  log?: (line: string) => void;
}): Promise<EnvironmentHandle> {
  await stopAll(opts.dir);
  rmSync(opts.dir, { recursive: true, force: true });
  mkdirSync(opts.dir, { recursive: true });
  linkTool("kubectl", tools.kubectl());
  linkTool("helm", tools.helm());

  const mode = opts.realNode ?? "off";
  const support = mode === "off" ? ({ ok: false, reason: "not requested" } as const) : realNodeSupport();
  const apiserverArgs: string[] = [];
  if (support.ok) {
    apiserverArgs.push(admissionPlugins);
    if (mode === "start") {
      const admission = join(opts.dir, "admission.yaml");
      writeFileSync(admission, admissionConfigForRealNodeByDefault());
      apiserverArgs.push(`--admission-control-config-file=${admission}`);
    }
  }
  const controlPlane = new ControlPlane({ dir: join(opts.dir, "cluster"), detached: opts.detached, nodes: opts.nodes, apiserverArgs });
  // The three parts are independent; start them side by side.
  const [cluster, db, store] = await Promise.allSettled([
    controlPlane.start(),
    ensureMariaDB(join(opts.dir, "mariadb"), opts.detached, opts.ownMariaDB),
    startS3(join(opts.dir, "s3"), opts.detached),
  ]);
  const processes: EnvironmentInfo["processes"] = [...controlPlane.info().processes];
  if (db.status === "fulfilled" && db.value.pid !== undefined) {
    processes.push({ name: "mariadbd", pid: db.value.pid, logFile: db.value.logFile ?? "" });
  }
  if (store.status === "fulfilled") processes.push({ name: "versitygw", pid: store.value.pid, logFile: store.value.logFile });
  if (cluster.status === "rejected" || db.status === "rejected" || store.status === "rejected") {
    // Stop whatever did come up, then report every part that failed.
    for (const p of [...processes].reverse()) await stopPid(p.pid);
    const failures = [cluster, db, store]
      .filter((r): r is PromiseRejectedResult => r.status === "rejected")
      .map((r) => messageOf(r.reason));
    throw new EnvironmentError(`the test environment did not come up:\n${failures.join("\n\n")}`);
  }
  const kubeconfig = join(opts.dir, "kubeconfig");
  copyFileSync(controlPlane.kubeconfigPath, kubeconfig);
  const info: EnvironmentInfo = {
    dir: opts.dir,
    kubeconfig,
    server: controlPlane.server,
    mysql: db.value,
    s3: store.value,
    processes,
    realNodeSupport: support,
  };
  writeFileSync(statePath(opts.dir), JSON.stringify(info, null, 2));
  writeFileSync(join(opts.dir, "env"), envFile(info), { mode: 0o600 });
  if (mode === "start" && support.ok) {
    try {
      await useRealNode(info, { detached: opts.detached, log: opts.log });
    } catch (err) {
      await stopAll(opts.dir);
      throw err;
    }
  }
  return {
    info,
    controlPlane,
    stop: async () => {
      await stopRealNode(realNodeDir(opts.dir), kubeconfig);
      await stopRecorded(opts.dir);
    },
  };
}

/**
 * The environment's real node, started when it is not running yet (its
 * processes are added to state.json, so every stop path stops them). For
 * suites: `const node = await useRealNode(inject("environment"))` in
 * beforeAll, `await releaseRealNode(env)` in afterAll.
 */
export async function useRealNode(info: EnvironmentInfo, opts: { detached?: boolean; log?: (line: string) => void } = {}): Promise<RealNodeInfo> {
  const state = readState(info.dir) ?? info;
  if (state.realNode && state.realNode.processes.every((p) => isOurs(p.pid, p.logFile, p.name))) return state.realNode;
  const support = state.realNodeSupport ?? { ok: false, reason: "the environment was started without it" };
  if (!support.ok) throw new EnvironmentError(`no real node in this environment: ${support.reason}`);
  const pki = await ensurePki(join(info.dir, "cluster", "pki"));
  // Attached to the environment's lifetime: detached like its other processes in dev mode,
  // and always detached from a test worker (workers come and go; the run's stop path stops it).
  const node = await startRealNode({ envDir: info.dir, kubeconfig: info.kubeconfig, server: info.server, pki, detached: opts.detached ?? true, log: opts.log });
  const updated = readState(info.dir) ?? info;
  updated.realNode = node;
  updated.processes = [...updated.processes.filter((p) => !node.processes.some((n) => n.pid === p.pid)), ...node.processes];
  writeFileSync(statePath(info.dir), JSON.stringify(updated, null, 2));
  return node;
}

/** Stops the environment's real node (the host put back) and forgets it in state.json. */
export async function releaseRealNode(info: EnvironmentInfo): Promise<string[]> {
  const stopped = await stopRealNode(realNodeDir(info.dir), info.kubeconfig);
  const state = readState(info.dir);
  if (state?.realNode) {
    const pids = new Set(state.realNode.processes.map((p) => p.pid));
    state.processes = state.processes.filter((p) => !pids.has(p.pid));
    delete state.realNode;
    writeFileSync(statePath(info.dir), JSON.stringify(state, null, 2));
  }
  return stopped;
}

/**
 * Stops the environments under `root` whose runner died (folders named
 * `run-<pid>` whose pid is gone) and removes them, so a crashed test or
 * benchmark run never blocks or leaks into the next one.
 */
export async function stopAbandonedRuns(root: string): Promise<void> {
  if (!existsSync(root)) return;
  for (const entry of readdirSync(root)) {
    const m = /^run-(\d+)$/.exec(entry);
    if (!m || isAlive(Number(m[1]))) continue;
    const run = join(root, entry);
    // An environment of its own a suite started inside the run (the demo's) goes first.
    for (const sub of readdirSync(run)) if (existsSync(statePath(join(run, sub)))) await stopAll(join(run, sub));
    await stopAll(run);
    rmSync(join(root, entry), { recursive: true, force: true });
  }
}
