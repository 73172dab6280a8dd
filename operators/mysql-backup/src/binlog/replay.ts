// Point-in-time recovery's second half: replaying archived binlog files on a
// server that holds a backup, from the backup's GTID position to a recovery
// point. planReplay chooses the files from the archive's index (pure);
// replayBinlog applies their transactions through the server's own machinery
// (replay-events.ts says how, and why the source's GTIDs are not kept).
//
// Recovery points:
// - `{ gtid }`: every transaction up to and including that one (exact).
// - `{ time }`: every transaction whose commit (the header time of its last
//   event: its Xid, COMMIT, or the DDL statement itself) is at or before
//   `time`, stopping before the first one after it. Binlog times are whole
//   seconds: a transaction committed in the same second as `time` (even a
//   fraction later) is replayed; `time`'s milliseconds are ignored.
//
// Deviations from the brief's interface, on purpose:
// - `session` must be opened with `{ charset: "binary" }` (as the restores
//   do): statements are sent as their logged bytes, in whatever character set
//   they were written; replayBinlog refuses another session (InvalidOptions).
//   It sets autocommit=1 and leaves the session's variables as the last event
//   set them (TIMESTAMP is reset to DEFAULT): use a session of its own.
// - A recovery GTID at or before `after` is not an error when it is `after`
//   itself (nothing to replay); before it is InvalidOptions ("the backup is
//   past the recovery point").
// - The result's `lastGtid` is the last archived transaction the replay went
//   through: applied, or left out by `databases`; `transactions` counts the
//   applied ones only.
import { messageOf, type Logger } from "@stateward/core";
import { mysqlFailure, withoutStatement, type MySQLSession } from "../engine/connection.ts";
import { abortedError } from "../engine/errors.ts";
import { BackupError } from "../errors.ts";
import { type ArchiveIndex, type ArchivedFile } from "./archive-index.ts";
import { isoSeconds } from "./archive-writer.ts";
import { BinlogFormatError, readBinlogFile, type BinlogEvent } from "./events.ts";
import { readBinlogFileBatches } from "./file-reader.ts";
import { advance, continuity, describeDiscontinuity, formatGtid, formatPosition, parseGtid, parsePosition, type Gtid } from "./gtid.ts";
import { EventType } from "./events.ts";
import { ReplayUnsupportedError, SessionState, isUnattributed, parseQueryEvent, statementKind, transactionStatements, type CollationNames, type ReplayStatement } from "./replay-events.ts";
import { TransactionAssembler, type Transaction } from "./transactions.ts";

/** Where a point-in-time recovery stops. `gtid` is "domain-server-seq". */
export type RecoveryPoint = { time: Date } | { gtid: string };

export interface ReplayPlan {
  /** The archived files to replay, in index order (empty: nothing after `after` is needed). */
  files: ArchivedFile[];
  after: string;
  until: RecoveryPoint;
  /** Bytes of all the files. */
  bytes: number;
}

export interface ReplayOptions {
  /** The GTID state the target already holds (a backup's gtid_binlog_pos, e.g. "0-1-100,1-2-5"). */
  after: string;
  until: RecoveryPoint;
  /** Only these databases (see replay-events.ts for how events are attributed); all but the system ones when absent. */
  databases?: string[];
  /** Statements without a default database under `databases` (replay-events.ts): "replay" when `databases` is all of the backup. */
  withoutDatabase?: "replay" | "skip";
  signal?: AbortSignal;
  logger?: Logger;
  onProgress?(p: { transactions: number; lastGtid: string }): void;
}

export interface ReplayResult {
  /** Transactions applied. */
  transactions: number;
  /** The last archived transaction gone through (applied or filtered out); null when none. */
  lastGtid: string | null;
  /** Its commit time (ISO 8601, whole seconds). */
  lastEventTime: string | null;
}

function positionOf(text: string, what: string): Map<number, Gtid> {
  try {
    return parsePosition(text);
  } catch (err) {
    throw new BackupError("InvalidOptions", `${what}: ${messageOf(err)}`);
  }
}

function untilGtidOf(until: RecoveryPoint): Gtid | undefined {
  if (!("gtid" in until)) return undefined;
  try {
    return parseGtid(until.gtid);
  } catch (err) {
    throw new BackupError("InvalidOptions", `the recovery point: ${messageOf(err)}`);
  }
}

function untilSecondsOf(until: RecoveryPoint): number | undefined {
  if (!("time" in until)) return undefined;
  const ms = until.time.getTime();
  if (!Number.isFinite(ms)) throw new BackupError("InvalidOptions", "the recovery time is not a valid date");
  return Math.floor(ms / 1000);
}

const seqIn = (position: ReadonlyMap<number, Gtid>, domain: number): bigint => position.get(domain)?.seq ?? 0n;

/** Whether every transaction of `position` is in `held` too. */
function within(position: ReadonlyMap<number, Gtid>, held: ReadonlyMap<number, Gtid>): boolean {
  return [...position.values()].every((g) => g.seq <= seqIn(held, g.domain));
}

/**
 * Nothing to replay for a GTID point the target already holds; an error for
 * one it is past.
 * @returns true when `after` is the point itself.
 */
function reachedAlready(after: ReadonlyMap<number, Gtid>, until: Gtid | undefined, afterText: string): boolean {
  if (!until) return false;
  const held = seqIn(after, until.domain);
  if (held < until.seq) return false;
  if (held === until.seq) return true;
  throw new BackupError("InvalidOptions", `the backup is past the recovery point: it holds ${afterText}, after ${formatGtid(until)}`);
}

/** What the archive reaches, for messages. */
function reaches(index: ArchiveIndex): string {
  const last = index.files.at(-1);
  const what = last ? `the archive reaches ${index.position} (its last transaction, ${last.lastGtid}, committed at ${last.lastEventTime})` : `the archive holds no transaction yet (it starts at ${index.startPosition || "the beginning"})`;
  return index.currentAt ? `${what}, and held everything the server had written at ${index.currentAt}` : what;
}

/**
 * Which archived files (in index order) take a server from `after` to
 * `until`. Pure.
 * @throws BackupError ArchiveGap when the archive starts after `after` or its files do not chain;
 *   PointNotArchived when `until` is past the archive's last transaction; InvalidOptions for a point before `after`.
 */
export function planReplay(index: ArchiveIndex, after: string, until: RecoveryPoint): ReplayPlan {
  const afterPosition = positionOf(after, "the backup's GTID position");
  const untilGtid = untilGtidOf(until);
  const untilSeconds = untilSecondsOf(until);
  const plan = (files: ArchivedFile[]): ReplayPlan => ({ files, after, until, bytes: files.reduce((n, f) => n + f.size, 0) });

  const start = positionOf(index.startPosition, "the archive's start position");
  if (!within(start, afterPosition)) {
    throw new BackupError(
      "ArchiveGap",
      `the binlog archive starts at ${index.startPosition}, after the backup's position ${after || "(empty)"}: the transactions between them are in neither, so no point after the backup can be recovered from this archive`,
    );
  }
  let chained = formatPosition(start);
  for (const f of index.files) {
    const fileStart = formatPosition(positionOf(f.startPosition, `${f.key}'s start position`));
    if (fileStart !== chained) throw new BackupError("ArchiveGap", `the binlog archive has a gap: ${f.key} starts at ${f.startPosition}, but the file before it ends at ${chained || "(empty)"}`);
    chained = formatPosition(positionOf(f.endPosition, `${f.key}'s end position`));
  }
  if (reachedAlready(afterPosition, untilGtid, after)) return plan([]);

  // Files wholly within the backup are not needed.
  const first = index.files.findIndex((f) => !within(parsePosition(f.endPosition), afterPosition));
  const candidates = first < 0 ? [] : index.files.slice(first);

  if (untilGtid) {
    const archived = seqIn(parsePosition(index.position), untilGtid.domain);
    if (archived < untilGtid.seq) throw new BackupError("PointNotArchived", `transaction ${formatGtid(untilGtid)} is not archived (yet): ${reaches(index)}`);
    const last = candidates.findIndex((f) => seqIn(parsePosition(f.endPosition), untilGtid.domain) >= untilGtid.seq);
    return plan(candidates.slice(0, last + 1));
  }
  const seconds = untilSeconds as number;
  const lastFile = index.files.at(-1);
  // The point's whole second (every transaction logged in it) ended when the archive was current: nothing of it is missing.
  const current = index.currentAt !== undefined && (seconds + 1) * 1000 <= Date.parse(index.currentAt);
  if (!current && (!lastFile || seconds > Date.parse(lastFile.lastEventTime) / 1000)) {
    throw new BackupError("PointNotArchived", `${isoSeconds(seconds)} is past what is archived: ${reaches(index)}`);
  }
  // A file whose first event is after the point holds no transaction committed before it (a commit comes after its start).
  const last = candidates.findIndex((f) => Date.parse(f.firstEventTime) / 1000 > seconds);
  return plan(last < 0 ? candidates : candidates.slice(0, last));
}

/** The mysql2 connection's character set number: 63 is binary (statements go as their bytes). */
function usesBinaryCharset(session: MySQLSession): boolean {
  return (session.raw as unknown as { config?: { charsetNumber?: number } }).config?.charsetNumber === 63;
}

/** A binlog file to replay: its name for messages, and its events in batches. */
interface BinlogSource {
  name: string;
  batches: AsyncIterable<BinlogEvent[]> | Iterable<BinlogEvent[]>;
}

async function* binlogSources(files: AsyncIterable<Buffer> | Iterable<string>): AsyncIterable<BinlogSource> {
  if (Symbol.asyncIterator in files) {
    let n = 0;
    for await (const bytes of files) {
      const name = `file ${++n}`;
      let events: BinlogEvent[];
      try {
        events = readBinlogFile(bytes);
      } catch (err) {
        throw new BackupError("InvalidBinlog", `${name} is not a whole binlog file: ${messageOf(err)}`);
      }
      yield { name, batches: [events] };
    }
    return;
  }
  // Files from disk are read a piece at a time (file-reader.ts): one file's events at once would grow the heap with the rotation size.
  for (const path of files) yield { name: path, batches: readBinlogFileBatches(path) };
}

/** The batches of `source`, its format errors as InvalidBinlog. */
async function* sourceBatches(source: BinlogSource): AsyncIterable<BinlogEvent[]> {
  const batches = Symbol.asyncIterator in source.batches ? source.batches[Symbol.asyncIterator]() : source.batches[Symbol.iterator]();
  try {
    for (;;) {
      let next: IteratorResult<BinlogEvent[]>;
      try {
        next = await batches.next();
      } catch (err) {
        if (err instanceof BinlogFormatError) throw new BackupError("InvalidBinlog", `${source.name} is not a whole binlog file: ${messageOf(err)}`);
        throw err;
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    // A replay that stops inside a file (its recovery point, a failure) closes the file.
    await batches.return?.();
  }
}

/** The transactions of binlog files, in order, each with the file it is in; a file is read a piece at a time. */
async function* transactionsOf(files: AsyncIterable<Buffer> | Iterable<string>, log?: Logger): AsyncIterable<{ tx: Transaction; name: string }> {
  for await (const source of binlogSources(files)) {
    const { name } = source;
    log?.debug("replaying an archived binlog file", { file: name });
    const assembler = new TransactionAssembler();
    for await (const events of sourceBatches(source)) {
      for (const event of events) {
        let item;
        try {
          item = assembler.push(event);
        } catch (err) {
          throw new BackupError("InvalidBinlog", `${name}: ${messageOf(err)}`);
        }
        if (item.kind === "transaction") yield { tx: item.transaction, name };
      }
    }
  }
}

/** A statement a database filter cannot attribute (replay-events.ts, isUnattributed): its transaction and kind. */
export interface UnattributedStatement {
  gtid: string;
  /** Its first two words ("DROP TABLE"). */
  kind: string;
  /** Its commit time (ISO 8601, whole seconds). */
  time: string;
}

/**
 * The first statement logged without a default database among the
 * transactions of `files` after `after` up to `until`, which a replay under a
 * database filter would have to leave out. Reads the files only (a restore
 * checks them before it changes the target).
 */
export async function findUnattributed(files: AsyncIterable<Buffer> | Iterable<string>, after: string, until: RecoveryPoint): Promise<UnattributedStatement | undefined> {
  const afterPosition = positionOf(after, "the backup's GTID position");
  const untilGtid = untilGtidOf(until);
  const untilSeconds = untilSecondsOf(until);
  for await (const { tx } of transactionsOf(files)) {
    if (tx.gtid.seq <= seqIn(afterPosition, tx.gtid.domain)) continue;
    if (untilSeconds !== undefined && tx.lastTimestamp > untilSeconds) return undefined;
    for (const event of tx.events) {
      if (event.header.type !== EventType.QUERY) continue;
      const query = parseQueryEvent(event, tx.format);
      if (isUnattributed(query)) return { gtid: formatGtid(tx.gtid), kind: statementKind(query.statement), time: isoSeconds(tx.lastTimestamp) };
    }
    if (untilGtid && tx.gtid.domain === untilGtid.domain && tx.gtid.seq >= untilGtid.seq) return undefined;
  }
  return undefined;
}

async function loadCollations(session: MySQLSession): Promise<CollationNames> {
  const rows = await session.query<{ ID: string | number; CHARACTER_SET_NAME: string; COLLATION_NAME: string }>(
    "SELECT ID, CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLLATIONS",
    [],
    "read the server's collations",
  );
  return new Map(rows.map((r) => [Number(r.ID), { charset: String(r.CHARACTER_SET_NAME), collation: String(r.COLLATION_NAME) }]));
}

/** The server's error number of a mysql2 error. */
const errnoOf = (err: unknown): number | undefined => (err as { errno?: number } | undefined)?.errno;

/**
 * Applies the transactions of `files` after `after` up to `until` to
 * `session` (opened with the binary character set). A failing transaction is
 * rolled back and the replay stops (ReplayFailed naming it and the last one
 * applied); a missing one is ArchiveGap; a GTID point the files do not reach
 * is PointNotArchived.
 */
export async function replayBinlog(session: MySQLSession, files: AsyncIterable<Buffer> | Iterable<string>, options: ReplayOptions): Promise<ReplayResult> {
  if (!usesBinaryCharset(session)) throw new BackupError("InvalidOptions", "a binlog replay needs a session opened with the binary character set (MySQLSession.open(…, { charset: \"binary\" }))");
  const afterPosition = positionOf(options.after, "the backup's GTID position");
  const untilGtid = untilGtidOf(options.until);
  const untilSeconds = untilSecondsOf(options.until);
  const result: ReplayResult = { transactions: 0, lastGtid: null, lastEventTime: null };
  if (reachedAlready(afterPosition, untilGtid, options.after)) return result;
  const databases = options.databases ? new Set(options.databases) : undefined;
  const log = options.logger;
  const collations = await loadCollations(session);
  // Transactions are BEGIN … COMMIT, or one autocommitted statement (replay-events.ts): a server whose
  // sessions start with autocommit off would leave those open.
  await session.query("SET autocommit = 1", [], "prepare the session for the replay");
  const state = new SessionState();
  let position: ReadonlyMap<number, Gtid> = afterPosition;
  let lastApplied: string | null = null;
  let reached = false;
  log?.info("replaying archived binlog", { after: options.after, until: untilGtid ? formatGtid(untilGtid) : isoSeconds(untilSeconds as number) });

  const apply = async (tx: Transaction): Promise<boolean> => {
    const gtid = formatGtid(tx.gtid);
    const where = (): string => (lastApplied ? `the target holds the backup plus every archived transaction up to ${lastApplied}` : "nothing of the archive was applied to the target");
    let statements: ReplayStatement[];
    try {
      statements = transactionStatements(tx, state, { databases, collations, ...(options.withoutDatabase ? { withoutDatabase: options.withoutDatabase } : {}) });
    } catch (err) {
      if (err instanceof ReplayUnsupportedError || err instanceof BinlogFormatError) throw new BackupError("ReplayFailed", `cannot replay transaction ${gtid}: ${err.message}; ${where()}`);
      throw err;
    }
    if (statements.length === 0) return false;
    let open = false;
    for (const statement of statements) {
      try {
        await session.execute(statement.sql);
      } catch (err) {
        if (statement.expectedError !== undefined && errnoOf(err) === statement.expectedError) continue;
        if (open) await session.execute("ROLLBACK").catch(() => undefined);
        state.reset();
        const failure = mysqlFailure(err, `replay transaction ${gtid}`, session.endpoint);
        throw new BackupError("ReplayFailed", `transaction ${gtid} failed on ${session.endpoint}: ${messageOf(err)}; ${where()}`, {
          retryable: failure.retryable,
          cause: withoutStatement(err),
        });
      }
      if (statement.sql === "BEGIN") open = true;
      else if (statement.sql === "COMMIT" || statement.sql === "ROLLBACK") open = false;
    }
    return true;
  };

  try {
    for await (const { tx, name } of transactionsOf(files, log)) {
      // The backup has it already.
      if (tx.gtid.seq <= seqIn(afterPosition, tx.gtid.domain)) continue;
      const c = continuity(position, tx.gtid);
      if (!c.ok) throw new BackupError("ArchiveGap", `${name}: ${describeDiscontinuity(position, c)}; ${lastApplied ? `the target holds everything up to ${lastApplied}` : "nothing was applied"}`);
      if (untilSeconds !== undefined && tx.lastTimestamp > untilSeconds) {
        reached = true;
        break;
      }
      if (untilGtid && tx.gtid.domain === untilGtid.domain && tx.gtid.seq === untilGtid.seq && tx.gtid.server !== untilGtid.server) {
        throw new BackupError("PointNotArchived", `the archive's transaction ${untilGtid.domain}-…-${untilGtid.seq} is ${formatGtid(tx.gtid)} (server ${tx.gtid.server}), not ${formatGtid(untilGtid)}`);
      }
      if (options.signal?.aborted) throw abortedError("the binlog replay", options.signal);
      const gtid = formatGtid(tx.gtid);
      if (await apply(tx)) {
        result.transactions += 1;
        lastApplied = gtid;
      }
      position = advance(position, tx.gtid);
      result.lastGtid = gtid;
      result.lastEventTime = isoSeconds(tx.lastTimestamp);
      options.onProgress?.({ transactions: result.transactions, lastGtid: gtid });
      if (untilGtid && tx.gtid.domain === untilGtid.domain && tx.gtid.seq === untilGtid.seq) {
        reached = true;
        break;
      }
    }
  } finally {
    // Later statements on this session get the server's clock again.
    await session.execute("SET TIMESTAMP=DEFAULT").catch(() => undefined);
  }
  if (untilGtid && !reached) {
    throw new BackupError("PointNotArchived", `the binlog files given end at ${formatPosition(position) || "(empty)"}, before ${formatGtid(untilGtid)}; ${result.transactions} transactions were applied`);
  }
  log?.info("replayed archived binlog", { transactions: result.transactions, lastGtid: result.lastGtid, lastEventTime: result.lastEventTime });
  return result;
}
