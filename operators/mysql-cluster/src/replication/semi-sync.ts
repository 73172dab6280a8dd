// MariaDB's built-in semi-synchronous replication: the primary acknowledges a
// commit only once a replica has received it (wait point AFTER_SYNC, set in
// my.cnf), so the replica a failover promotes holds every acknowledged write.
// Every server has the replica side on (my.cnf); the operator turns the
// primary side on, on the primary only — a replica's own switch stays off, so
// nothing a replica applies ever waits. When no replica acknowledges within
// the timeout, the primary commits without (asynchronous) until one catches
// up: the operator reads that from Rpl_semi_sync_master_status and reports it.
import type { InstanceConnection } from "@stateward/mysql";
import { cellText } from "./cell.ts";

type Row = Record<string, unknown>;

/** What the primary's semi-sync side should be. */
export interface SemiSyncWish {
  enabled: boolean;
  timeoutMs: number;
}

/** The primary's semi-sync side, as the server reports it. */
export interface SemiSyncState {
  /** rpl_semi_sync_master_enabled. */
  enabled: boolean;
  /** Rpl_semi_sync_master_status: commits wait for an acknowledgement now (false after a fallback). */
  active: boolean;
  /** Rpl_semi_sync_master_clients: replicas connected with acknowledgements on. */
  clients: number;
}

/** Whether semi-sync can work: MariaDB (built in) and at least one replica to acknowledge. */
export function semiSyncApplies(mode: "SemiSync" | "Async", flavor: "MariaDB" | "MySQL", servers: number): boolean {
  return mode === "SemiSync" && flavor === "MariaDB" && servers >= 2;
}

/** Sets the primary's semi-sync switch and timeout where they differ; returns what it changed. */
export async function ensurePrimarySemiSync(conn: InstanceConnection, wish: SemiSyncWish): Promise<string[]> {
  if (conn.server.flavor !== "MariaDB") return [];
  const [row] = await conn.query<Row>("SELECT @@GLOBAL.rpl_semi_sync_master_enabled AS enabled, @@GLOBAL.rpl_semi_sync_master_timeout AS timeout");
  const done: string[] = [];
  if (wish.enabled && Number(cellText(row?.timeout)) !== wish.timeoutMs) {
    await conn.query("SET GLOBAL rpl_semi_sync_master_timeout = ?", [wish.timeoutMs]);
    done.push(`semi-sync timeout ${wish.timeoutMs} ms`);
  }
  if ((Number(cellText(row?.enabled)) === 1) !== wish.enabled) {
    await conn.query(`SET GLOBAL rpl_semi_sync_master_enabled = ${wish.enabled ? "ON" : "OFF"}`);
    done.push(wish.enabled ? "semi-sync on" : "semi-sync off");
  }
  return done;
}

/**
 * A replica: its primary side off (a former primary's would make nothing
 * wait, but stays misleading), its replica side on — after a change the I/O
 * thread reconnects, which is when a replica tells the primary it acknowledges.
 */
export async function ensureReplicaSemiSync(conn: InstanceConnection): Promise<void> {
  if (conn.server.flavor !== "MariaDB") return;
  const [row] = await conn.query<Row>("SELECT @@GLOBAL.rpl_semi_sync_master_enabled AS master, @@GLOBAL.rpl_semi_sync_slave_enabled AS slave");
  if (Number(cellText(row?.master)) === 1) await conn.query("SET GLOBAL rpl_semi_sync_master_enabled = OFF");
  if (Number(cellText(row?.slave)) !== 1) {
    await conn.query("SET GLOBAL rpl_semi_sync_slave_enabled = ON");
    await conn.query("STOP SLAVE IO_THREAD");
    await conn.query("START SLAVE IO_THREAD");
  }
}

export async function readSemiSync(conn: InstanceConnection): Promise<SemiSyncState> {
  if (conn.server.flavor !== "MariaDB") return { enabled: false, active: false, clients: 0 };
  const rows = await conn.query<Row>("SHOW GLOBAL STATUS WHERE Variable_name IN ('Rpl_semi_sync_master_status', 'Rpl_semi_sync_master_clients')");
  const value = (n: string) => cellText(rows.find((r) => cellText(r.Variable_name) === n)?.Value);
  const [row] = await conn.query<Row>("SELECT @@GLOBAL.rpl_semi_sync_master_enabled AS enabled");
  return { enabled: Number(cellText(row?.enabled)) === 1, active: value("Rpl_semi_sync_master_status") === "ON", clients: Number(value("Rpl_semi_sync_master_clients") || 0) };
}
