// `make dev-up`, `make dev-down` and `make dev-status`: the developer
// environment under .stateward/dev, left running between commands.
//
// Usage: node e2e/harness/dev.ts up|down|status
import { join } from "node:path";
import { devDir, isRunning, readState, startEnvironment, stopAll } from "./environment.ts";
import { EnvironmentError } from "./process.ts";

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
      // STATEWARD_OWN_MARIADB=1: a mariadbd of its own, leaving the machine's server on 3306 alone.
      await startEnvironment({ dir: devDir, detached: true, ownMariaDB: process.env.STATEWARD_OWN_MARIADB === "1" });
      console.log(`Up in ${((Date.now() - started) / 1000).toFixed(1)} s.\n\n${describe()}`);
      return;
    }
    case "down": {
      const stopped = await stopAll(devDir);
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
