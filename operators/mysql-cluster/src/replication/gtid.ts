// GTID positions and sets, for the two questions the operator asks: has this
// replica applied everything the primary had (caught up), and does the
// primary still have the binary logs a replica needs (or must it be seeded)?
//
//   MariaDB  a position per replication domain: "0-1000-42,1-2000-7"
//            (domain-server-sequence); sequences only grow within a domain.
//   MySQL    a set of intervals per source UUID: "3e11fa47-…:1-5:7-9,…".
import type { Flavor } from "@stateward/mysql";

/** MariaDB: domain id → highest sequence number. */
export type MariaDBPosition = Map<number, bigint>;
/** MySQL: source UUID → sorted, merged [first, last] intervals. */
export type MySQLGtidSet = Map<string, [bigint, bigint][]>;

export function parseMariaDBPosition(text: string): MariaDBPosition {
  const position: MariaDBPosition = new Map();
  for (const part of text.split(",").map((p) => p.trim()).filter((p) => p !== "")) {
    const m = /^(\d+)-(\d+)-(\d+)$/.exec(part);
    if (!m) throw new Error(`not a MariaDB GTID: ${JSON.stringify(part)}`);
    const domain = Number(m[1]);
    const seq = BigInt(m[3] ?? "0");
    const known = position.get(domain);
    if (known === undefined || seq > known) position.set(domain, seq);
  }
  return position;
}

export function parseMySQLGtidSet(text: string): MySQLGtidSet {
  const set: MySQLGtidSet = new Map();
  for (const part of text.replaceAll("\n", "").split(",").map((p) => p.trim()).filter((p) => p !== "")) {
    const [uuid, ...ranges] = part.split(":");
    if (uuid === undefined || !/^[0-9a-fA-F-]{36}$/.test(uuid) || ranges.length === 0) throw new Error(`not a MySQL GTID set: ${JSON.stringify(part)}`);
    const intervals = set.get(uuid.toLowerCase()) ?? [];
    for (const r of ranges) {
      const m = /^(\d+)(?:-(\d+))?$/.exec(r);
      if (!m) throw new Error(`not a MySQL GTID interval: ${JSON.stringify(r)}`);
      const first = BigInt(m[1] ?? "0");
      intervals.push([first, m[2] === undefined ? first : BigInt(m[2])]);
    }
    set.set(uuid.toLowerCase(), merge(intervals));
  }
  return set;
}

function merge(intervals: [bigint, bigint][]): [bigint, bigint][] {
  const sorted = [...intervals].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const out: [bigint, bigint][] = [];
  for (const [first, last] of sorted) {
    const prev = out.at(-1);
    if (prev && first <= prev[1] + 1n) prev[1] = last > prev[1] ? last : prev[1];
    else out.push([first, last]);
  }
  return out;
}

/** Whether `have` includes everything in `need` (same flavor's notation). */
export function gtidContains(flavor: Flavor, have: string, need: string): boolean {
  if (flavor === "MariaDB") {
    const h = parseMariaDBPosition(have);
    for (const [domain, seq] of parseMariaDBPosition(need)) {
      if ((h.get(domain) ?? -1n) < seq) return false;
    }
    return true;
  }
  const h = parseMySQLGtidSet(have);
  for (const [uuid, intervals] of parseMySQLGtidSet(need)) {
    const mine = h.get(uuid) ?? [];
    for (const [first, last] of intervals) {
      if (!mine.some(([a, b]) => a <= first && last <= b)) return false;
    }
  }
  return true;
}

/** The GTIDs of a MariaDB `Gtid_list` event's text, e.g. "[0-1000-5,1-2000-3]" → "0-1000-5,1-2000-3". */
export function gtidListOfEvent(info: string): string {
  const m = /^\s*\[(.*)\]\s*$/.exec(info);
  if (!m) throw new Error(`not a Gtid_list event: ${JSON.stringify(info)}`);
  return m[1] ?? "";
}

/** How many transactions a position or set stands for, to compare members' progress. */
export function gtidCount(flavor: Flavor, text: string): bigint {
  if (flavor === "MariaDB") return [...parseMariaDBPosition(text).values()].reduce((a, b) => a + b, 0n);
  let n = 0n;
  for (const intervals of parseMySQLGtidSet(text).values()) for (const [first, last] of intervals) n += last - first + 1n;
  return n;
}

/**
 * MariaDB's `gtid_binlog_state`: the last sequence number per (domain, server id)
 * pair, e.g. "0-1000-5,0-1001-9". Unlike the position (one GTID per domain) it
 * tells two servers that each applied a transaction the other lacks apart: an
 * errant write on a replica shows up as a server id the others never saw.
 */
export type MariaDBBinlogState = Map<string, bigint>;

export function parseMariaDBBinlogState(text: string): MariaDBBinlogState {
  const state: MariaDBBinlogState = new Map();
  for (const part of text.split(",").map((p) => p.trim()).filter((p) => p !== "")) {
    const m = /^(\d+)-(\d+)-(\d+)$/.exec(part);
    if (!m) throw new Error(`not a MariaDB GTID: ${JSON.stringify(part)}`);
    const key = `${m[1]}-${m[2]}`;
    const seq = BigInt(m[3] ?? "0");
    if ((state.get(key) ?? -1n) < seq) state.set(key, seq);
  }
  return state;
}

/**
 * Whether a server's history includes everything of another's: MySQL GTID sets
 * (exact), MariaDB binlog states (every origin server's last transaction seen
 * at least as far). Stricter than gtidContains for MariaDB, which compares one
 * sequence per domain and so cannot see two diverged servers.
 */
export function historyContains(flavor: Flavor, have: string, need: string): boolean {
  if (flavor === "MySQL") return gtidContains("MySQL", have, need);
  const h = parseMariaDBBinlogState(have);
  for (const [origin, seq] of parseMariaDBBinlogState(need)) {
    if ((h.get(origin) ?? -1n) < seq) return false;
  }
  return true;
}

/**
 * What a server's history holds that `reference` (the primary's) lacks — its
 * errant transactions: MariaDB, each origin's last transaction beyond the
 * primary's ("0-1000-57"); MySQL, the intervals the primary does not contain.
 * Empty when the server can follow the primary as it is.
 */
export function errantTransactions(flavor: Flavor, reference: string, history: string): string[] {
  if (flavor === "MariaDB") {
    const ref = parseMariaDBBinlogState(reference);
    return [...parseMariaDBBinlogState(history)].filter(([origin, seq]) => (ref.get(origin) ?? -1n) < seq).map(([origin, seq]) => `${origin}-${seq}`);
  }
  const ref = parseMySQLGtidSet(reference);
  const out: string[] = [];
  for (const [uuid, intervals] of parseMySQLGtidSet(history)) {
    const mine = ref.get(uuid) ?? [];
    for (const [first, last] of intervals) {
      if (!mine.some(([a, b]) => a <= first && last <= b)) out.push(`${uuid}:${first === last ? `${first}` : `${first}-${last}`}`);
    }
  }
  return out;
}
