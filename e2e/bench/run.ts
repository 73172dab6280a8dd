// `make bench`: starts its own real environment (control plane, MariaDB, S3)
// under .stateward/bench/run-<pid>, runs the selected benchmarks one after
// another, prints a table per benchmark, writes JSON to e2e/bench/results/,
// and stops the environment — also on failure and on Ctrl-C.
//
// Usage: node e2e/bench/run.ts [name...]   (no name: all; --list: what there is)
//
// Exits non-zero when a benchmark throws or reports a failure.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { KubeClient, messageOf } from "@stateward/core";
import { kubeConfigFrom } from "../support/kube.ts";
import { repoRoot, startEnvironment, stopAbandonedRuns, type EnvironmentHandle } from "../harness/index.ts";
import type { Benchmark } from "./benchmark.ts";
import { benchmarks } from "./benchmarks.ts";
import { machineInfo, rounded, table, writeReport, type BenchReport } from "./report.ts";

const benchRoot = join(repoRoot, ".stateward", "bench");

class UsageError extends Error {}


function select(names: string[]): Benchmark[] {
  if (names.length === 0) return [...benchmarks];
  const unknown = names.filter((n) => !benchmarks.some((b) => b.name === n));
  if (unknown.length > 0) {
    throw new UsageError(`unknown benchmark ${unknown.join(", ")}; there are: ${benchmarks.map((b) => b.name).join(", ")}`);
  }
  return benchmarks.filter((b) => names.includes(b.name));
}

async function serverVersion(kubeconfig: string): Promise<string> {
  const client = new KubeClient({ kubeConfig: kubeConfigFrom(kubeconfig) });
  return (await client.request<{ gitVersion: string }>("GET", "/version")).gitVersion;
}

async function main(args: string[]): Promise<number> {
  if (args.includes("--list") || args.includes("--help") || args.includes("-h")) {
    console.log("Usage: node e2e/bench/run.ts [name...]\n\nBenchmarks:");
    for (const b of benchmarks) console.log(`  ${b.name.padEnd(14)} ${b.description}`);
    return 0;
  }
  const selected = select(args);
  await stopAbandonedRuns(benchRoot);
  const dir = join(benchRoot, `run-${process.pid}`);
  let env: EnvironmentHandle | undefined;
  let interrupted = false;
  const stopEnvironment = async () => {
    const e = env;
    env = undefined;
    await e?.stop();
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) process.exit(130);
    interrupted = true;
    console.error(`\n${signal}: stopping the environment (again to exit at once) ...`);
    // The manager processes a benchmark forked stop themselves when this process goes (IPC disconnect).
    void stopEnvironment().finally(() => process.exit(130));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  let failed = 0;
  try {
    const started = performance.now();
    console.log("Starting the environment (etcd, kube-apiserver, controller-manager, scheduler, KWOK, MariaDB, S3) ...");
    env = await startEnvironment({ dir, detached: false });
    const machine = machineInfo(await serverVersion(env.info.kubeconfig));
    console.log(
      `Up in ${((performance.now() - started) / 1000).toFixed(1)} s: Kubernetes ${machine.kubernetes}, Node ${machine.node}, ` +
        `${machine.cpus} × ${machine.cpuModel}, ${(machine.memoryBytes / 2 ** 30).toFixed(1)} GiB`,
    );

    for (const bench of selected) {
      console.log(`\n== ${bench.name}: ${bench.description}`);
      const startedAt = new Date();
      const t0 = performance.now();
      try {
        const result = await bench.run(env.info);
        const report: BenchReport = {
          benchmark: bench.name,
          description: bench.description,
          startedAt: startedAt.toISOString(),
          durationSeconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
          passed: result.failures.length === 0,
          machine,
          rows: rounded(result),
          failures: result.failures,
          details: result.details,
        };
        console.log(`\n${table(report.rows)}\n`);
        const files = writeReport(report);
        console.log(`${report.durationSeconds} s; written to ${files.map((f) => f.slice(repoRoot.length + 1)).join(", ")}`);
        if (!report.passed) {
          failed++;
          console.error(`\nFAILED: ${bench.name}\n${result.failures.map((f) => `- ${f}`).join("\n")}`);
        }
      } catch (err) {
        failed++;
        console.error(`\nFAILED: ${bench.name} after ${((performance.now() - t0) / 1000).toFixed(1)} s: ${messageOf(err)}`);
        if (err instanceof Error && err.stack) console.error(err.stack.split("\n").slice(1).join("\n"));
      }
    }
  } finally {
    await stopEnvironment();
  }
  // Logs are kept for a failed run (the error messages point into them).
  if (failed === 0) rmSync(dir, { recursive: true, force: true });
  else console.error(`\nLogs of the environment and the manager processes: ${dir}`);
  console.log(`\nbench: ${selected.length - failed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`bench: ${messageOf(err)}`);
    process.exit(err instanceof UsageError ? 2 : 1);
  },
);
