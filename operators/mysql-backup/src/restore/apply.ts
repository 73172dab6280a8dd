// Applies a stream of SQL (one backup object, or a whole dump file) on one
// connection, statement by statement, as the `mariadb` client would.
import type { MySQLSession } from "../engine/connection.ts";
import { mysqlFailure, withoutStatement } from "../engine/connection.ts";
import { abortedError } from "../engine/errors.ts";
import { messageOf } from "@stateward/core";
import { BackupError } from "../errors.ts";
import { StatementSplitter, type Statement } from "./statements.ts";

export interface ApplyOptions {
  session: MySQLSession;
  /** Names the input in errors, e.g. "object 0001-shop/schema.sql.gz of s3://bucket/backups/b1/". */
  source: string;
  signal?: AbortSignal;
  /** Decides per statement whether to send it (a dump file's database filter); default: all. */
  accept?(statement: Statement): boolean;
  /** The SQL to send for a statement (a staged restore's USE of its staging database), or null to skip it; default: as read. */
  rewrite?(statement: Statement): string | null;
  /** Called after each statement with the bytes it had. */
  onApplied?(bytes: number): void;
}

export interface ApplyResult {
  statements: number;
  /** SQL bytes read (applied or skipped). */
  bytes: number;
}

/**
 * How much SQL is read, decompressed and split ahead of the statement the
 * server is running, so that the next one is ready the moment it returns. A
 * backup's statements are ~1 MiB: reading one takes this process ~15 ms of
 * its single thread (shared by every connection of a restore), and sending it
 * only then left each connection's server thread idle for that long after
 * every statement (docs/performance.md, finding 10).
 */
const READ_AHEAD_BYTES = 2 * 1024 * 1024;

/**
 * Reads `input` to the end and sends every statement in order, one at a time,
 * while the next ones are read. A failing statement stops it (nothing after it
 * is sent): the error names the source and the line, and carries the server's
 * message (never the statement's values).
 */
export async function applySql(input: AsyncIterable<unknown>, options: ApplyOptions): Promise<ApplyResult> {
  const splitter = new StatementSplitter();
  const result: ApplyResult = { statements: 0, bytes: 0 };
  const ready: Statement[] = [];
  let readyBytes = 0;
  let inputDone = false;
  // The side that waits — the sender for a statement, the reader for room — and its wake-up.
  // Never both at once: one waits on an empty queue, the other on a full one.
  let wake: (() => void) | undefined;
  const changed = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const nextChange = (): Promise<void> => new Promise((resolve) => (wake = resolve));

  const apply = async (statement: Statement): Promise<void> => {
    if (options.signal?.aborted) throw abortedError("the restore", options.signal);
    if (options.accept && !options.accept(statement)) return;
    const sql = options.rewrite ? options.rewrite(statement) : statement.sql;
    if (sql === null) return;
    try {
      await options.session.execute(sql);
    } catch (err) {
      const failure = mysqlFailure(err, `apply line ${statement.line} of ${options.source}`, options.session.endpoint);
      if (failure.reason === "DatabaseError" || failure.reason === "DatabaseNotFound") {
        throw new BackupError("StatementFailed", `the statement at line ${statement.line} of ${options.source} failed: ${messageOf(err)}`, {
          cause: withoutStatement(err),
        });
      }
      throw failure;
    }
    result.statements += 1;
    options.onApplied?.(statement.sql.length);
  };

  let stopSending = false;
  const send = async (): Promise<void> => {
    while (!stopSending) {
      const statement = ready.shift();
      if (statement === undefined) {
        if (inputDone) return;
        await nextChange();
        continue;
      }
      readyBytes -= statement.sql.length;
      changed();
      await apply(statement);
    }
  };
  const sending = send();
  let sendFailed = false;
  // The reader waiting for input, to wake when the sender stops on a failed statement (or an
  // abort). One per wait, dropped after it: Promise.race against a promise that lives for the
  // whole object would keep every chunk read until that promise settles.
  let readerWaiting: ((failed: "failed") => void) | undefined;
  sending.catch(() => {
    sendFailed = true;
    readerWaiting?.("failed");
    changed();
  });
  const enqueue = (statements: Statement[]): void => {
    for (const statement of statements) {
      ready.push(statement);
      readyBytes += statement.sql.length;
    }
    if (statements.length > 0) changed();
  };

  const chunks = input[Symbol.asyncIterator]();
  try {
    while (!sendFailed) {
      const next = chunks.next();
      // A failed statement ends the reading at once, even while a download is quiet.
      const got = await new Promise<IteratorResult<unknown> | "failed">((resolve, reject) => {
        readerWaiting = resolve;
        next.then(resolve, reject);
      });
      readerWaiting = undefined;
      if (got === "failed") {
        next.catch(() => undefined);
        break;
      }
      if (got.done) break;
      const bytes = got.value as Buffer;
      result.bytes += bytes.length;
      enqueue(splitter.push(bytes));
      while (readyBytes >= READ_AHEAD_BYTES && !sendFailed) await nextChange();
    }
    if (!sendFailed) enqueue(splitter.end());
  } catch (err) {
    // The input failed (download, decompression): the statement running finishes, no other is sent.
    stopSending = true;
    inputDone = true;
    changed();
    await sending.catch(() => undefined);
    throw err;
  }
  inputDone = true;
  changed();
  // Reading stopped early (a statement failed): end the input's iterator, which destroys a
  // stream. Not awaited: a generator waiting on a quiet download would keep it pending
  // until the caller destroys the stream (as applyObject does on every failure).
  if (sendFailed) void chunks.return?.().catch(() => undefined);
  await sending;
  return result;
}
