// `stateward status`: one table of every Stateward resource, whether it is
// Ready, and — when it is not — what it waits for (the Ready condition's
// reason and message, or that no manager has written a status for it yet).
import { parseArgs } from "node:util";
import { isNotFound, type Condition, type KubeObject } from "@stateward/core";
import { allKinds } from "../operators.ts";
import { CommandError, EXIT, connect, listAll, connectionHelp, connectionOptions, formatBytes, commandErrorMessage, outputFormat, outputOption, readyCondition } from "./common.ts";
import { render } from "./render.ts";

export const statusUsage = `Usage:
  stateward status [-n NS | -A] [-o json|yaml] [--kubeconfig PATH]

One table of every Stateward resource (MySQLClusters, MySQLInstances, DatabaseUsers,
MySQLBackupSchedules, MySQLBackups, MySQLRestores): READY (the Ready condition), PHASE,
a summary, and for what is not Ready the REASON and MESSAGE — what it waits for, or why
it failed. A resource with no status, or with a status older than its spec, waits for a
manager to act on it.

  -A, --all-namespaces every namespace
  -o, --output FORMAT  json or yaml: {"items": [{kind, namespace, name, ready, phase, summary, reason, message}]}
${connectionHelp}
Exit status: 0 listed (whatever the resources' state); 2 usage error; 4 the Kubernetes API
could not be reached or refused a list (what could be listed is printed).
`;

/** The order kinds are shown in within a namespace: what the others depend on first. */
const KIND_ORDER = ["MySQLCluster", "MySQLInstance", "DatabaseUser", "MySQLBackupSchedule", "MySQLBackup", "MySQLRestore"];

export interface StatusRow {
  kind: string;
  namespace: string;
  name: string;
  /** The Ready condition's status; Unknown when there is none. */
  ready: "True" | "False" | "Unknown";
  phase: string;
  summary: string;
  /** Why it is not Ready (empty when it is). */
  reason: string;
  /** What it waits for, or why it failed (empty when Ready). */
  message: string;
}

type Described = KubeObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> & { conditions?: Condition[] } };

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);
const refName = (v: unknown): string | undefined => str((v as { name?: unknown } | undefined)?.name);

/** A few words on each kind that say the most at a glance. */
export function summaryOf(kind: string, obj: Described): string {
  const spec = obj.spec ?? {};
  const status = obj.status ?? {};
  const parts: (string | undefined)[] = [];
  switch (kind) {
    case "MySQLCluster":
      parts.push(str(status.ready) && `ready ${str(status.ready)}`, str(status.currentPrimary) && `primary ${str(status.currentPrimary)}`, str(spec.image));
      break;
    case "MySQLInstance": {
      const version = [str(status.flavor), str(status.serverVersion)].filter(Boolean).join(" ");
      parts.push(`${str(spec.host) ?? "?"}:${num(spec.port) ?? 3306}`, version || undefined);
      break;
    }
    case "DatabaseUser":
      parts.push(`user ${str(spec.user) ?? obj.metadata.name ?? ""}`, refName(spec.instanceRef) && `on ${refName(spec.instanceRef)}`);
      break;
    case "MySQLBackup": {
      const size = num(status.compressedBytes);
      parts.push(refName(spec.instanceRef) && `of ${refName(spec.instanceRef)}`, size !== undefined ? formatBytes(size) : undefined, str(status.location));
      break;
    }
    case "MySQLRestore": {
      const source = spec.source as { backupRef?: unknown; s3?: { bucket?: unknown; path?: unknown } } | undefined;
      const from = refName(source?.backupRef) ?? (source?.s3 ? `s3://${str(source.s3.bucket) ?? "?"}/${str(source.s3.path) ?? ""}` : undefined);
      parts.push(from && `${from} → ${refName(spec.instanceRef) ?? "?"}`);
      break;
    }
    case "MySQLBackupSchedule":
      parts.push(
        str(spec.schedule) && `"${str(spec.schedule)}"`,
        spec.suspend === true ? "suspended" : str(status.nextScheduleTime) && `next ${str(status.nextScheduleTime)}`,
        str(status.lastSuccessfulBackup) && `last ok ${str(status.lastSuccessfulBackup)}`,
      );
      break;
  }
  return parts.filter((p): p is string => typeof p === "string" && p !== "").join(", ");
}

/** One object's row: whether it is Ready and, if not, what it waits for. */
export function statusRow(kind: string, obj: Described): StatusRow {
  const phase = str(obj.status?.phase) ?? "";
  const row = (ready: StatusRow["ready"], reason: string, message: string): StatusRow =>
    ({ kind, namespace: obj.metadata.namespace ?? "", name: obj.metadata.name ?? "", ready, phase, summary: summaryOf(kind, obj), reason, message });
  const ready = readyCondition(obj);
  if (!ready) return row("Unknown", "NoStatus", "no status yet: waiting for a Stateward manager that watches this namespace to pick it up");
  // A one-shot operation that ended does not act on later spec changes; anything else is behind when its status is for an older generation.
  const ended = phase === "Completed" || phase === "Failed";
  const generation = obj.metadata.generation;
  const observed = num(obj.status?.observedGeneration) ?? ready.observedGeneration;
  if (!ended && generation !== undefined && observed !== undefined && observed < generation) {
    return row(ready.status, "SpecNotObserved", `waiting for the manager to act on the spec's generation ${generation} (the status is for generation ${observed}); last: ${ready.reason}: ${ready.message}`);
  }
  if (ready.status === "True") return row("True", "", "");
  return row(ready.status, ready.reason, ready.message);
}

export function sortRows(rows: StatusRow[]): StatusRow[] {
  const rank = (k: string) => {
    const i = KIND_ORDER.indexOf(k);
    return i < 0 ? KIND_ORDER.length : i;
  };
  return [...rows].sort((a, b) => a.namespace.localeCompare(b.namespace) || rank(a.kind) - rank(b.kind) || a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name));
}

/** Aligned columns, as kubectl prints them; the last column is not padded. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join("   ").trimEnd();
  return [line(header), ...rows.map(line)].join("\n") + "\n";
}

export function statusTable(rows: StatusRow[], allNamespaces: boolean): string {
  const header = [...(allNamespaces ? ["NAMESPACE"] : []), "KIND", "NAME", "READY", "PHASE", "SUMMARY", "REASON", "MESSAGE"];
  const cells = rows.map((r) => [...(allNamespaces ? [r.namespace] : []), r.kind, r.name, r.ready, r.phase || "-", r.summary || "-", r.reason || "-", r.message || "-"]);
  return table(header, cells);
}

export async function status(argv: string[], out: (s: string) => void = (s) => process.stdout.write(s)): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { ...connectionOptions, ...outputOption, "all-namespaces": { type: "boolean", short: "A", default: false } },
    strict: true,
  });
  const format = outputFormat(values.output);
  const all = values["all-namespaces"];
  const { client, namespace } = connect(values);
  const kinds = await allKinds();
  const failures: string[] = [];
  const lists = await Promise.all(kinds.map(async (kind) => {
    try {
      return (await listAll<Described>(client, kind, all ? undefined : namespace)).map((obj) => statusRow(kind.kind, obj));
    } catch (err) {
      if (isNotFound(err)) return []; // That CRD is not installed: nothing of this kind exists.
      failures.push(`cannot list ${kind.plural}: ${commandErrorMessage(err)}`);
      return [];
    }
  }));
  const rows = sortRows(lists.flat());
  if (format !== "text") out(render(format, { items: rows }));
  else if (rows.length === 0 && failures.length === 0) out(`No Stateward resources in ${all ? "any namespace" : `namespace ${namespace}`}.\n`);
  else if (rows.length > 0) {
    out(statusTable(rows, all));
    const waiting = rows.filter((r) => r.ready !== "True").length;
    out(`\n${rows.length} resource(s), ${waiting === 0 ? "all Ready" : `${waiting} not Ready`}.\n`);
  }
  if (failures.length) {
    // What could be listed is printed above; a script must still see that the picture is incomplete.
    throw new CommandError(EXIT.api, failures.join("\n"));
  }
  return EXIT.ok;
}
