// The servers' my.cnf: the operator's safe defaults for a replicated server
// (binary log with GTIDs, replicas logging what they apply so any of them can
// become the primary, durable commits, no DNS lookups), with the user's
// `config` merged over them. What the operator itself manages — the server
// id, read-only, the binary log and GTID switches, paths and ports — cannot be
// set by the user: the schema refuses it, and `render` enforces it again.
import type { Flavor } from "@stateward/mysql";

/** A setting's name in `config`: what my.cnf accepts, starting with a letter. */
export const SETTING_NAME_PATTERN = "^[a-zA-Z][a-zA-Z0-9_-]{0,127}$";
/** A setting's value: one line, no control characters. */
export const SETTING_VALUE_PATTERN = "^[^\\x00-\\x1f\\x7f]*$";

/** Settings the operator manages, in normalized form (lower case, `_`). */
export const OPERATOR_OWNED_SETTINGS = [
  "server_id",
  "read_only",
  "super_read_only",
  "log_bin",
  "log_slave_updates",
  "log_replica_updates",
  "gtid_mode",
  "enforce_gtid_consistency",
  "gtid_strict_mode",
  "gtid_domain_id",
  "relay_log",
  "datadir",
  "port",
  "socket",
  "bind_address",
  "skip_networking",
  "pid_file",
  "user",
] as const;

/** The first server id; pod ordinal N gets SERVER_ID_BASE + N (the init container writes it). */
export const SERVER_ID_BASE = 1000;

const common: Record<string, string> = {
  binlog_format: "ROW",
  binlog_expire_logs_seconds: "604800",
  sync_binlog: "1",
  innodb_flush_log_at_trx_commit: "1",
  skip_name_resolve: "ON",
  character_set_server: "utf8mb4",
  max_connections: "300",
};

const defaults: Record<Flavor, Record<string, string>> = {
  MariaDB: {
    ...common,
    log_bin: "mysql-bin",
    log_slave_updates: "ON",
    gtid_strict_mode: "ON",
    gtid_domain_id: "0",
    collation_server: "utf8mb4_unicode_ci",
  },
  MySQL: {
    ...common,
    log_bin: "mysql-bin",
    log_replica_updates: "ON",
    gtid_mode: "ON",
    enforce_gtid_consistency: "ON",
    collation_server: "utf8mb4_0900_ai_ci",
  },
};

/** `max-connections` and `Max_Connections` are `max_connections` to the server. */
export function normalizeSettingName(name: string): string {
  return name.toLowerCase().replaceAll("-", "_");
}

/** Whether a setting is passed with `loose-`, which the server ignores when it does not know it. */
export function isLoose(name: string): boolean {
  return normalizeSettingName(name).startsWith("loose_");
}

/**
 * The flavor an image runs, guessed from its name before any server exists
 * (the my.cnf differs); the running primary's version has the last word in
 * status. Anything not named mysql or percona is taken for MariaDB.
 */
export function flavorOfImage(image: string): Flavor {
  const repository = image.split("@")[0]?.replace(/:[^/]*$/, "") ?? "";
  const name = repository.split("/").at(-1) ?? "";
  return /^(mysql|mysql-server|percona|percona-server)$/.test(name) ? "MySQL" : "MariaDB";
}

/** The settings in effect: defaults, then `config` (names normalized), operator-owned names dropped from `config`. */
export function effectiveSettings(flavor: Flavor, config: Readonly<Record<string, string>> = {}): Map<string, string> {
  const owned = new Set<string>(OPERATOR_OWNED_SETTINGS);
  const settings = new Map(Object.entries(defaults[flavor]));
  for (const [name, value] of Object.entries(config)) {
    const normalized = normalizeSettingName(name);
    if (owned.has(normalized)) continue;
    settings.set(normalized, value);
  }
  return settings;
}

/** The my.cnf every server of the cluster reads (its server id comes from a second file). */
export function renderMyCnf(flavor: Flavor, config: Readonly<Record<string, string>> = {}): string {
  const lines = ["# Written by the Stateward mysql-cluster operator from the MySQLCluster's config; edits are reverted.", "[mysqld]"];
  for (const [name, value] of [...effectiveSettings(flavor, config)].sort(([a], [b]) => a.localeCompare(b))) {
    lines.push(`${name} = ${value}`);
  }
  return `${lines.join("\n")}\n`;
}

/**
 * Names in `config` the server does not know, checked against its
 * `SHOW GLOBAL VARIABLES` (normalized). `loose-` names are passed through:
 * the server skips them itself.
 */
export function unknownSettings(config: Readonly<Record<string, string>>, serverVariables: ReadonlySet<string>): string[] {
  return Object.keys(config)
    .filter((name) => !isLoose(name) && !serverVariables.has(normalizeSettingName(name)))
    .sort();
}

/**
 * The init container's script: copies the cluster's my.cnf into the server's
 * include directory and writes the pod's server id, derived from the ordinal
 * at the end of its host name. Static text: nothing from the resource is in it.
 */
export const INIT_SCRIPT = [
  "set -eu",
  'ordinal="${HOSTNAME##*-}"',
  "cp /etc/stateward/my.cnf /etc/mysql/conf.d/10-stateward.cnf",
  `printf '[mysqld]\\nserver_id = %d\\n' "$((${SERVER_ID_BASE} + ordinal))" > /etc/mysql/conf.d/20-server-id.cnf`,
].join("\n");
