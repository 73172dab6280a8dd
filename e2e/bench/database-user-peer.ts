// The database-user benchmark side by side with a controller-runtime peer: a
// Go implementation of the same DatabaseUser operator over our CRDs, kept
// outside this repository. Its source directory comes from STATEWARD_PEER_DIR
// (a Go module with cmd/manager, the peer, and cmd/bench, its load driver); it
// is built with Go into the cache (never into the repository), and its driver
// runs the same workload — N Secrets + DatabaseUsers, 20 creates in flight, all
// Ready, a rotation, one DELETE collection — against the peer and against
// `stateward run --operators database-user` as a separate process (the image's
// command line: compiled, with its V8 flags; support/image-command.ts), on
// the environment's control plane and MariaDB. Both managers are measured the
// same way, from /proc (CPU, peak RSS) and their own /metrics (API requests,
// reconciles); SQL per user is MariaDB's server-wide Questions counter. The
// servers' CPU over each run (kube-apiserver, etcd: /proc of the harness's
// processes) says what each manager's requests and watches cost the control
// plane, most of a two-core machine's work.
//
// One run of each is one sample of a noisy quantity: on two shared cores the same
// manager's time until all Ready varies by ±15 % from run to run (a fifth at times),
// more than the difference being measured. So each runs STATEWARD_PEER_PAIRS times
// (default 4: with two, the mean of a side still moved by a tenth from one
// `make bench` to the next — docs/performance.md, finding 28),
// alternated peer, ours, ours, peer, …, so that a drift in the environment (a
// growing etcd, other load) weighs on both alike; the rows give the mean of the
// runs for times, CPU and work, and the highest for memory.
//
// Without STATEWARD_PEER_DIR, or without Go, the comparison is skipped with a
// printed note.
import { spawn, spawnSync } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { randomBytes } from "node:crypto";
import { cacheDir, repoRoot, type EnvironmentInfo } from "../harness/index.ts";
import { imageCommand } from "../support/image-command.ts";
import type { BenchRow } from "./benchmark.ts";
import { cpuSeconds } from "./process-usage.ts";

/** What the peer's driver writes with --json (the fields used here). */
export interface DriverResult {
  startupSeconds: number;
  readySeconds: number;
  cpuSecondsCreatePhase: number;
  cpuSecondsEnd: number;
  vmHWMKiB: number;
  vmRSSAtReadyKiB: number;
  /** RSS after the deletes, before the manager is stopped: idle, having done the whole run. */
  vmRSSEndKiB: number;
  deleteSeconds: number;
  rotationSeconds: number;
  users: number;
  sqlCreatePhase?: Record<string, number>;
  apiRequestsByMethod?: Record<string, number>;
  reconcilesDatabaseUser?: number;
  failures: string[] | null;
  /**
   * CPU seconds each of the environment's servers used while the driver ran (added here, not by the
   * driver): on two cores the control plane is most of the machine, and its share is what a manager's
   * requests and watches cost it.
   */
  serverCpuSeconds?: Record<string, number>;
}

/** The environment's servers whose CPU a run is charged with, by the harness's process names (MariaDB only when the harness started it). */
const SERVERS = ["kube-apiserver", "etcd", "mariadbd"];

/** CPU seconds each of the environment's servers has used since it started, by name; one no longer running is left out. */
function serversCpu(env: EnvironmentInfo): Record<string, number> {
  const used: Record<string, number> = {};
  for (const p of env.processes.filter((p) => SERVERS.includes(p.name))) {
    try {
      used[p.name] = cpuSeconds(p.pid);
    } catch {
      // Gone (the environment is stopping): the run gets no figure for it.
    }
  }
  return used;
}

export interface PeerComparison {
  rows: BenchRow[];
  failures: string[];
  /** Why there are no rows, when the comparison was skipped. */
  skipped?: string;
  details?: Record<string, unknown>;
}

/** How many runs of each, alternated peer, ours, ours, peer, …: STATEWARD_PEER_PAIRS (default 4). */
function pairs(): number {
  const raw = process.env.STATEWARD_PEER_PAIRS ?? "4";
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`STATEWARD_PEER_PAIRS must be a whole number of runs of each, 1 or more, not ${raw}`);
  return n;
}

/** The order of the runs: each pair is peer then ours, the next ours then peer (ABBA), and so on. */
export function runOrder(n: number): ("peer" | "ours")[] {
  return Array.from({ length: n }, (_, i) => (i % 2 === 0 ? (["peer", "ours"] as const) : (["ours", "peer"] as const))).flat();
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * Means by name over the runs. Counters (API requests by method, SQL counters): a key missing from a run
 * counts 0. Measurements (`skipMissing`, a server's CPU): each over the runs that measured it.
 */
function meanByKey(maps: (Record<string, number> | undefined)[], { skipMissing = false } = {}): Record<string, number> {
  const keys = new Set(maps.flatMap((m) => Object.keys(m ?? {})));
  return Object.fromEntries([...keys].map((k) => [k, mean(maps.flatMap((m) => (m && k in m ? [m[k] ?? 0] : skipMissing ? [] : [0])))]));
}

/**
 * One result standing for several runs of the same manager: the mean of times, CPU and work
 * (requests, reconciles, SQL), the highest of the memory figures (a limit must hold for the worst
 * run), the failures of all.
 */
export function combineRuns(runs: DriverResult[]): DriverResult {
  const first = runs[0];
  if (first === undefined) throw new Error("combineRuns: no runs");
  const avg = (f: (r: DriverResult) => number) => mean(runs.map(f));
  const max = (f: (r: DriverResult) => number) => Math.max(...runs.map(f));
  return {
    startupSeconds: avg((r) => r.startupSeconds),
    readySeconds: avg((r) => r.readySeconds),
    cpuSecondsCreatePhase: avg((r) => r.cpuSecondsCreatePhase),
    cpuSecondsEnd: avg((r) => r.cpuSecondsEnd),
    vmHWMKiB: max((r) => r.vmHWMKiB),
    vmRSSAtReadyKiB: max((r) => r.vmRSSAtReadyKiB),
    vmRSSEndKiB: max((r) => r.vmRSSEndKiB),
    deleteSeconds: avg((r) => r.deleteSeconds),
    rotationSeconds: avg((r) => r.rotationSeconds),
    users: first.users,
    sqlCreatePhase: meanByKey(runs.map((r) => r.sqlCreatePhase)),
    apiRequestsByMethod: meanByKey(runs.map((r) => r.apiRequestsByMethod)),
    reconcilesDatabaseUser: avg((r) => r.reconcilesDatabaseUser ?? 0),
    failures: runs.flatMap((r) => r.failures ?? []),
    serverCpuSeconds: meanByKey(runs.map((r) => r.serverCpuSeconds), { skipMissing: true }),
  };
}

const PEER_NOTE = "reference (every \"vs peer\" row): the controller-runtime peer, same workload and environment; ratio ours / peer; runs alternated peer, ours, ours, peer: the mean of each side's runs (memory: the highest)";

/** The go command: $GO, else go on PATH; undefined when there is none that runs. */
function goCommand(): string | undefined {
  const go = process.env.GO ?? "go";
  return spawnSync(go, ["version"], { stdio: "ignore" }).status === 0 ? go : undefined;
}

function run(command: string, args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv; log: string }): Promise<number> {
  mkdirSync(dirname(opts.log), { recursive: true });
  const out = createWriteStream(opts.log, { flags: "a" });
  return new Promise((done, fail) => {
    const child = spawn(command, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    child.on("error", fail);
    child.on("close", (code) => {
      out.end();
      done(code ?? 1);
    });
  });
}

/** Runs the peer's driver on `users` DatabaseUsers against the peer and against our manager, alternated (runOrder). */
export async function comparePeer(env: EnvironmentInfo, users: number): Promise<PeerComparison> {
  const source = process.env.STATEWARD_PEER_DIR;
  if (!source) return { rows: [], failures: [], skipped: "STATEWARD_PEER_DIR is not set: no comparison with the controller-runtime peer" };
  const peerDir = resolve(source);
  if (!existsSync(join(peerDir, "cmd", "manager")) || !existsSync(join(peerDir, "cmd", "bench"))) {
    return { rows: [], failures: [], skipped: `STATEWARD_PEER_DIR (${peerDir}) has no cmd/manager and cmd/bench: no comparison with the peer` };
  }
  const go = goCommand();
  if (!go) return { rows: [], failures: [], skipped: "no Go toolchain (go on PATH, or $GO): no comparison with the controller-runtime peer" };

  const work = join(cacheDir, "peer-dbuser");
  const bin = join(work, "bin");
  const out = join(work, "runs", new Date().toISOString().replaceAll(":", "-"));
  mkdirSync(out, { recursive: true });
  console.log(`  peer: building ${peerDir} into ${bin} (log: ${out}/build.log) ...`);
  for (const cmd of ["manager", "bench"]) {
    const code = await run(go, ["build", "-o", join(bin, cmd), `./cmd/${cmd}`], { cwd: peerDir, log: join(out, "build.log") });
    if (code !== 0) return { rows: [], failures: [`building the peer's ${cmd} failed (exit ${code}): see ${out}/build.log`] };
  }

  const suffix = randomBytes(3).toString("hex");
  const crds = ["mysqlinstances", "databaseusers"].map((k) => join(repoRoot, "crds", `stateward.io_${k}.yaml`)).join(",");
  const driverEnv = { ...process.env, KUBECONFIG: env.kubeconfig, MYSQL_ROOT_PASSWORD: env.mysql.password };
  const ourManager = imageCommand(["run", "--operators", "database-user", "--namespaces", "{ns}", "--metrics-addr", "127.0.0.1:{metrics-port}", "--health-addr", "0"]);
  const runs: Record<"peer" | "ours", string[]> = {
    peer: [join(bin, "manager"), "--namespace", "{ns}", "--health-probe-bind-address", "0", "--metrics-bind-address", "127.0.0.1:{metrics-port}"],
    // As the image runs it: compiled, with its V8 memory flags (the peer, too, is a compiled binary).
    ours: [ourManager.command, ...ourManager.args],
  };
  const results: Record<"peer" | "ours", DriverResult[]> = { peer: [], ours: [] };
  const failures: string[] = [];
  const order = runOrder(pairs());
  for (const [i, who] of order.entries()) {
    const label = `${who}-${results[who].length + 1}`;
    const json = join(out, `${label}.json`);
    console.log(`  peer: run ${i + 1}/${order.length}, ${users} DatabaseUsers against ${who === "peer" ? "the controller-runtime peer" : "our manager (a separate process)"} (log: ${out}/${label}-driver.log) ...`);
    const serversBefore = serversCpu(env);
    const code = await run(
      join(bin, "bench"),
      [
        "run", "--label", label, "--namespace", `dbu-${label}-${suffix}`, "--users", String(users), "--in-flight", "20", "--crds", crds,
        "--mysql-host", env.mysql.host, "--mysql-port", String(env.mysql.port), "--mysql-user", env.mysql.user,
        "--json", json, "--manager-log", join(out, `${label}-manager.log`), "--manager-dir", repoRoot,
        "--", ...runs[who],
      ],
      // The driver starts the manager with its own environment: ours gets the image's (MALLOC_ARENA_MAX).
      { cwd: repoRoot, env: who === "ours" ? { ...driverEnv, ...ourManager.env } : driverEnv, log: join(out, `${label}-driver.log`) },
    );
    if (!existsSync(json)) {
      failures.push(`the peer's driver wrote no result for ${label} (exit ${code}): see ${out}/${label}-driver.log`);
      continue;
    }
    const serversAfter = serversCpu(env);
    const result = JSON.parse(readFileSync(json, "utf8")) as DriverResult;
    result.serverCpuSeconds = Object.fromEntries(Object.keys(serversAfter).filter((k) => k in serversBefore).map((k) => [k, (serversAfter[k] ?? 0) - (serversBefore[k] ?? 0)]));
    results[who].push(result);
    failures.push(...(result.failures ?? []).map((f) => `${label}: ${f}`));
    if (code !== 0 && (result.failures ?? []).length === 0) failures.push(`${label}: the driver exited ${code}: see ${out}/${label}-driver.log`);
    const servers = Object.entries(result.serverCpuSeconds).map(([name, cpu]) => `, ${name} ${cpu.toFixed(2)} s`).join("");
    console.log(`  peer: ${label}: all Ready ${result.readySeconds.toFixed(2)} s, CPU ${result.cpuSecondsCreatePhase.toFixed(2)} s${servers}, peak ${MiB(result.vmHWMKiB).toFixed(1)} MiB`);
  }
  // A side with a missing run is not compared: its mean would stand for fewer runs than the other's.
  if (results.peer.length < order.length / 2 || results.ours.length < order.length / 2) return { rows: [], failures, details: { peerRuns: out } };
  const peer = combineRuns(results.peer);
  const ours = combineRuns(results.ours);
  const pairRow = results.peer.length === results.ours.length ? [timeRatioRow(pairedTimeRatios(results.ours, results.peer))] : [];
  return { rows: [...comparisonRows(ours, peer), ...pairRow], failures, details: { peerRuns: out, peer, ours, runs: results } };
}

/** Student's t at 97.5 % for 1–30 degrees of freedom (beyond: 1.96), for a two-sided 95 % interval. */
const T_975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];

export interface PairedRatios {
  /** ours / peer in each pair, in run order. */
  ratios: number[];
  mean: number;
  /** The 95 % interval of the mean ratio (undefined with one pair: no spread to estimate). */
  low?: number;
  high?: number;
}

/**
 * The time ratio pair by pair: run i of ours against run i of the peer, which ran next to it (runOrder).
 * On a machine whose control plane's speed drifts from run to run, the spread of these ratios says how
 * far one `make bench`'s mean ratio can be trusted — whether "≤ 1.0×" is shown or only not refuted.
 */
export function pairedTimeRatios(ours: DriverResult[], peer: DriverResult[]): PairedRatios {
  const ratios = ours.map((o, i) => o.readySeconds / (peer[i]?.readySeconds ?? Number.NaN));
  const m = mean(ratios);
  if (ratios.length < 2) return { ratios, mean: m };
  const sd = Math.sqrt(ratios.reduce((a, r) => a + (r - m) ** 2, 0) / (ratios.length - 1));
  const half = (T_975[ratios.length - 2] ?? 1.96) * (sd / Math.sqrt(ratios.length));
  return { ratios, mean: m, low: m - half, high: m + half };
}

function timeRatioRow(p: PairedRatios): BenchRow {
  const interval = p.low === undefined || p.high === undefined ? "one pair: no interval" : `95 % interval of the mean ${p.low.toFixed(2)}–${p.high.toFixed(2)}`;
  return {
    metric: "vs peer: time until all Ready, pair by pair (mean of ours / peer)",
    value: p.mean,
    unit: "",
    // In the ratio column too, where the table's other ratios are.
    ratio: p.mean,
    note: `${p.ratios.length} pairs: ${p.ratios.map((r) => r.toFixed(2)).join(", ")}; ${interval}`,
  };
}

const MiB = (kib: number) => kib / 1024;
const total = (m: Record<string, number> | undefined) => Object.values(m ?? {}).reduce((a, b) => a + b, 0);

/** The table's rows: ours as the value, the peer's as the reference. */
export function comparisonRows(ours: DriverResult, peer: DriverResult): BenchRow[] {
  // The note once, on the first row: it holds for every "vs peer" row.
  const vs = (metric: string, unit: string, of: (r: DriverResult) => number, note?: string): BenchRow => ({
    metric: `vs peer: ${metric}`,
    value: of(ours),
    unit,
    reference: of(peer),
    note,
  });
  const sqlPerUser = (r: DriverResult) => (r.sqlCreatePhase?.Questions ?? 0) / r.users;
  return [
    vs(`time until all ${ours.users.toLocaleString("en-US")} Ready`, "s", (r) => r.readySeconds, PEER_NOTE),
    vs("manager CPU while creating (first create -> all Ready)", "s", (r) => r.cpuSecondsCreatePhase),
    vs("manager CPU, whole run", "s", (r) => r.cpuSecondsEnd),
    vs("manager peak RSS (VmHWM)", "MiB", (r) => MiB(r.vmHWMKiB)),
    vs("manager RSS at all Ready", "MiB", (r) => MiB(r.vmRSSAtReadyKiB)),
    vs("manager RSS idle at the end (all deleted)", "MiB", (r) => MiB(r.vmRSSEndKiB)),
    vs("manager start -> MySQLInstance Ready", "s", (r) => r.startupSeconds),
    vs("rotation of one password (Secret update -> new password works)", "s", (r) => r.rotationSeconds),
    vs("delete all (DELETE collection -> all gone)", "s", (r) => r.deleteSeconds),
    vs("API requests (manager's own count)", "requests", (r) => total(r.apiRequestsByMethod)),
    vs("DatabaseUser reconciles", "", (r) => r.reconcilesDatabaseUser ?? 0),
    vs("SQL statements per user while creating (~, server-wide Questions)", "", sqlPerUser),
    // What each manager's work costs the servers it talks to, over the driver's whole run (start, create, rotate, delete).
    ...SERVERS.filter((name) => name in (ours.serverCpuSeconds ?? {}) && name in (peer.serverCpuSeconds ?? {})).map((name) =>
      vs(`${name} CPU, whole run`, "s", (r) => r.serverCpuSeconds?.[name] ?? 0),
    ),
  ];
}
