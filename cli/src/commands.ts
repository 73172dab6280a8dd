// The `stateward` command (started by main.ts: the npm bin of @stateward/cli, and the image's entrypoint).
//
//   stateward run [flags]     the manager: runs the selected operators against the current kube context
//   stateward crds            prints the CRD YAML of the selected operators
//   stateward status | backup | restore | switchover | version   for operators of these systems (src/commands/)
//   stateward release-finalizers  removes Stateward finalizers when the manager is gone (lists first)
//   stateward help [COMMAND]
import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
// config.js, not the package index, which loads the whole generated API client (slim-client-node.ts).
import { KubeConfig } from "@kubernetes/client-node/dist/config.js";
import { Manager, createLogger, uniqueKinds, type LogLevel } from "@stateward/core";
import { EXIT, commandErrorMessage, exitCodeOf } from "./commands/common.ts";
import { UsageError, engineFlagsFor, selectOperatorNames, selectOperators } from "./operators.ts";

const usage = `Usage: stateward COMMAND [flags]      (stateward help COMMAND, or COMMAND --help, for its flags)

Operating Stateward resources (kubeconfig from --kubeconfig or $KUBECONFIG; -n NS or the
context's namespace; -o json|yaml for scripts; progress on stderr, results on stdout):
  status [-A]                  every Stateward resource: Ready or not, and what it waits for
  backup INSTANCE [--databases a,b] [--bucket … | --from-schedule NAME]
                               create a MySQLBackup now and follow it to Completed or Failed
                               (storage: the flags, else the instance's schedule's, else its
                               newest backup's)
  restore BACKUP --to INSTANCE [--databases a,b] [--mode Staged|InPlace]
                               create a MySQLRestore and follow it
  switchover CLUSTER [--to POD|ORDINAL]
                               planned switchover of a MySQLCluster's primary (default: the
                               Ready replica with the least lag), followed until all are Ready
  release-finalizers (--namespace NS | --all-namespaces) [--yes]
                               with the manager gone: list Stateward finalizers and what they
                               would clean up; --yes removes them, leaving that cleanup undone
  version [--client]           this command's version; the cluster's CRDs and managers

Running Stateward:
  run [flags]                  run the manager with the selected operators
  crds [--operators]           print the CustomResourceDefinitions as YAML
  help [COMMAND]

Exit status: 0 done; 1 the operation failed or was refused; 2 usage error; 3 --timeout
passed while following (the work goes on); 4 the Kubernetes API could not be reached or
refused a request; 130 interrupted while following (the work goes on).

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
  const selected = selectOperatorNames(list(values.operators));
  // Before any operator's code is loaded: set later, V8 would have optimized some of it already.
  const engineFlags = engineFlagsFor(selected);
  for (const flag of engineFlags) setFlagsFromString(flag);
  const operators = await selectOperators(selected);
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
    engineFlags,
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
  // Loaded here, not at the top: `run` never writes YAML.
  const { crdToYaml } = await import("@stateward/core/crd-yaml");
  process.stdout.write(kinds.map((k) => crdToYaml(k)).join("---\n"));
  return 0;
}

/** A subcommand: its usage (shown by `COMMAND --help`, `help COMMAND` and after a usage error) and what it does. */
interface Command {
  usage: string;
  run: (argv: string[]) => Promise<number>;
}

/**
 * The subcommands, each imported only when it is used: they name the operators'
 * kinds (backup: mysql-backup, which loads the AWS SDK; switchover: mysql-cluster),
 * and the manager (`run --operators database-user`) must load none of that
 * (docs/performance.md, finding 2; startup.test.ts holds it).
 */
const commands: Record<string, () => Promise<Command>> = {
  status: async () => import("./commands/status.ts").then((m) => ({ usage: m.statusUsage, run: m.status })),
  backup: async () => import("./commands/backup.ts").then((m) => ({ usage: m.backupUsage, run: m.backup })),
  restore: async () => import("./commands/restore.ts").then((m) => ({ usage: m.restoreUsage, run: m.restore })),
  switchover: async () => import("./commands/switchover.ts").then((m) => ({ usage: m.switchoverUsage, run: m.switchover })),
  "release-finalizers": async () => import("./release-finalizers.ts").then((m) => ({ usage: m.releaseUsage, run: m.releaseFinalizers })),
  version: async () => import("./commands/version.ts").then((m) => ({ usage: m.versionUsage, run: m.version })),
};

/** The subcommand named `name`, or undefined for `run`, `crds`, `help` and unknown names. */
async function subcommand(name: string | undefined): Promise<Command | undefined> {
  return name !== undefined && Object.hasOwn(commands, name) ? commands[name]!() : undefined;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "run":
      return run(rest);
    case "crds":
      return crds(rest);
    case "help":
    case "--help":
    case "-h":
    case undefined: {
      const topic = command === "help" ? rest[0] : undefined;
      const sub = await subcommand(topic);
      if (topic !== undefined && !sub && topic !== "run" && topic !== "crds") throw new UsageError(`unknown command "${topic}"`);
      process.stdout.write(sub?.usage ?? usage);
      return command === undefined ? EXIT.usage : EXIT.ok;
    }
    case "--version":
      return (await import("./commands/version.ts")).version(["--client", ...rest]);
    default: {
      const sub = await subcommand(command);
      if (!sub) throw new UsageError(`unknown command "${command}"`);
      if (rest.includes("--help") || rest.includes("-h")) {
        process.stdout.write(sub.usage);
        return EXIT.ok;
      }
      return sub.run(rest);
    }
  }
}

/**
 * Exits once everything written to stdout and stderr has been handed to the OS. Into a pipe
 * (`stateward crds | kubectl apply -f -`) Node writes without blocking: what the reader has not
 * yet taken (all but the pipe's 64 KiB) waits in the process, and process.exit alone drops it.
 * An empty write's callback runs after the writes before it.
 */
async function exitWhenWritten(code: number): Promise<never> {
  await Promise.all([process.stdout, process.stderr].map((out) => new Promise<void>((resolve) => out.write("", () => resolve()))));
  process.exit(code);
}

main(process.argv.slice(2)).then(
  (code) => exitWhenWritten(code),
  async (err: unknown) => {
    // The manager (run) keeps exiting 1 on any failure, as its Deployment and scripts expect.
    const command = process.argv[2];
    const code = (command === "run" || command === "crds") && exitCodeOf(err) !== EXIT.usage ? EXIT.failed : exitCodeOf(err);
    if (code === EXIT.usage) {
      const sub = await subcommand(command);
      process.stderr.write(`stateward: ${commandErrorMessage(err)}\n\n${sub ? sub.usage : usage}`);
    } else {
      process.stderr.write(`stateward: ${commandErrorMessage(err)}\n`);
    }
    return exitWhenWritten(code);
  },
);
