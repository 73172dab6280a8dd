// MariaDB GTIDs (`domain-server-seq`) and GTID positions (the last GTID of
// each replication domain, as `@@gtid_binlog_pos` and `@slave_connect_state`
// write them: "0-1-100,1-2-7"). Sequence numbers are 64-bit: bigint.

/** One MariaDB GTID. */
export interface Gtid {
  domain: number;
  server: number;
  seq: bigint;
}

/** The last GTID of each domain, by domain id. */
export type GtidPosition = ReadonlyMap<number, Gtid>;

const U32_MAX = 0xffff_ffff;
const U64_MAX = (1n << 64n) - 1n;

export function formatGtid(g: Gtid): string {
  return `${g.domain}-${g.server}-${g.seq}`;
}

export function parseGtid(text: string): Gtid {
  const m = /^(\d{1,10})-(\d{1,10})-(\d{1,20})$/.exec(text.trim());
  const domain = Number(m?.[1]);
  const server = Number(m?.[2]);
  const seq = m ? BigInt(m[3] as string) : -1n;
  if (!m || domain > U32_MAX || server > U32_MAX || seq > U64_MAX) {
    throw new Error(`"${text}" is not a MariaDB GTID (domain-server-sequence, e.g. 0-1-42)`);
  }
  return { domain, server, seq };
}

/** "0-1-100,1-2-7" (spaces and newlines, as the server prints long values, are ignored); "" is the empty position. */
export function parsePosition(text: string): Map<number, Gtid> {
  const position = new Map<number, Gtid>();
  for (const part of text.replace(/\s+/g, "").split(",")) {
    if (part === "") continue;
    const g = parseGtid(part);
    if (position.has(g.domain)) throw new Error(`GTID position "${text}" names domain ${g.domain} twice`);
    position.set(g.domain, g);
  }
  return position;
}

/** Domains in ascending order, as the server writes a position. */
export function formatPosition(position: GtidPosition): string {
  return [...position.values()]
    .sort((a, b) => a.domain - b.domain)
    .map(formatGtid)
    .join(",");
}

/** The position after `gtid`. */
export function advance(position: GtidPosition, gtid: Gtid): Map<number, Gtid> {
  const next = new Map(position);
  next.set(gtid.domain, gtid);
  return next;
}

/**
 * Whether `gtid` is exactly the next transaction after `position`: the
 * following sequence number of its domain. A domain the position does not
 * name yet starts at 1 (every domain a server has written to is in its
 * `gtid_binlog_pos`, where an archive starts). MariaDB numbers each domain's
 * transactions one by one, so anything else means a transaction is missing
 * (a gap) or was seen already (a duplicate).
 */
export type Continuity = { ok: true } | { ok: false; kind: "gap" | "duplicate"; expected: bigint; got: Gtid };

export function continuity(position: GtidPosition, gtid: Gtid): Continuity {
  const last = position.get(gtid.domain);
  const expected = (last?.seq ?? 0n) + 1n;
  if (gtid.seq === expected) return { ok: true };
  return { ok: false, kind: gtid.seq < expected ? "duplicate" : "gap", expected, got: gtid };
}

/** A sentence for a failed continuity check. */
export function describeDiscontinuity(position: GtidPosition, c: Extract<Continuity, { ok: false }>): string {
  const last = position.get(c.got.domain);
  const after = last ? `after ${formatGtid(last)}` : `as the first transaction of domain ${c.got.domain}`;
  return c.kind === "gap"
    ? `GTID gap: the server sent ${formatGtid(c.got)} ${after}; sequence number ${c.expected} is missing from the stream`
    : `duplicate GTID: the server sent ${formatGtid(c.got)} ${after}; sequence number ${c.got.seq} was archived already`;
}

/**
 * Archived transactions a server lacks. `serverState` is the server's
 * @@gtid_binlog_state: the last GTID of every (domain, server id) its binlog
 * holds. The server holds the archive's last GTID d-s-n when its state has
 * d-s-m with m >= n (GTIDs of one domain are numbered one by one, so it holds
 * everything before too). Otherwise the archive went further than the server:
 * after a failover, transactions the old primary sent the archive but no
 * replica received. For each such domain: the archive's last GTID, the first
 * sequence number the server lacks (just after the old source's last GTID it
 * holds, or after the server's own end of the domain) and the server's last
 * GTID there (which may be numbered past the archive: its own, other history).
 */
export interface Divergence {
  archived: Gtid;
  /** Undefined when the server numbered past the archive without any transaction of its source. */
  firstMissing: bigint | undefined;
  serverLast: Gtid | undefined;
}

export function divergence(archived: GtidPosition, serverState: readonly Gtid[]): Divergence[] {
  const found: Divergence[] = [];
  for (const last of [...archived.values()].sort((a, b) => a.domain - b.domain)) {
    const inDomain = serverState.filter((g) => g.domain === last.domain);
    const sameSource = inDomain.find((g) => g.server === last.server);
    if (sameSource && sameSource.seq >= last.seq) continue;
    const serverLast = inDomain.reduce<Gtid | undefined>((max, g) => (max === undefined || g.seq > max.seq ? g : max), undefined);
    const held = sameSource ? sameSource.seq : serverLast === undefined ? 0n : serverLast.seq < last.seq ? serverLast.seq : undefined;
    found.push({ archived: last, firstMissing: held === undefined ? undefined : held + 1n, serverLast });
  }
  return found;
}

/** A sentence for what divergence() found; `server` names the server ("server 1001 at host:3306"). */
export function describeDivergence(found: readonly Divergence[], server: string): string {
  const parts = found.map((d) => {
    const range =
      d.firstMissing === d.archived.seq
        ? formatGtid(d.archived)
        : d.firstMissing === undefined
          ? `transactions of domain ${d.archived.domain} up to ${formatGtid(d.archived)}`
          : `sequence numbers ${d.firstMissing} to ${d.archived.seq} of domain ${d.archived.domain} (up to ${formatGtid(d.archived)})`;
    const there = d.serverLast ? `its binary log ends at ${formatGtid(d.serverLast)} in that domain` : `its binary log has nothing of domain ${d.archived.domain}`;
    return `${range} (${there})`;
  });
  return `the archive holds transactions that ${server}, the server to stream from now, does not have: ${parts.join("; ")}. A failover lost them after they were archived, so the archive and that server's history part there; nothing more is archived. A point-in-time restore up to the last transaction before them is sound. To archive the new history, create another MySQLBinlogArchive (a new folder) after a new full backup`;
}
