// The manager `make demo` runs in the background: every operator, as
// `stateward run` loads them.
//
// With --real-node (the environment runs the real node) the MySQLCluster pods
// are real containers; the operators, on this machine, reach a pod's (or
// Service's) DNS name at the pod's IP over the node's bridge (PodAddresses:
// there is no kube-proxy), and they watch every namespace, so a user's own
// MySQLCluster anywhere works the same.
//
// Without it, KWOK makes pods Running without containers, so LocalPodServers
// stands in for the kubelet and the storage provisioner: each cluster pod gets
// a local mariadbd, and the operators reach a pod's DNS name through it. It
// keeps <dir>/servers.json up to date — the local address of each pod's
// server and any that failed to start — for the demo script and for a user
// who wants a shell on a pod:  mariadb -h 127.0.0.1 -P <port> -u root -p
//
// Usage: node e2e/demo/manager.ts --kubeconfig FILE --namespace NS --dir DIR [--real-node]
// SIGTERM or SIGINT stops the manager, then the servers.
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { operatorNames, selectOperators } from "@stateward/cli";
import { KubeClient, Manager, createLogger } from "@stateward/core";
import { createMySQLClusterOperator } from "@stateward/operator-mysql-cluster";
import { LocalPodServers } from "../support/mysql-pods.ts";
import { PodAddresses } from "../support/pod-addresses.ts";

const { values } = parseArgs({
  options: { kubeconfig: { type: "string" }, namespace: { type: "string" }, dir: { type: "string" }, "real-node": { type: "boolean" } },
  strict: true,
});
if (!values.kubeconfig || !values.namespace || !values.dir) throw new Error("usage: manager.ts --kubeconfig FILE --namespace NS --dir DIR");
// mariadbd resolves relative paths against its own working directory: everything absolute.
const dir = resolve(values.dir);
mkdirSync(dir, { recursive: true });

const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(values.kubeconfig);
const logger = createLogger({ level: "info" });
const realNode = values["real-node"] === true;
const client = new KubeClient({ kubeConfig, fieldManager: "stateward-demo-pods" });
const servers = realNode ? undefined : new LocalPodServers(client, dir, values.namespace).start();
const manager = new Manager({
  kubeConfig,
  namespaces: realNode ? undefined : [values.namespace],
  logger,
  healthAddr: "127.0.0.1:0",
  metricsAddr: "127.0.0.1:0",
}).load(
  // First, so its address resolver serves every MySQL operator of the process.
  createMySQLClusterOperator({ addresses: servers ?? new PodAddresses(client) }),
  ...(await selectOperators(operatorNames.filter((n) => n !== "mysql-cluster"))),
);

let last = "";
const report = setInterval(() => {
  if (!servers) return;
  void servers.started().then((started) => {
    const text = JSON.stringify({ servers: started, failures: Object.fromEntries(servers.failures) }, null, 2);
    if (text === last) return;
    last = text;
    writeFileSync(join(dir, "servers.json"), `${text}\n`);
  });
}, 1_000);

let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  logger.info("shutting down", { signal });
  clearInterval(report);
  void manager
    .stop()
    .then(() => servers?.stop())
    .then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error("shutdown failed", { err });
        process.exit(1);
      },
    );
};
process.on("SIGTERM", () => stop("SIGTERM"));
process.on("SIGINT", () => stop("SIGINT"));

await manager.start();
logger.info("demo manager running", {
  operators: manager.loadedOperators,
  ...(realNode ? { namespaces: "all", pods: "real containers on the real node" } : { namespace: values.namespace, servers: join(dir, "servers.json") }),
});
