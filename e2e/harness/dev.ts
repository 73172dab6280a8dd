// `make dev-up`, `make dev-down` and `make dev-status`: the developer
// environment under .stateward/dev, left running between commands.
//
// Usage: node e2e/harness/dev.ts up|down|status
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { devDir, isRunning, readState, startEnvironment, stopRecorded } from "./environment.ts";
import { EnvironmentError, isAlive, stopPid } from "./process.ts";

/** The manager `make demo` started in the background, recorded by pid. */
async function stopDemoManager(): Promise<string[]> {
  const pidFile = join(devDir, "manager.pid");
  if (!existsSync(pidFile)) return [];
  const pid = Number(readFileSync(pidFile, "utf8").trim());
  rmSync(pidFile, { force: true });
  if (!pid || !isAlive(pid)) return [];
  const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
  if (!cmdline.includes("cli/src/main.ts")) return [];
  await stopPid(pid, 40_000);
  return [`the demo manager (pid ${pid})`];
}

function describe(): string {
  const state = readState(devDir);
  if (!state) return "not running";
  return [
    `Kubernetes API   ${state.server}`,
    `kubeconfig       ${state.kubeconfig}`,
    `MariaDB          ${state.mysql.host}:${state.mysql.port} (user ${state.mysql.user}${state.mysql.pid ? `, started by the harness` : ", the machine's server"})`,
    `S3               ${state.s3.endpoint} (bucket ${state.s3.bucket}, region ${state.s3.region})`,
    `logs             ${join(devDir, "cluster", "logs")}, ${join(devDir, "s3")}`,
    "",
    "Use it from a shell:",
    `  . ${join(devDir, "env")}     # KUBECONFIG, MYSQL_*, S3_*, and kubectl first on PATH`,
    "  kubectl get nodes",
  ].join("\n");
}

async function main(command: string | undefined): Promise<void> {
  switch (command) {
    case "up": {
      if (isRunning(devDir)) {
        console.log(`The environment is already up.\n\n${describe()}`);
        return;
      }
      const started = Date.now();
      console.log("Starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK, MariaDB and S3 ...");
      await startEnvironment({ dir: devDir, detached: true });
      console.log(`Up in ${((Date.now() - started) / 1000).toFixed(1)} s.\n\n${describe()}`);
      return;
    }
    case "down": {
      const stopped = await stopDemoManager();
      stopped.push(...(await stopRecorded(devDir)));
      console.log(stopped.length ? `Stopped ${stopped.join(", ")}.` : "Nothing was running.");
      return;
    }
    case "status":
      console.log(isRunning(devDir) ? describe() : readState(devDir) ? "partly running: run `make dev-down` then `make dev-up`" : "not running");
      return;
    default:
      throw new Error("usage: dev.ts up|down|status");
  }
}

main(process.argv[2]).catch((err: unknown) => {
  console.error(err instanceof EnvironmentError ? `dev-environment: ${err.message}` : err);
  process.exit(1);
});
