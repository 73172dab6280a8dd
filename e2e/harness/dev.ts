// `make dev-up`, `make dev-down` and `make dev-status`: the developer
// environment under .stateward/dev, left running between commands.
//
// Usage: node e2e/harness/dev.ts up|down|status
import { join } from "node:path";
import { devDir, isRunning, readState, startEnvironment, stopAll } from "./environment.ts";
import { EnvironmentError } from "./process.ts";
import { realNodeSupport, type RealNodeSupport } from "./realnode/support.ts";

function describeNoNode(support: RealNodeSupport | undefined): string {
  // (An environment started before the real node existed has no realNodeSupport.)
  if (!support) return "no real node";
  return support.ok ? "real node not started" : `no real node: ${support.reason}`;
}

function describe(): string {
  const state = readState(devDir);
  if (!state) return "not running";
  const node = state.realNode;
  return [
    node
      ? `Mode             REAL NODE: pods run as containers on ${node.name} (containerd + kubelet), next to the KWOK nodes`
      : `Mode             STAND-INS: KWOK nodes only, no containers (${describeNoNode(state.realNodeSupport)})`,
    ...(node
      ? [
          `Real node        pods on ${node.podSubnet} (reached from this machine at their IP), images ${Object.values(node.images).join(", ")}`,
          `                 default StorageClass ${node.storageClass}; cluster DNS ${node.clusterDns ? `CoreDNS on ${node.bridgeAddress}` : "none (CoreDNS not built)"}; logs ${node.dir}/logs`,
        ]
      : []),
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
      // The real node where the machine can run it (root, cgroups, packages, built parts);
      // STATEWARD_REAL_NODE=0 keeps the stand-ins (KWOK nodes only).
      const support = realNodeSupport();
      console.log(
        support.ok
          ? "Starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK, MariaDB, S3 and a REAL NODE (containerd + kubelet) ..."
          : `Starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK, MariaDB and S3 (stand-ins: no real node, ${support.reason}) ...`,
      );
      // STATEWARD_OWN_MARIADB=1: a mariadbd of its own, leaving the machine's server on 3306 alone.
      await startEnvironment({
        dir: devDir,
        detached: true,
        ownMariaDB: process.env.STATEWARD_OWN_MARIADB === "1",
        realNode: support.ok ? "start" : "off",
        log: (line) => console.log(`  ${line}`),
      });
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
