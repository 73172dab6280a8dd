// The `stateward` command (started by main.ts).
//
//   stateward run [flags]     the manager: runs the selected operators against the current kube context
//   stateward crds            prints the CRD YAML of the selected operators
//   stateward release-finalizers  removes Stateward finalizers when the manager is gone (lists first)
//   stateward help
import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
// config.js, not the package index, which loads the whole generated API client (slim-client-node.ts).
import { KubeConfig } from "@kubernetes/client-node/dist/config.js";
import { Manager, createLogger, crdToYaml, uniqueKinds, type LogLevel } from "@stateward/core";
import { UsageError, selectOperators } from "./operators.ts";

const usage = `Usage:
  stateward run [flags]        run the manager with the selected operators
  stateward crds [--operators] print the CustomResourceDefinitions as YAML
  stateward release-finalizers (--namespace NS | --all-namespaces) [--yes]
                               with the manager gone: list Stateward finalizers and what they
                               would clean up; --yes removes them, leaving that cleanup undone
  stateward help

Flags of run:
  --kubeconfig PATH            kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)
  --namespaces a,b             watch only these namespaces (default: all)
  --operators x,y              operators to run (default: all available)
  --target NAME                only resources labelled stateward.io/target=NAME
  --leader-elect               Lease-based leader election (run 2+ replicas safely)
  --leader-election-namespace  namespace of the Lease (default: the pod's, or "default")
  --metrics-addr ADDR          /metrics bind address (default ":8080"; "0" disables)
  --health-addr ADDR           /healthz and /readyz bind address (default ":8081"; "0" disables)
  --log-level LEVEL            debug | info | warn | error (default "info")
  --crds install|verify        install the CRDs, or only check they exist (default "install")
  --secrets watch|get          watch: list and watch Secrets (as metadata), act on a change at
                               once; get: only read a Secret by name when it is needed (RBAC
                               needs no list/watch on Secrets), a change is noticed at the next
                               periodic check (default "watch")
`;

const SA_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

function list(value: string | undefined): string[] {
  return (value ?? "").split(",").map((s) => s.trim()).filter(Boolean);
}

function leaderElectionNamespace(flag: string | undefined, namespaces: string[]): string {
  if (flag) return flag;
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  if (existsSync(SA_NAMESPACE_FILE)) return readFileSync(SA_NAMESPACE_FILE, "utf8").trim();
  return namespaces[0] ?? "default";
}

async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      kubeconfig: { type: "string" },
      namespaces: { type: "string" },
      operators: { type: "string" },
      target: { type: "string" },
      "leader-elect": { type: "boolean", default: false },
      "leader-election-namespace": { type: "string" },
      "metrics-addr": { type: "string", default: ":8080" },
      "health-addr": { type: "string", default: ":8081" },
      "log-level": { type: "string", default: "info" },
      crds: { type: "string", default: "install" },
      secrets: { type: "string", default: "watch" },
    },
    strict: true,
  });
  const level = values["log-level"];
  if (!["debug", "info", "warn", "error"].includes(level)) throw new UsageError(`--log-level must be debug, info, warn or error, not "${level}"`);
  if (values.crds !== "install" && values.crds !== "verify") throw new UsageError(`--crds must be install or verify, not "${values.crds}"`);
  if (values.secrets !== "watch" && values.secrets !== "get") throw new UsageError(`--secrets must be watch or get, not "${values.secrets}"`);
  const namespaces = list(values.namespaces);
  const operators = await selectOperators(list(values.operators));
  const logger = createLogger({ level: level as LogLevel });

  const kubeConfig = new KubeConfig();
  if (values.kubeconfig) kubeConfig.loadFromFile(values.kubeconfig);
  else kubeConfig.loadFromDefault();

  const manager = new Manager({
    kubeConfig,
    namespaces,
    target: values.target,
    logger,
    metricsAddr: values["metrics-addr"],
    healthAddr: values["health-addr"],
    crds: values.crds,
    secrets: values.secrets,
    leaderElection: values["leader-elect"]
      ? { namespace: leaderElectionNamespace(values["leader-election-namespace"], namespaces) }
      : undefined,
  }).load(...operators);
  // An error nothing handled stops the manager (operations record why) and exits non-zero.
  manager.installCrashPolicy();

  let signals = 0;
  const onSignal = (signal: string) => {
    signals++;
    if (signals > 1) {
      logger.warn("second signal; exiting without waiting", { signal });
      process.exit(1);
    }
    logger.info("shutting down", { signal });
    void manager.stop();
  };
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("SIGINT", () => onSignal("SIGINT"));

  await manager.start();
  logger.info("manager running", {
    operators: manager.loadedOperators,
    health: manager.healthAddress ?? null,
    metrics: manager.metricsAddress ?? null,
  });
  try {
    await manager.done;
    return 0;
  } catch (err) {
    logger.error("manager stopped", { err });
    return 1;
  }
}

async function crds(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { operators: { type: "string" } }, strict: true });
  const kinds = uniqueKinds((await selectOperators(list(values.operators))).flatMap((m) => m.kinds));
  process.stdout.write(kinds.map((k) => crdToYaml(k)).join("---\n"));
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "run":
      return run(rest);
    case "crds":
      return crds(rest);
    case "release-finalizers": {
      // Imported here: it names every operator's finalizers, so it loads every operator (mysql-backup: the AWS SDK).
      const { releaseFinalizers, releaseUsage } = await import("./release-finalizers.ts");
      if (rest.includes("--help") || rest.includes("-h")) {
        process.stdout.write(releaseUsage);
        return 0;
      }
      return releaseFinalizers(rest);
    }
    case "help":
    case "--help":
    case "-h":
    case undefined:
      process.stdout.write(usage);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError || (err instanceof TypeError && "code" in err && String(err.code).startsWith("ERR_PARSE_ARGS"))) {
      process.stderr.write(`stateward: ${err.message}\n\n${usage}`);
      process.exit(2);
    }
    process.stderr.write(`stateward: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
