// Applies a stream of SQL (one backup object, or a whole dump file) on one
// connection, statement by statement, as the `mariadb` client would.
import type { MySQLSession } from "../engine/connection.ts";
import { mysqlFailure, withoutStatement } from "../engine/connection.ts";
import { abortedError } from "../engine/errors.ts";
import { BackupError, messageOf } from "../errors.ts";
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
 * Reads `input` to the end and sends every statement in order. A failing
 * statement stops it: the error names the source and the line, and carries
 * the server's message (never the statement's values).
 */
export async function applySql(input: AsyncIterable<unknown>, options: ApplyOptions): Promise<ApplyResult> {
  const splitter = new StatementSplitter();
  const result: ApplyResult = { statements: 0, bytes: 0 };
  const run = async (statements: Statement[]): Promise<void> => {
    for (const statement of statements) {
      if (options.signal?.aborted) throw abortedError("the restore", options.signal);
      if (options.accept && !options.accept(statement)) continue;
      const sql = options.rewrite ? options.rewrite(statement) : statement.sql;
      if (sql === null) continue;
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
    }
  };
  for await (const chunk of input) {
    const bytes = chunk as Buffer;
    result.bytes += bytes.length;
    await run(splitter.push(bytes));
  }
  await run(splitter.end());
  return result;
}
