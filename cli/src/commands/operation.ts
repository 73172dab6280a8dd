// Following a one-shot operation (a MySQLBackup or a MySQLRestore) the CLI
// created: its phase and Ready message as they change, until Completed or
// Failed, then the result — in words, or the final object as JSON/YAML.
import { resourceOf, type Condition, type KubeClient, type KubeObject } from "@stateward/core";
import { CommandError, EXIT, follow, formatBytes, formatSeconds, kubectlHint, phaseLine, statewardKind, type OutputFormat } from "./common.ts";
import { render } from "./render.ts";

export type Operation = KubeObject & {
  status?: {
    phase?: "Pending" | "Running" | "Completed" | "Failed";
    conditions?: Condition[];
    durationSeconds?: number;
    objects?: number;
    compressedBytes?: number;
    uncompressedBytes?: number;
    bytes?: number;
    location?: string;
    source?: string;
  };
};

/** The sizes an operation's status reports so far (a backup's are written when it completes). */
export function sizesOf(op: Operation): string {
  const s = op.status ?? {};
  const parts: string[] = [];
  if (s.objects !== undefined) parts.push(`${s.objects} objects`);
  if (s.compressedBytes !== undefined) parts.push(`${formatBytes(s.compressedBytes)} stored`);
  if (s.uncompressedBytes !== undefined) parts.push(`${formatBytes(s.uncompressedBytes)} of SQL`);
  if (s.bytes !== undefined) parts.push(`${formatBytes(s.bytes)} of SQL applied`);
  return parts.join(", ");
}

/** One line of progress: the phase, the Ready message while not done, and the sizes once known. */
export function operationLine(op: Operation): string {
  const sizes = sizesOf(op);
  return `${phaseLine(op.status?.phase, op)}${sizes ? ` [${sizes}]` : ""}`;
}

/** How a finished operation is told to a person. */
export function operationSummary(kind: string, op: Operation): string {
  const id = `${kind} ${op.metadata.namespace ?? ""}/${op.metadata.name ?? ""}`;
  const s = op.status ?? {};
  const took = s.durationSeconds !== undefined ? ` in ${formatSeconds(s.durationSeconds)}` : "";
  const sizes = sizesOf(op);
  const where = s.location ?? s.source;
  return `${id} ${s.phase ?? "?"}${took}${sizes ? `: ${sizes}` : ""}${where ? `, ${kind === "MySQLRestore" ? "from" : "at"} ${where}` : ""}\n`;
}

export interface FollowOperationOptions {
  client: KubeClient;
  kind: "MySQLBackup" | "MySQLRestore";
  created: Operation;
  wait: boolean;
  timeoutMs: number;
  format: OutputFormat;
  out: (s: string) => void;
  progress: (s: string) => void;
  intervalMs?: number;
}

/** Prints what was created, follows it unless --no-wait, and returns the exit code (throws on a failure, time-out or Ctrl-C). */
export async function followOperation(o: FollowOperationOptions): Promise<number> {
  const ns = o.created.metadata.namespace ?? "";
  const name = o.created.metadata.name ?? "";
  const rt = resourceOf(await statewardKind(o.kind));
  const id = `${o.kind} ${ns}/${name}`;
  if (!o.wait) {
    o.out(o.format === "text" ? `${id} created\n` : render(o.format, o.created));
    return EXIT.ok;
  }
  o.progress(`${id} created; following it (Ctrl-C stops following, not the ${o.kind === "MySQLBackup" ? "backup" : "restore"})\n`);
  const end = await follow({
    what: id,
    timeoutMs: o.timeoutMs,
    progress: o.progress,
    intervalMs: o.intervalMs,
    hint: kubectlHint(rt.plural, ns, name),
    poll: async () => {
      const op = await o.client.get<Operation>(rt, ns, name);
      const phase = op.status?.phase;
      const done = phase === "Completed" ? { ok: true, message: "" } : phase === "Failed" ? { ok: false, message: failureOf(op) } : undefined;
      return { object: op, line: operationLine(op), done };
    },
  });
  o.out(o.format === "text" ? (end.done?.ok ? operationSummary(o.kind, end.object) : "") : render(o.format, end.object));
  if (!end.done?.ok) throw new CommandError(EXIT.failed, `${id} failed: ${end.done?.message ?? ""}`);
  return EXIT.ok;
}

function failureOf(op: Operation): string {
  const ready = op.status?.conditions?.find((c) => c.type === "Ready");
  return ready ? `${ready.reason}: ${ready.message}` : "no reason recorded";
}
