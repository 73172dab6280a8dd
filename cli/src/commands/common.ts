// What the `stateward` subcommands share: how they reach the cluster (the
// kubeconfig and namespace flags kubectl users know), how they print results
// (text for people; --output json|yaml for scripts is render.ts), the exit codes, and the
// loop that follows a long operation until it ends.
// config.js, not the package index, which loads the whole generated API client (slim-client-node.ts).
import { KubeConfig } from "@kubernetes/client-node/dist/config.js";
import { ApiConnectionError, ApiError, KubeClient, findCondition, messageOf, resourceOf, type Condition, type CustomKind, type KubeObject } from "@stateward/core";
import { UsageError, allKinds } from "../operators.ts";
// A module import, not a file read at run time: the image's single-file build (hack/build.ts) has no package.json beside it.
import cliPackage from "../../package.json" with { type: "json" };

/**
 * Exit codes, the same for every subcommand, so a script can tell what
 * happened without parsing messages.
 */
export const EXIT = {
  ok: 0,
  /** The operation ended Failed, was refused, or something it needs does not exist. */
  failed: 1,
  usage: 2,
  /** --timeout passed while following; the work goes on in the cluster. */
  timeout: 3,
  /** The Kubernetes API could not be reached or refused a request. */
  api: 4,
  /** Interrupted (Ctrl-C) while following; the work goes on in the cluster. */
  interrupted: 130,
} as const;

export const exitCodesHelp = `Exit status: 0 done; 1 the operation failed or was refused (or what it needs does not
exist); 2 usage error; 3 --timeout passed while following (the work goes on in the cluster);
4 the Kubernetes API could not be reached or refused a request; 130 interrupted while
following (the work goes on in the cluster).
`;

/** An error that ends the command with a given exit code; its message is printed as is. */
export class CommandError extends Error {
  override name = "CommandError";
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/** The exit code of an error that ended a command. */
export function exitCodeOf(err: unknown): number {
  if (err instanceof UsageError) return EXIT.usage;
  if (err instanceof TypeError && "code" in err && String(err.code).startsWith("ERR_PARSE_ARGS")) return EXIT.usage;
  if (err instanceof CommandError) return err.code;
  if (err instanceof ApiError || err instanceof ApiConnectionError) return EXIT.api;
  // The request's own timeout (KubeClient's requestTimeoutMs): the API did not answer.
  if (err instanceof DOMException && err.name === "TimeoutError") return EXIT.api;
  return EXIT.failed;
}

/** The message printed for an error that ended a command. */
export function commandErrorMessage(err: unknown): string {
  if (err instanceof DOMException && err.name === "TimeoutError") return `the Kubernetes API did not answer in time (${err.message})`;
  return messageOf(err);
}

/** parseArgs options every command that talks to the cluster takes. */
export const connectionOptions = {
  kubeconfig: { type: "string" },
  namespace: { type: "string", short: "n" },
  context: { type: "string" },
} as const;

export const outputOption = { output: { type: "string", short: "o" } } as const;

export const connectionHelp = `  -n, --namespace NS   the namespace (default: the kube context's, else "default")
  --kubeconfig PATH    kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)
  --context NAME       the kubeconfig context to use (default: the current one)
`;

export interface Connection {
  client: KubeClient;
  /** The namespace of -n, else the context's, else "default". */
  namespace: string;
}

/** A client for the cluster the flags (or the environment, as kubectl reads it) name. */
export function connect(values: { kubeconfig?: string; namespace?: string; context?: string }): Connection {
  const kubeConfig = new KubeConfig();
  try {
    if (values.kubeconfig) kubeConfig.loadFromFile(values.kubeconfig);
    else kubeConfig.loadFromDefault();
  } catch (err) {
    throw new CommandError(EXIT.api, `cannot load the kubeconfig: ${commandErrorMessage(err)}`);
  }
  if (values.context) {
    if (!kubeConfig.getContextObject(values.context)) throw new UsageError(`no context "${values.context}" in the kubeconfig`);
    kubeConfig.setCurrentContext(values.context);
  }
  const namespace = values.namespace ?? kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace ?? "default";
  try {
    return { client: new KubeClient({ kubeConfig, fieldManager: "stateward-cli" }), namespace };
  } catch (err) {
    throw new CommandError(EXIT.api, `cannot use the kubeconfig: ${commandErrorMessage(err)}`);
  }
}

export type OutputFormat = "text" | "json" | "yaml";

export function outputFormat(value: string | undefined): OutputFormat {
  if (value === undefined || value === "text") return "text";
  if (value === "json" || value === "yaml") return value;
  throw new UsageError(`--output must be json or yaml, not "${value}"`);
}

/** The version of this command (its package's). */
export function cliVersion(): string {
  return cliPackage.version;
}

/** Every Stateward kind this build knows, by kind name. */
export async function statewardKind(kind: string): Promise<CustomKind> {
  const found = (await allKinds()).find((k) => k.kind === kind);
  if (!found) throw new Error(`this build of stateward has no kind ${kind}`);
  return found;
}

/** GET of a Stateward object; a 404 becomes a CommandError that says which object is missing. */
export async function getExisting<T extends KubeObject>(client: KubeClient, kind: string, namespace: string, name: string): Promise<T> {
  try {
    return await client.get<T>(resourceOf(await statewardKind(kind)), namespace, name);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) throw new CommandError(EXIT.failed, `${kind} ${namespace}/${name} not found`);
    throw err;
  }
}

/** Every object of a Stateward kind, page by page; `namespace` undefined lists every namespace. */
export async function listAll<T extends KubeObject>(client: KubeClient, kind: CustomKind, namespace: string | undefined): Promise<T[]> {
  const out: T[] = [];
  let cont: string | undefined;
  do {
    const page = await client.list<T>(resourceOf(kind), { namespace, limit: 500, continue: cont });
    out.push(...page.items);
    cont = page.metadata?.continue || undefined;
  } while (cont);
  return out;
}

/** "30s", "5m", "2h", "1h30m", or plain seconds; 0 means no limit. Returns milliseconds. */
export function parseDuration(value: string, flag: string): number {
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const re = /(\d+)(ms|s|m|h)/gy;
  let ms = 0;
  let matched = 0;
  for (const m of text.matchAll(re)) {
    const n = Number(m[1]);
    ms += m[2] === "ms" ? n : m[2] === "s" ? n * 1000 : m[2] === "m" ? n * 60_000 : n * 3_600_000;
    matched += m[0].length;
  }
  if (text === "" || matched !== text.length) throw new UsageError(`${flag} must be a duration such as 90s, 10m or 1h30m, not "${value}"`);
  return ms;
}

/** 75 s → "1m15s", as a person reads elapsed time. */
export function formatSeconds(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}

/** 1536 → "1.5 KiB". */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** UTC yyyymmddhhmmss, as the schedules name their backups. */
export function timestamp(at: Date): string {
  return at.toISOString().replace(/[-:T]/g, "").slice(0, 14);
}

/** `<base>-<suffix>`, the base shortened so that the name stays within the 253 characters a name may have. */
export function generatedName(base: string, suffix: string): string {
  const tail = `-${suffix}`;
  return `${base.slice(0, 253 - tail.length).replace(/[-.]+$/, "")}${tail}`;
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** A name for a new object, checked as the API server would (so the error comes before anything is created). */
export function checkName(name: string, flag: string): string {
  if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) throw new UsageError(`${flag} "${name}" is not a valid name (lower-case letters, digits, '-' and '.', at most 253)`);
  return name;
}

type WithConditions = KubeObject & { status?: { conditions?: Condition[] } };

/** The Ready condition of an object, if it has one. */
export function readyCondition(obj: WithConditions): Condition | undefined {
  return findCondition(obj.status?.conditions, "Ready");
}

/** What following reports about the object at each poll. */
export interface FollowState<T> {
  /** Done: the final object and whether it succeeded (a failure exits 1). */
  done?: { ok: boolean; message: string };
  /** One line about where it stands; a new line is printed whenever it changes. */
  line: string;
  object: T;
}

export interface FollowOptions<T> {
  /** What is followed, e.g. "MySQLBackup shop/db-20260101". */
  what: string;
  poll: () => Promise<FollowState<T>>;
  /** 0: no limit. */
  timeoutMs: number;
  /** Where progress goes (stderr, so that stdout stays the result). */
  progress: (line: string) => void;
  intervalMs?: number;
  /** How often an unchanged state is repeated, so a long wait is seen to be alive. */
  heartbeatMs?: number;
  /** What the user can run to look again after a time-out or Ctrl-C. */
  hint: string;
}

/**
 * Polls until the object is done, printing a line whenever where it stands
 * changes (and at least every `heartbeatMs`). A time-out or Ctrl-C stops the
 * following only: the operation goes on in the cluster, and the message says
 * how to look at it.
 */
export async function follow<T>(opts: FollowOptions<T>): Promise<FollowState<T>> {
  const started = performance.now();
  const interval = opts.intervalMs ?? 1000;
  const heartbeat = opts.heartbeatMs ?? 30_000;
  const interrupted = new AbortController();
  const onSignal = () => interrupted.abort();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  let last = "";
  let lastPrinted = 0;
  try {
    for (;;) {
      const state = await opts.poll();
      const now = performance.now();
      const elapsed = formatSeconds((now - started) / 1000);
      if (state.line !== last || now - lastPrinted >= heartbeat) {
        opts.progress(`[${elapsed}] ${opts.what}: ${state.line}\n`);
        last = state.line;
        lastPrinted = now;
      }
      if (state.done) return state;
      if (opts.timeoutMs > 0 && now - started >= opts.timeoutMs) {
        throw new CommandError(EXIT.timeout, `stopped following ${opts.what} after ${formatSeconds(opts.timeoutMs / 1000)} (--timeout); it goes on in the cluster: ${opts.hint}`);
      }
      const wait = opts.timeoutMs > 0 ? Math.min(interval, Math.max(0, opts.timeoutMs - (now - started))) : interval;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, wait);
        interrupted.signal.addEventListener("abort", () => {
          clearTimeout(t);
          resolve();
        }, { once: true });
      });
      if (interrupted.signal.aborted) throw new CommandError(EXIT.interrupted, `stopped following ${opts.what}; it goes on in the cluster: ${opts.hint}`);
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** The options `backup`, `restore` and `switchover` share for following. */
export const followOptions = {
  "no-wait": { type: "boolean", default: false },
  timeout: { type: "string" },
} as const;

/** "Running: <Ready message>", or the phase alone. */
export function phaseLine(phase: string | undefined, obj: WithConditions): string {
  const ready = readyCondition(obj);
  const head = phase ?? "waiting for the manager to pick it up (no status yet)";
  if (!ready || ready.status === "True") return head;
  return `${head} (${ready.reason}): ${ready.message}`;
}

export function kubectlHint(resource: string, namespace: string, name: string): string {
  return `kubectl get ${resource} -n ${namespace} ${name}`;
}

/** The one positional argument a command takes. */
export function onePositional(positionals: string[], what: string): string {
  if (positionals.length === 0) throw new UsageError(`missing ${what}`);
  if (positionals.length > 1) throw new UsageError(`unexpected arguments after ${what}: ${positionals.slice(1).join(" ")}`);
  return positionals[0] ?? "";
}
