// `stateward switchover <cluster> [--to <pod|ordinal>]`: a planned switchover
// of a MySQLCluster's primary. It sets spec.primary — the operator does the
// switchover (old primary read-only, the candidate catches up, is promoted,
// the old primary follows it) — and follows status until the new primary is
// in status.currentPrimary and every server is Ready again.
//
// It refuses up front what the operator would refuse (a target that is not a
// Ready replica, a paused cluster) rather than leave spec.primary naming it:
// a request left there would be carried out later, when nobody expects it.
// For the same reason, a request the operator turns down is taken back.
import { parseArgs } from "node:util";
import { findCondition, isConflict, isInvalid, resourceOf, type KubeClient } from "@stateward/core";
import type { MySQLCluster } from "@stateward/operator-mysql-cluster";
import { UsageError } from "../operators.ts";
import {
  CommandError,
  EXIT,
  connect,
  connectionHelp,
  connectionOptions,
  exitCodesHelp,
  follow,
  followOptions,
  formatSeconds,
  getExisting,
  kubectlHint,
  onePositional,
  outputFormat,
  outputOption,
  parseDuration,
  statewardKind,
} from "./common.ts";
import { render } from "./render.ts";

export const switchoverUsage = `Usage:
  stateward switchover CLUSTER [--to POD|ORDINAL] [--no-wait] [--timeout 5m] [-o json|yaml]

A planned switchover of the MySQLCluster CLUSTER: sets spec.primary to the target's ordinal
and follows the cluster until the target is status.currentPrimary and every server is Ready
again (the old primary replicating from the new one). The operator makes the old primary
read-only and lets the target apply everything before promoting it: no acknowledged write
is lost; writes are refused for the moment of the switch.

  --to POD|ORDINAL     the replica to promote, e.g. orders-db-2 or 2 (default: the Ready
                       replica with the least lag, the lowest ordinal among equals)
  --no-wait            set spec.primary and exit
  --timeout DURATION   stop following after this long (default 5m)
  -o, --output FORMAT  json or yaml: {namespace, name, from, to, seconds, status}
${connectionHelp}
A target that is not a Ready replica, or a cluster with updateStrategy.paused, is refused
before anything changes (exit 1). When the operator turns the request down
(PrimaryNotEligible, HealthGateFailed, BackupFailed), spec.primary is set back to what it was.

${exitCodesHelp}`;

type Member = NonNullable<NonNullable<MySQLCluster["status"]>["members"]>[number];

/** Conditions under which the operator does not carry out spec.primary until someone acts (rollout.ts, "blocked"). */
const REFUSALS = new Set(["PrimaryNotEligible", "Paused", "HealthGateFailed", "BackupFailed"]);

export interface Target {
  ordinal: number;
  pod: string;
  /** The primary now (status.currentPrimary). */
  from: string;
}

function ordinalOf(cluster: string, pod: string): number | undefined {
  const prefix = `${cluster}-`;
  if (!pod.startsWith(prefix)) return undefined;
  const rest = pod.slice(prefix.length);
  return /^\d+$/.test(rest) ? Number(rest) : undefined;
}

/**
 * The replica to promote: `to` (a pod name or an ordinal), else the Ready
 * replica with the least lag. Throws what is wrong with the request.
 */
export function chooseTarget(cluster: MySQLCluster, to: string | undefined): Target {
  const name = cluster.metadata.name ?? "";
  const from = cluster.status?.currentPrimary;
  if (!from) throw new CommandError(EXIT.failed, `MySQLCluster ${name} has no primary yet (phase ${cluster.status?.phase ?? "none"}); nothing to switch over from`);
  if (cluster.spec.updateStrategy?.paused) throw new CommandError(EXIT.failed, `MySQLCluster ${name} has updateStrategy.paused set: the operator switches over only once it is cleared`);
  const members: Member[] = cluster.status?.members ?? [];
  if (to === undefined) {
    const candidates = members
      .filter((m) => m.role === "replica" && m.ready && ordinalOf(name, m.name) !== undefined)
      .sort((a, b) => (a.lagSeconds ?? 0) - (b.lagSeconds ?? 0) || (ordinalOf(name, a.name) ?? 0) - (ordinalOf(name, b.name) ?? 0));
    const best = candidates[0];
    if (!best) throw new CommandError(EXIT.failed, `MySQLCluster ${name} has no Ready replica to switch over to${members.length ? ` (${members.map((m) => `${m.name}: ${m.role}${m.ready ? "" : `, not Ready${m.message ? ` (${m.message})` : ""}`}`).join("; ")})` : ""}`);
    return { ordinal: ordinalOf(name, best.name) ?? 0, pod: best.name, from };
  }
  const ordinal = /^\d+$/.test(to) ? Number(to) : ordinalOf(name, to);
  if (ordinal === undefined) throw new UsageError(`--to must be a pod of ${name} (${name}-N) or its ordinal N, not "${to}"`);
  const replicas = cluster.spec.replicas ?? 0;
  if (ordinal >= replicas) throw new UsageError(`--to ${to}: MySQLCluster ${name} has ${replicas} server(s), ordinals 0 to ${replicas - 1}`);
  const pod = `${name}-${ordinal}`;
  if (pod === from) return { ordinal, pod, from };
  const member = members.find((m) => m.name === pod);
  if (!member || member.role !== "replica" || !member.ready) {
    const why = !member ? "has no status yet" : member.role !== "replica" ? `is ${member.role}` : `is not Ready${member.message ? `: ${member.message}` : ""}`;
    throw new CommandError(EXIT.failed, `${pod} cannot become the primary: it ${why}. Only a Ready replica (replicating and caught up) can`);
  }
  return { ordinal, pod, from };
}

/** Where the cluster stands, in one line. */
export function clusterLine(c: MySQLCluster): string {
  const s = c.status ?? {};
  const upgrading = findCondition(s.conditions, "Upgrading");
  const ready = findCondition(s.conditions, "Ready");
  const parts = [`primary ${s.currentPrimary ?? "none"}`, `phase ${s.phase ?? "?"}`, `ready ${s.ready ?? "?"}`];
  if (upgrading && upgrading.reason !== "UpToDate") parts.push(`${upgrading.reason}: ${upgrading.message}`);
  else if (ready && ready.status !== "True") parts.push(`${ready.reason}: ${ready.message}`);
  return parts.join(", ");
}

/** Done (the target is the primary and every server Ready for our generation), refused, or still going. */
export function switchoverState(c: MySQLCluster, target: Target, generation: number): { ok: boolean; message: string } | undefined {
  const s = c.status ?? {};
  if ((s.observedGeneration ?? 0) < generation) return undefined;
  const primaryMember = s.members?.find((m) => m.role === "primary");
  if (s.currentPrimary === target.pod && primaryMember?.name === target.pod && s.phase === "Running" && findCondition(s.conditions, "Ready")?.status === "True") return { ok: true, message: "" };
  const upgrading = findCondition(s.conditions, "Upgrading");
  if (s.currentPrimary !== target.pod && upgrading?.status === "False" && REFUSALS.has(upgrading.reason)) return { ok: false, message: `${upgrading.reason}: ${upgrading.message}` };
  return undefined;
}

/** Takes back our spec.primary, unless someone changed it since. */
async function withdraw(client: KubeClient, c: MySQLCluster, ordinal: number, previous: number | undefined): Promise<string> {
  const rt = resourceOf(await statewardKind("MySQLCluster"));
  const ops = [{ op: "test", path: "/spec/primary", value: ordinal }, previous === undefined ? { op: "remove", path: "/spec/primary" } : { op: "replace", path: "/spec/primary", value: previous }];
  try {
    await client.patch(rt, c.metadata.namespace, c.metadata.name ?? "", ops, "json");
    return previous === undefined ? "spec.primary was removed again" : `spec.primary was set back to ${previous}`;
  } catch (err) {
    // A failed test (someone else changed spec.primary meanwhile) is theirs to keep.
    if (isInvalid(err) || isConflict(err)) return "spec.primary was changed by someone else meanwhile and is left as it is";
    throw err;
  }
}

export async function switchover(argv: string[], out: (s: string) => void = (s) => process.stdout.write(s), progress: (s: string) => void = (s) => process.stderr.write(s)): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { ...connectionOptions, ...outputOption, ...followOptions, to: { type: "string" } },
    strict: true,
  });
  const name = onePositional(positionals, "CLUSTER (the MySQLCluster)");
  const format = outputFormat(values.output);
  const timeoutMs = parseDuration(values.timeout ?? "5m", "--timeout");
  const { client, namespace } = connect(values);
  const rt = resourceOf(await statewardKind("MySQLCluster"));

  const cluster = await getExisting<MySQLCluster>(client, "MySQLCluster", namespace, name);
  const target = chooseTarget(cluster, values.to);
  const id = `MySQLCluster ${namespace}/${name}`;
  const result = (c: MySQLCluster, seconds: number) => ({ namespace, name, from: target.from, to: target.pod, seconds, status: c.status });
  const previous = cluster.spec.primary;
  if (target.pod === target.from && previous === target.ordinal) {
    out(format === "text" ? `${target.pod} is already the primary of ${id}; nothing to do\n` : render(format, result(cluster, 0)));
    return EXIT.ok;
  }
  // The resourceVersion makes the write fail if the cluster changed since the checks above.
  let patched: MySQLCluster;
  try {
    patched = await client.patch<MySQLCluster>(rt, namespace, name, { metadata: { resourceVersion: cluster.metadata.resourceVersion }, spec: { primary: target.ordinal } });
  } catch (err) {
    if (isConflict(err)) throw new CommandError(EXIT.failed, `${id} changed while the switchover was being checked; nothing was changed, run it again`);
    throw err;
  }
  const generation = patched.metadata.generation ?? 0;
  if (target.pod === target.from) {
    out(format === "text" ? `${target.pod} is already the primary of ${id}; spec.primary now names it\n` : render(format, result(patched, 0)));
    return EXIT.ok;
  }
  if (values["no-wait"]) {
    out(format === "text" ? `${id}: spec.primary set to ${target.ordinal} (${target.pod}); the operator switches over from ${target.from}\n` : render(format, result(patched, 0)));
    return EXIT.ok;
  }
  progress(`${id}: switching over from ${target.from} to ${target.pod} (spec.primary ${target.ordinal}); Ctrl-C stops following, not the switchover\n`);
  const started = performance.now();
  const end = await follow({
    what: id,
    timeoutMs,
    progress,
    hint: kubectlHint("mysqlcluster", namespace, name),
    poll: async () => {
      const c = await client.get<MySQLCluster>(rt, namespace, name);
      return { object: c, line: clusterLine(c), done: switchoverState(c, target, generation) };
    },
  });
  const seconds = Math.round((performance.now() - started) / 100) / 10;
  if (!end.done?.ok) {
    const undone = await withdraw(client, end.object, target.ordinal, previous);
    if (format !== "text") out(render(format, result(end.object, seconds)));
    throw new CommandError(EXIT.failed, `the operator did not switch ${id} over to ${target.pod}: ${end.done?.message ?? ""}; ${undone}`);
  }
  out(format === "text" ? `${id}: ${target.pod} is the primary (was ${target.from}); every server Ready after ${formatSeconds(seconds)}\n` : render(format, result(end.object, seconds)));
  return EXIT.ok;
}
