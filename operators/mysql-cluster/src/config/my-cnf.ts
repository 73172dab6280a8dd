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
  // Semi-synchronous replication: the primary's switch is turned on by the operator (replication.mode).
  "rpl_semi_sync_master_enabled",
  "rpl_semi_sync_slave_enabled",
  "rpl_semi_sync_master_wait_point",
  "rpl_semi_sync_master_timeout",
] as const;

/** The first server id; pod ordinal N gets SERVER_ID_BASE + N (the init container writes it). */
export const SERVER_ID_BASE = 1000;

const common: Record<string, string> = {
  // Fencing: every server starts read-only; only the operator makes the primary it recorded in
  // status writable. A returning old primary never takes writes on its own.
  read_only: "ON",
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
    // Every replica acknowledges what it receives; only the primary waits for it (the operator
    // turns rpl_semi_sync_master_enabled on there). AFTER_SYNC: a commit becomes visible only once
    // a replica has it, so no client reads a write a failover could lose.
    rpl_semi_sync_slave_enabled: "ON",
    rpl_semi_sync_master_wait_point: "AFTER_SYNC",
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

/**
 * The prefixes the servers' option parser (my_getopt) takes off a name it does
 * not know, in any order and any number: `loose-` (ignore when unknown),
 * `skip-`/`disable-` (set OFF), `enable-` (set ON), `maximum-` (the session
 * limit). `loose-skip-log-bin` turns the binary log off.
 */
export const OPTION_PREFIXES = ["loose", "skip", "disable", "enable", "maximum"] as const;

/**
 * The names a setting may stand for, normalized: itself, then what is left
 * after each option prefix is taken off (`loose_skip_log_bin`,
 * `skip_log_bin`, `log_bin`). The server tries them in this order.
 */
export function settingCandidates(name: string): string[] {
  const out: string[] = [];
  let rest = normalizeSettingName(name);
  for (;;) {
    out.push(rest);
    const prefix = OPTION_PREFIXES.find((p) => rest.startsWith(`${p}_`) && rest.length > p.length + 1);
    if (prefix === undefined) return out;
    rest = rest.slice(prefix.length + 1);
  }
}

/**
 * The operator-managed setting a name in `config` would change, or undefined.
 * Also through option prefixes, and through abbreviations: MariaDB takes any
 * unambiguous start of a name for the name (`read_onl` is read_only), so a
 * name that is the start of a managed one is refused too.
 */
export function operatorOwnedSetting(name: string): string | undefined {
  for (const candidate of settingCandidates(name)) {
    const owned = OPERATOR_OWNED_SETTINGS.find((o) => o.startsWith(candidate));
    if (owned !== undefined) return owned;
  }
  return undefined;
}

/**
 * The same test as a regular expression over the normalized name, for the
 * CRD's CEL rule: option prefixes, then a non-empty start of a managed name.
 */
export function operatorOwnedSettingPattern(): string {
  const startOf = (name: string): string => [...name].reduceRight((inner, ch) => `${ch}${inner === "" ? "" : `(${inner})?`}`, "");
  return `^((${OPTION_PREFIXES.join("|")})_)*(${OPERATOR_OWNED_SETTINGS.map(startOf).join("|")})$`;
}

/** Whether a setting is passed with `loose-` (anywhere among its prefixes): the server ignores it when it does not know it. */
export function isLoose(name: string): boolean {
  return settingCandidates(name).slice(0, -1).some((c) => c.startsWith("loose_"));
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

/**
 * The settings in effect: defaults, then `config` (names normalized), names
 * that would change an operator-managed setting (however prefixed or
 * abbreviated) dropped from `config`.
 */
export function effectiveSettings(flavor: Flavor, config: Readonly<Record<string, string>> = {}): Map<string, string> {
  const settings = new Map(Object.entries(defaults[flavor]));
  for (const [name, value] of Object.entries(config)) {
    if (operatorOwnedSetting(name) !== undefined) continue;
    settings.set(normalizeSettingName(name), value);
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
 * `SHOW GLOBAL VARIABLES` (normalized): known when the name, or what is left
 * after its option prefixes (`skip-name-resolve` is a variable itself;
 * `disable-x` sets x), is a variable. `loose-` names are passed through: the
 * server skips them itself.
 */
export function unknownSettings(config: Readonly<Record<string, string>>, serverVariables: ReadonlySet<string>): string[] {
  return Object.keys(config)
    .filter((name) => !isLoose(name) && !settingCandidates(name).some((c) => serverVariables.has(c)))
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
