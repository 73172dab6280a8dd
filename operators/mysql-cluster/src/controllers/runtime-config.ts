// A `config` change the servers can take while running is applied with SET
// GLOBAL on every server instead of restarting them all.
//
// The pod template carries a hash of the config (its change is what rolls the
// pods). That hash is kept on the ConfigMap (POD_CONFIG_HASH) and moves only
// when a change needs a restart: a setting removed (its default is not known
// here), a value SET GLOBAL cannot take as written, a setting the server says
// is read-only (MariaDB's information_schema.SYSTEM_VARIABLES; a MySQL server
// always restarts), or any server not reachable. Otherwise every server gets
// the new values, the ConfigMap gets the new my.cnf (so a pod started later
// reads them), and the hash stays.
//
// A server that restarts without its pod being recreated (a crashed
// container) reads the my.cnf its pod started with, which may be older. So
// the values applied at runtime, as each server reported them back, are kept
// on the ConfigMap too (RUNTIME_SETTINGS) and checked on every reconcile; a
// server that lost one gets it again. A restart of every pod (the hash moved)
// clears that list: the my.cnf they start with has everything.
import { messageOf, type EventRecorder, type KubeObject, type ReconcileContext } from "@stateward/core";
import { quoteIdentifier, type Flavor, type InstanceConnection } from "@stateward/mysql";
import { MY_CNF_KEY } from "../resources/objects.ts";
import { parseMyCnf, runtimeValue, settingsChange } from "../config/runtime.ts";
import type { MySQLCluster } from "../api.ts";

/** On the ConfigMap: the config hash the pod template carries. */
export const POD_CONFIG_HASH_ANNOTATION = "stateward.io/pod-config-hash";
/** On the ConfigMap: settings applied at runtime since the pods last started, with the value each server reported (JSON). */
export const RUNTIME_SETTINGS_ANNOTATION = "stateward.io/runtime-settings";

export interface ConfigDecision {
  /** The hash for the pod template: unchanged unless a restart is needed. */
  podHash: string;
  /** The runtime settings to record on the ConfigMap. */
  runtime: Record<string, string>;
}

export interface RunningServer {
  name: string;
  conn: InstanceConnection;
}

interface ConfigMapObject extends KubeObject {
  data?: Record<string, string>;
}

/**
 * How the desired ConfigMap reaches the servers. `connectServers` gives the
 * cluster's current servers, all connected, or undefined when one of them is
 * not reachable (then a change needs the restart); it is only called when
 * there is something to apply or to check.
 */
export async function decideConfig(
  d: { events: EventRecorder },
  cluster: MySQLCluster,
  flavor: Flavor,
  desired: { cnf: string; hash: string },
  live: ConfigMapObject | undefined,
  connectServers: () => Promise<RunningServer[] | undefined>,
  ctx: ReconcileContext,
): Promise<ConfigDecision> {
  const liveHash = live?.metadata.annotations?.[POD_CONFIG_HASH_ANNOTATION];
  const liveCnf = live?.data?.[MY_CNF_KEY];
  const restart: ConfigDecision = { podHash: desired.hash, runtime: {} };
  if (liveHash === undefined || liveCnf === undefined) return restart;
  const runtime = parseRuntime(live?.metadata.annotations?.[RUNTIME_SETTINGS_ANNOTATION]);
  if (liveCnf === desired.cnf) {
    if (Object.keys(runtime).length > 0) {
      const servers = await connectServers();
      if (servers) await keepRuntimeSettings(d, cluster, servers, runtime, parseMyCnf(desired.cnf), ctx);
    }
    return { podHash: liveHash, runtime };
  }

  const change = settingsChange(parseMyCnf(liveCnf), parseMyCnf(desired.cnf));
  const values = [...change.changed].map(([name, value]) => ({ name, value, set: runtimeValue(value) }));
  const why = (reason: string) => {
    ctx.log.info("config change needs a restart of every server", { reason, settings: [...change.changed.keys(), ...change.removed] });
    return restart;
  };
  // Only the text changed (a comment, a newer operator's header): nothing to apply.
  if (values.length === 0 && change.removed.length === 0) return { podHash: liveHash, runtime };
  if (flavor !== "MariaDB") return why("the server does not say which settings are dynamic");
  if (change.removed.length > 0) return why(`removed: ${change.removed.join(", ")}`);
  if (values.some((v) => v.set === undefined)) return why("a value SET GLOBAL cannot take as written");
  const servers = await connectServers();
  if (!servers) return why("not every server is reachable");
  const names = values.map((v) => v.name);
  const primary = servers[0]!.conn;
  const dynamic = new Set(
    (
      await primary.query<{ name: string }>(
        `SELECT LOWER(VARIABLE_NAME) AS name FROM information_schema.SYSTEM_VARIABLES WHERE READ_ONLY = 'NO' AND VARIABLE_NAME IN (${placeholders(names)})`,
        names.map((n) => n.toUpperCase()),
      )
    ).map((r) => r.name),
  );
  const readOnly = names.filter((n) => !dynamic.has(n));
  if (readOnly.length > 0) return why(`read-only in the server: ${readOnly.join(", ")}`);
  try {
    for (const server of servers) {
      for (const v of values) await server.conn.query(`SET GLOBAL ${quoteIdentifier(v.name, "setting")} = ?`, [v.set!]);
    }
  } catch (err) {
    // Servers that took some values meanwhile are restarted with the my.cnf anyway.
    return why(`SET GLOBAL failed: ${messageOf(err)}`);
  }
  const reported = await reportedValues(primary, names);
  const summary = values.map((v) => `${v.name} = ${v.value}`).join(", ");
  await d.events.record(cluster, "Normal", "ConfigApplied", `Applied ${summary} to ${servers.length} server(s) without a restart`);
  return { podHash: liveHash, runtime: { ...runtime, ...reported } };
}

/** A server that restarted from an older my.cnf gets the runtime settings again. */
async function keepRuntimeSettings(
  d: { events: EventRecorder },
  cluster: MySQLCluster,
  servers: RunningServer[],
  runtime: Record<string, string>,
  desired: ReadonlyMap<string, string>,
  ctx: ReconcileContext,
): Promise<void> {
  const names = Object.keys(runtime);
  if (names.length === 0) return;
  for (const server of servers) {
    const now = await reportedValues(server.conn, names);
    const lost = names.filter((n) => now[n] !== runtime[n]);
    if (lost.length === 0) continue;
    for (const name of lost) {
      const value = runtimeValue(desired.get(name) ?? "");
      if (value !== undefined) await server.conn.query(`SET GLOBAL ${quoteIdentifier(name, "setting")} = ?`, [value]);
    }
    const after = await reportedValues(server.conn, lost);
    const restored = lost.filter((n) => after[n] === runtime[n]);
    if (restored.length === 0) continue;
    ctx.log.info("runtime settings applied again", { server: server.name, settings: restored });
    await d.events.record(cluster, "Normal", "ConfigApplied", `${server.name} had lost ${restored.join(", ")} (it restarted from an older my.cnf): applied again`);
  }
}

async function reportedValues(conn: InstanceConnection, names: string[]): Promise<Record<string, string>> {
  const rows = await conn.query<{ Variable_name: string; Value: string }>(`SHOW GLOBAL VARIABLES WHERE Variable_name IN (${placeholders(names)})`, names);
  return Object.fromEntries(rows.map((r) => [r.Variable_name.toLowerCase(), String(r.Value)]));
}

function placeholders(values: readonly unknown[]): string {
  return values.map(() => "?").join(", ");
}

function parseRuntime(text: string | undefined): Record<string, string> {
  if (!text) return {};
  try {
    const parsed = JSON.parse(text) as unknown;
    return parsed && typeof parsed === "object" ? Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === "string")) : {};
  } catch {
    return {};
  }
}
