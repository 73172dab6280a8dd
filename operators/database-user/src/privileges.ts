// The privileges Stateward knows, where each may be granted and on which
// flavor, and what `ALL PRIVILEGES` stands for at each level — the knowledge
// needed to validate a grant before it reaches the server and to diff a
// wished-for set of privileges against what SHOW GRANTS prints.
import { atLeast, type Flavor, type ServerInfo } from "@stateward/mysql";

/** Where a grant applies: `*.*`, `db.*` or `db.table`. */
export type GrantLevel = "global" | "database" | "table";

interface PrivilegeInfo {
  levels: readonly GrantLevel[];
  flavors: readonly Flavor[];
}

const ALL_LEVELS: readonly GrantLevel[] = ["global", "database", "table"];
const NOT_TABLE: readonly GrantLevel[] = ["global", "database"];
const GLOBAL: readonly GrantLevel[] = ["global"];
const BOTH: readonly Flavor[] = ["MySQL", "MariaDB"];
const MARIADB: readonly Flavor[] = ["MariaDB"];
const MYSQL: readonly Flavor[] = ["MySQL"];

/** The privilege that stands for every privilege of its level. */
export const ALL_PRIVILEGES = "ALL PRIVILEGES";

const CATALOGUE = {
  "ALL PRIVILEGES": { levels: ALL_LEVELS, flavors: BOTH },
  // Object privileges: table, database and global level.
  SELECT: { levels: ALL_LEVELS, flavors: BOTH },
  INSERT: { levels: ALL_LEVELS, flavors: BOTH },
  UPDATE: { levels: ALL_LEVELS, flavors: BOTH },
  DELETE: { levels: ALL_LEVELS, flavors: BOTH },
  CREATE: { levels: ALL_LEVELS, flavors: BOTH },
  DROP: { levels: ALL_LEVELS, flavors: BOTH },
  ALTER: { levels: ALL_LEVELS, flavors: BOTH },
  INDEX: { levels: ALL_LEVELS, flavors: BOTH },
  REFERENCES: { levels: ALL_LEVELS, flavors: BOTH },
  "CREATE VIEW": { levels: ALL_LEVELS, flavors: BOTH },
  "SHOW VIEW": { levels: ALL_LEVELS, flavors: BOTH },
  TRIGGER: { levels: ALL_LEVELS, flavors: BOTH },
  "DELETE HISTORY": { levels: ALL_LEVELS, flavors: MARIADB },
  // Database and global level.
  "CREATE TEMPORARY TABLES": { levels: NOT_TABLE, flavors: BOTH },
  "LOCK TABLES": { levels: NOT_TABLE, flavors: BOTH },
  EXECUTE: { levels: NOT_TABLE, flavors: BOTH },
  "CREATE ROUTINE": { levels: NOT_TABLE, flavors: BOTH },
  "ALTER ROUTINE": { levels: NOT_TABLE, flavors: BOTH },
  EVENT: { levels: NOT_TABLE, flavors: BOTH },
  // Administrative: global level only.
  PROCESS: { levels: GLOBAL, flavors: BOTH },
  RELOAD: { levels: GLOBAL, flavors: BOTH },
  "REPLICATION CLIENT": { levels: GLOBAL, flavors: BOTH },
  "REPLICATION SLAVE": { levels: GLOBAL, flavors: BOTH },
  "SHOW DATABASES": { levels: GLOBAL, flavors: BOTH },
  FILE: { levels: GLOBAL, flavors: BOTH },
  SHUTDOWN: { levels: GLOBAL, flavors: BOTH },
  SUPER: { levels: GLOBAL, flavors: BOTH },
  "CREATE USER": { levels: GLOBAL, flavors: BOTH },
  "CREATE TABLESPACE": { levels: GLOBAL, flavors: BOTH },
  // MariaDB 10.5+ split SUPER into these.
  "BINLOG ADMIN": { levels: GLOBAL, flavors: MARIADB },
  "BINLOG MONITOR": { levels: GLOBAL, flavors: MARIADB },
  "BINLOG REPLAY": { levels: GLOBAL, flavors: MARIADB },
  "CONNECTION ADMIN": { levels: GLOBAL, flavors: MARIADB },
  "FEDERATED ADMIN": { levels: GLOBAL, flavors: MARIADB },
  "READ_ONLY ADMIN": { levels: GLOBAL, flavors: MARIADB },
  "REPLICATION MASTER ADMIN": { levels: GLOBAL, flavors: MARIADB },
  "REPLICATION SLAVE ADMIN": { levels: GLOBAL, flavors: MARIADB },
  "SET USER": { levels: GLOBAL, flavors: MARIADB },
  "SLAVE MONITOR": { levels: GLOBAL, flavors: MARIADB },
  // MySQL 8: static role privileges and the common dynamic privileges.
  "CREATE ROLE": { levels: GLOBAL, flavors: MYSQL },
  "DROP ROLE": { levels: GLOBAL, flavors: MYSQL },
  BACKUP_ADMIN: { levels: GLOBAL, flavors: MYSQL },
  BINLOG_ADMIN: { levels: GLOBAL, flavors: MYSQL },
  CONNECTION_ADMIN: { levels: GLOBAL, flavors: MYSQL },
  REPLICATION_APPLIER: { levels: GLOBAL, flavors: MYSQL },
  REPLICATION_SLAVE_ADMIN: { levels: GLOBAL, flavors: MYSQL },
  ROLE_ADMIN: { levels: GLOBAL, flavors: MYSQL },
  SYSTEM_VARIABLES_ADMIN: { levels: GLOBAL, flavors: MYSQL },
  XA_RECOVER_ADMIN: { levels: GLOBAL, flavors: MYSQL },
} as const satisfies Record<string, PrivilegeInfo>;

export type PrivilegeName = keyof typeof CATALOGUE;

/** Every privilege a grant may name (the CRD's enum), in catalogue order. */
export const PRIVILEGE_NAMES = Object.keys(CATALOGUE) as [PrivilegeName, ...PrivilegeName[]];

/** Privileges that exist only at global level (`database: "*"`). */
export const GLOBAL_ONLY_PRIVILEGES = PRIVILEGE_NAMES.filter((p) => !CATALOGUE[p].levels.includes("database"));

/** Privileges that exist at database and global level but not on a single table. */
export const NOT_TABLE_PRIVILEGES = PRIVILEGE_NAMES.filter((p) => !CATALOGUE[p].levels.includes("table"));

export function isKnownPrivilege(name: string): name is PrivilegeName {
  return Object.hasOwn(CATALOGUE, name);
}

/** The flavors a known privilege exists on. */
export function privilegeFlavors(name: PrivilegeName): readonly Flavor[] {
  return CATALOGUE[name].flavors;
}

export function privilegeLevels(name: PrivilegeName): readonly GrantLevel[] {
  return CATALOGUE[name].levels;
}

export function grantLevel(database: string, table: string): GrantLevel {
  if (database === "*") return "global";
  return table === "*" ? "database" : "table";
}

/**
 * The name the server prints in SHOW GRANTS for a privilege granted under
 * `name`. MariaDB 10.5.2 renamed REPLICATION CLIENT to BINLOG MONITOR (the
 * old name stays accepted as an alias, but SHOW GRANTS prints the new one).
 */
export function canonicalPrivilege(name: string, server: Pick<ServerInfo, "flavor" | "major" | "minor" | "patch">): string {
  const upper = name.trim().replace(/\s+/g, " ").toUpperCase();
  if (server.flavor === "MariaDB") {
    if (upper === "REPLICATION CLIENT" && atLeast(server, 10, 5, 2)) return "BINLOG MONITOR";
    if (upper === "REPLICA MONITOR") return "SLAVE MONITOR";
    if (upper === "REPLICATION REPLICA") return "REPLICATION SLAVE";
  }
  if (upper === "ALL") return ALL_PRIVILEGES;
  return upper;
}

const TABLE_ALL = ["SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "REFERENCES", "INDEX", "ALTER", "CREATE VIEW", "SHOW VIEW", "TRIGGER"];
const DATABASE_EXTRA = ["CREATE TEMPORARY TABLES", "LOCK TABLES", "EXECUTE", "CREATE ROUTINE", "ALTER ROUTINE", "EVENT"];
const GLOBAL_STATIC = [
  "RELOAD", "SHUTDOWN", "PROCESS", "FILE", "SHOW DATABASES", "SUPER", "REPLICATION SLAVE", "CREATE USER", "CREATE TABLESPACE",
];
const MARIADB_GLOBAL = [
  "SET USER", "FEDERATED ADMIN", "CONNECTION ADMIN", "READ_ONLY ADMIN", "REPLICATION SLAVE ADMIN", "REPLICATION MASTER ADMIN",
  "BINLOG ADMIN", "BINLOG REPLAY", "SLAVE MONITOR",
];

/**
 * What `ALL PRIVILEGES` at `level` stands for on `server`, as SHOW GRANTS
 * names the privileges (checked against MariaDB 10.11: revoking one of these
 * from ALL leaves exactly the others). MySQL 8's global ALL also includes
 * every dynamic privilege, which SHOW GRANTS lists by name; only the static
 * ones are listed here. A privilege a newer server adds to ALL is not in the
 * list: revoking "all but X" then leaves it behind, SHOW GRANTS shows it by
 * name, and the next pass of the diff revokes it.
 */
export function allPrivilegesAt(level: GrantLevel, server: Pick<ServerInfo, "flavor" | "major" | "minor" | "patch">): string[] {
  const mariadb = server.flavor === "MariaDB";
  const table = mariadb ? [...TABLE_ALL, "DELETE HISTORY"] : TABLE_ALL;
  if (level === "table") return table;
  const database = [...table, ...DATABASE_EXTRA];
  if (level === "database") return database;
  const replicationClient = canonicalPrivilege("REPLICATION CLIENT", server);
  return mariadb
    ? [...database, ...GLOBAL_STATIC, replicationClient, ...MARIADB_GLOBAL]
    : [...database, ...GLOBAL_STATIC, replicationClient, "CREATE ROLE", "DROP ROLE"];
}
