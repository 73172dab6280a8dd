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
  /** rpl_semi_sync_master_timeout, in milliseconds. */
  timeoutMs: number;
}

/** Whether semi-sync can work: MariaDB (built in) and at least one replica to acknowledge. */
export function semiSyncApplies(mode: "SemiSync" | "Async", flavor: "MariaDB" | "MySQL", servers: number): boolean {
  return mode === "SemiSync" && flavor === "MariaDB" && servers >= 2;
}

/** What makes the primary's side as wished: the settings to change, in order, and the state they leave. */
export interface SemiSyncPlan {
  timeoutMs?: number;
  enabled?: boolean;
  /** In words, for the PrimaryConfigured Event. */
  done: string[];
  /**
   * The state after the changes, without reading it again: the server turns
   * Rpl_semi_sync_master_status on with the switch (and off without it); the
   * timeout changes neither; clients are whoever is connected.
   */
  after: SemiSyncState;
}

/** The changes from `state` to `wish` (pure). The timeout is set before the switch, so the first waiting commit has it. */
export function planSemiSync(state: SemiSyncState, wish: SemiSyncWish): SemiSyncPlan {
  const plan: SemiSyncPlan = { done: [], after: state };
  if (wish.enabled && state.timeoutMs !== wish.timeoutMs) {
    plan.timeoutMs = wish.timeoutMs;
    plan.done.push(`semi-sync timeout ${wish.timeoutMs} ms`);
    plan.after = { ...plan.after, timeoutMs: wish.timeoutMs };
  }
  if (state.enabled !== wish.enabled) {
    plan.enabled = wish.enabled;
    plan.done.push(wish.enabled ? "semi-sync on" : "semi-sync off");
    plan.after = { ...plan.after, enabled: wish.enabled, active: wish.enabled };
  }
  return plan;
}

/** Carries out a plan on the primary; returns the state it leaves. */
export async function applySemiSync(conn: InstanceConnection, plan: SemiSyncPlan): Promise<SemiSyncState> {
  if (plan.timeoutMs !== undefined) await conn.query("SET GLOBAL rpl_semi_sync_master_timeout = ?", [plan.timeoutMs]);
  if (plan.enabled !== undefined) await conn.query(`SET GLOBAL rpl_semi_sync_master_enabled = ${plan.enabled ? "ON" : "OFF"}`);
  return plan.after;
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

/** The primary's semi-sync switch, timeout, status and clients, in one statement (MySQL: off — not managed). */
export async function readSemiSync(conn: InstanceConnection): Promise<SemiSyncState> {
  if (conn.server.flavor !== "MariaDB") return { enabled: false, active: false, clients: 0, timeoutMs: 0 };
  const status = (name: string) => `(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = '${name}')`;
  const [row] = await conn.query<Row>(
    `SELECT @@GLOBAL.rpl_semi_sync_master_enabled AS enabled, @@GLOBAL.rpl_semi_sync_master_timeout AS timeout, ${status("RPL_SEMI_SYNC_MASTER_STATUS")} AS status, ${status("RPL_SEMI_SYNC_MASTER_CLIENTS")} AS clients`,
  );
  return {
    enabled: Number(cellText(row?.enabled)) === 1,
    active: cellText(row?.status) === "ON",
    clients: Number(cellText(row?.clients) || 0),
    timeoutMs: Number(cellText(row?.timeout) || 0),
  };
}
