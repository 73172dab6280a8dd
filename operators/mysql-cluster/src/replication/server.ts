// What the operator reads from and does to one server of a cluster, in the
// flavor's own SQL. Values (host names, the replication password) are bound
// as parameters; the few identifiers are constants.
import { CLUSTER_REPLICATION_USER, notSystemDatabase, type InstanceConnection } from "@stateward/mysql";
import { cellText } from "./cell.ts";
import { gtidContains, gtidListOfEvent } from "./gtid.ts";

/** The account replicas log in to the primary with (shared: the database-user operator refuses to touch it). */
export const REPLICATION_USER = CLUSTER_REPLICATION_USER;

type Row = Record<string, unknown>;

export interface ServerState {
  serverId: number;
  readOnly: boolean;
  /** Everything the server has executed: MariaDB gtid_current_pos, MySQL gtid_executed. */
  gtidExecuted: string;
  /**
   * Its history, to tell which of two servers has everything of the other:
   * MariaDB gtid_binlog_state (last sequence per domain and origin server),
   * MySQL gtid_executed.
   */
  history: string;
  /** Databases other than the server's own: an empty server may be seeded. */
  userDatabases: number;
}

export interface ReplicaState {
  /** Whether the server is set up as a replica at all. */
  configured: boolean;
  sourceHost?: string;
  sourcePort?: number;
  ioRunning: boolean;
  sqlRunning: boolean;
  lagSeconds?: number;
  lastError?: string;
  /** What its I/O thread has received from the source: MariaDB Gtid_IO_Pos, MySQL Retrieved_Gtid_Set. */
  received?: string;
}

function str(row: Row | undefined, ...names: string[]): string | undefined {
  for (const n of names) {
    const v = row?.[n];
    if (v !== undefined && v !== null) return cellText(v);
  }
  return undefined;
}

export async function readServer(conn: InstanceConnection): Promise<ServerState> {
  const mariadb = conn.server.flavor === "MariaDB";
  const [row] = await conn.query<Row>(
    mariadb
      ? "SELECT @@GLOBAL.server_id AS server_id, @@GLOBAL.read_only AS read_only, @@GLOBAL.gtid_current_pos AS executed, @@GLOBAL.gtid_binlog_state AS history"
      : "SELECT @@GLOBAL.server_id AS server_id, @@GLOBAL.read_only AS read_only, @@GLOBAL.gtid_executed AS executed, @@GLOBAL.gtid_executed AS history",
  );
  const userDatabases = notSystemDatabase("SCHEMA_NAME");
  const [count] = await conn.query<Row>(`SELECT COUNT(*) AS n FROM information_schema.SCHEMATA WHERE ${userDatabases.sql}`, userDatabases.values);
  return {
    serverId: Number(str(row, "server_id") ?? 0),
    readOnly: Number(str(row, "read_only") ?? 0) === 1,
    gtidExecuted: str(row, "executed") ?? "",
    history: str(row, "history") ?? "",
    userDatabases: Number(str(count, "n") ?? 0),
  };
}

export async function readReplica(conn: InstanceConnection): Promise<ReplicaState> {
  const mariadb = conn.server.flavor === "MariaDB";
  const rows = await conn.query<Row>(mariadb ? "SHOW SLAVE STATUS" : "SHOW REPLICA STATUS");
  const row = rows[0];
  if (!row) return { configured: false, ioRunning: false, sqlRunning: false };
  const host = str(row, "Master_Host", "Source_Host") ?? "";
  const lag = str(row, "Seconds_Behind_Master", "Seconds_Behind_Source");
  const ioError = str(row, "Last_IO_Error") ?? "";
  const sqlError = str(row, "Last_SQL_Error") ?? "";
  const received = str(row, "Gtid_IO_Pos", "Retrieved_Gtid_Set");
  return {
    configured: host !== "",
    sourceHost: host,
    sourcePort: Number(str(row, "Master_Port", "Source_Port") ?? 0),
    ioRunning: str(row, "Slave_IO_Running", "Replica_IO_Running") === "Yes",
    sqlRunning: str(row, "Slave_SQL_Running", "Replica_SQL_Running") === "Yes",
    ...(lag !== undefined ? { lagSeconds: Number(lag) } : {}),
    ...(received ? { received } : {}),
    ...(ioError || sqlError ? { lastError: [ioError, sqlError].filter((e) => e !== "").join("; ") } : {}),
  };
}

/**
 * The primary: not replicating from anyone, writable, with the replication
 * account. Writes only what is not so already. (A server promoted by a
 * switchover that was interrupted is finished here.)
 */
export async function preparePrimary(conn: InstanceConnection, state: ServerState, replicationPassword: string): Promise<string[]> {
  const done: string[] = [];
  if ((await readReplica(conn)).configured) {
    await stopReplica(conn);
    done.push("stopped replicating");
  }
  if (state.readOnly) {
    await conn.query(conn.server.flavor === "MySQL" ? "SET GLOBAL super_read_only = OFF" : "SET GLOBAL read_only = OFF");
    if (conn.server.flavor === "MySQL") await conn.query("SET GLOBAL read_only = OFF");
    done.push("made writable");
  }
  const [exists] = await conn.query<Row>("SELECT COUNT(*) AS n FROM mysql.user WHERE User = ? AND Host = '%'", [REPLICATION_USER]);
  if (Number(str(exists, "n") ?? 0) === 0) {
    await conn.query("CREATE USER IF NOT EXISTS ?@'%' IDENTIFIED BY ?", [REPLICATION_USER, replicationPassword], [replicationPassword]);
    await conn.query("GRANT REPLICATION SLAVE ON *.* TO ?@'%'", [REPLICATION_USER]);
    done.push("created the replication account");
  }
  return done;
}

/**
 * Turns writes off (or on) for accounts without SUPER (MariaDB read_only) or for
 * every account (MySQL super_read_only, which implies read_only).
 */
export async function setReadOnly(conn: InstanceConnection, on: boolean): Promise<void> {
  const value = on ? "ON" : "OFF";
  if (conn.server.flavor === "MySQL") {
    // super_read_only also stops accounts with SUPER; turning it off must come first, on last.
    if (on) await conn.query(`SET GLOBAL super_read_only = ${value}`);
    else await conn.query(`SET GLOBAL super_read_only = ${value}`).then(() => conn.query(`SET GLOBAL read_only = ${value}`));
    return;
  }
  await conn.query(`SET GLOBAL read_only = ${value}`);
}

export async function setServerId(conn: InstanceConnection, serverId: number): Promise<void> {
  await conn.query("SET GLOBAL server_id = ?", [serverId]);
}

/**
 * Whether a server that executed `executed` can catch up from the primary's binary
 * logs, or needs the data copied first because the primary purged some of
 * what it still lacks.
 */
export async function primaryHasHistoryFor(primary: InstanceConnection, executed: string): Promise<boolean> {
  if (primary.server.flavor === "MySQL") {
    const [row] = await primary.query<Row>("SELECT @@GLOBAL.gtid_purged AS purged");
    return gtidContains("MySQL", executed, str(row, "purged") ?? "");
  }
  const logs = await primary.query<Row>("SHOW BINARY LOGS");
  const first = str(logs[0], "Log_name");
  if (first === undefined) return false;
  const events = await primary.query<Row>("SHOW BINLOG EVENTS IN ? LIMIT 4", [first]);
  const list = events.find((e) => str(e, "Event_type") === "Gtid_list");
  // The Gtid_list at the start of the oldest log names what came before it: gone.
  const purged = list ? gtidListOfEvent(str(list, "Info") ?? "[]") : "";
  return gtidContains("MariaDB", executed, purged);
}

export interface SourceAddress {
  host: string;
  port: number;
}

/** Points a server at the primary with GTID auto-positioning, read-only, and starts replication. */
export async function startReplica(conn: InstanceConnection, source: SourceAddress, password: string): Promise<void> {
  if (conn.server.flavor === "MariaDB") {
    await conn.query("STOP SLAVE");
    await conn.query(
      // current_pos: what the server executed, as a replica or as a former primary alike.
      "CHANGE MASTER TO MASTER_HOST = ?, MASTER_PORT = ?, MASTER_USER = ?, MASTER_PASSWORD = ?, MASTER_USE_GTID = current_pos, MASTER_CONNECT_RETRY = 5",
      [source.host, source.port, REPLICATION_USER, password],
      [password],
    );
    await conn.query("SET GLOBAL read_only = ON");
    await conn.query("START SLAVE");
    return;
  }
  await conn.query("STOP REPLICA");
  await conn.query(
    "CHANGE REPLICATION SOURCE TO SOURCE_HOST = ?, SOURCE_PORT = ?, SOURCE_USER = ?, SOURCE_PASSWORD = ?, SOURCE_AUTO_POSITION = 1, GET_SOURCE_PUBLIC_KEY = 1, SOURCE_CONNECT_RETRY = 5",
    [source.host, source.port, REPLICATION_USER, password],
    [password],
  );
  await conn.query("SET GLOBAL super_read_only = ON");
  await conn.query("START REPLICA");
}

/** A replica leaving the cluster: replication stopped and forgotten (its data and position stay). */
export async function stopReplica(conn: InstanceConnection): Promise<void> {
  if (conn.server.flavor === "MariaDB") {
    await conn.query("STOP SLAVE");
    await conn.query("RESET SLAVE ALL");
  } else {
    await conn.query("STOP REPLICA");
    await conn.query("RESET REPLICA ALL");
  }
}

/** Server variable names (lower case), to check the user's config against. */
export async function serverVariables(conn: InstanceConnection): Promise<Set<string>> {
  const rows = await conn.query<Row>("SHOW GLOBAL VARIABLES");
  return new Set(rows.map((r) => (str(r, "Variable_name") ?? "").toLowerCase()));
}
