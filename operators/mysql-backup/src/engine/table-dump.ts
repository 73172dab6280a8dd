// Streams one table's rows into one or more data objects. Rows arrive from
// mysql2's result stream already formatted by the server (row-format.ts);
// they are joined into multi-row INSERTs of bounded size and written to the
// object upload, whose backpressure (compressor, S3) pauses the stream, which
// pauses the socket — so memory stays flat whatever the table's size.
import type { Readable } from "node:stream";
import type { MySQLSession } from "./connection.ts";
import { mysqlFailure } from "./connection.ts";
import { BackupError } from "../errors.ts";
import { dumpedColumns, insertPrefix, rowExpression } from "@stateward/mysql";
import type { TableSchema } from "./schema.ts";
import { objectHeader } from "./schema-objects.ts";
import { qualifiedName, quoteIdentifier } from "./sql.ts";
import type { ObjectUpload, StoredObject } from "../storage/object-upload.ts";

export interface DataPart extends StoredObject {
  part: number;
  rows: number;
}

export interface TableDumpOptions {
  database: string;
  table: TableSchema;
  /** Key (relative to the backup folder) of part `part` (1-based). */
  keyFor(part: number): string;
  /** Starts an object upload; the caller tracks it for cleanup. */
  openObject(key: string): ObjectUpload;
  /** Upper bound of one INSERT statement, in bytes (a single larger row makes a statement of its own). */
  statementBytes: number;
  /** Start a new object once this many uncompressed bytes are in the current one. */
  objectBytes: number;
  /** Called as rows are read: `rows` and `bytes` are increments. */
  onRows?(rows: number, bytes: number): void;
}

const rowSeparator = Buffer.from(",\n");
const statementEnd = Buffer.from(";\n");

/**
 * Dumps the table's rows as seen by `session`'s snapshot. Uses a savepoint so
 * the metadata lock taken by the SELECT is released when the table is done
 * (as mysqldump does), instead of blocking DDL on it until the backup ends.
 */
export async function dumpTable(session: MySQLSession, options: TableDumpOptions): Promise<DataPart[]> {
  const { database, table } = options;
  const qualified = qualifiedName(database, table.name);
  const columns = dumpedColumns(table.columns);
  const header = Buffer.from(`${objectHeader(`data of table ${qualified}`)}USE ${quoteIdentifier(database)};\n`);
  const prefix = Buffer.from(insertPrefix(table.name, columns));
  const sql = `SELECT ${rowExpression(columns)} FROM ${qualified}`;

  await session.query("SAVEPOINT stateward_table", [], `dump ${qualified}`);
  const parts = await streamRows(session, sql, qualified, header, prefix, options);
  await session.query("ROLLBACK TO SAVEPOINT stateward_table", [], `dump ${qualified}`);
  return parts;
}

function streamRows(
  session: MySQLSession,
  sql: string,
  qualified: string,
  header: Buffer,
  prefix: Buffer,
  options: TableDumpOptions,
): Promise<DataPart[]> {
  return new Promise<DataPart[]>((resolve, reject) => {
    const parts: DataPart[] = [];
    let settled = false;
    let current: { upload: ObjectUpload; part: number; rows: number } | undefined;
    let partNumber = 0;
    // Finishing the previous part overlaps with filling the next; one at a time.
    let finishing: Promise<void> = Promise.resolve();

    let chunks: Buffer[] = [];
    let statementSize = 0;
    let statementRows = 0;

    const query = session.raw.query({ sql, rowsAsArray: true, typeCast: false });
    // Rows buffered between the socket and this handler; the socket is
    // paused beyond that. Rows are small tuples, so 512 of them is little.
    const stream: Readable = query.stream({ highWaterMark: 512 });

    const unsubscribe = session.onFailure((err) => fail(err));
    const fail = (err: unknown): void => {
      if (settled) return;
      settled = true;
      unsubscribe();
      stream.pause();
      reject(err instanceof BackupError ? err : mysqlFailure(err, `dump ${qualified}`, session.endpoint));
    };

    const pauseUntil = (wait: Promise<void>): void => {
      stream.pause();
      wait.then(() => {
        if (!settled) stream.resume();
      }, fail);
    };

    const openPart = (): { upload: ObjectUpload; part: number; rows: number } => {
      partNumber += 1;
      const upload = options.openObject(options.keyFor(partNumber));
      upload.write(header);
      current = { upload, part: partNumber, rows: 0 };
      return current;
    };

    const closePart = (): void => {
      const done = current;
      if (!done) return;
      current = undefined;
      const previous = finishing;
      finishing = previous.then(async () => {
        const stored = await done.upload.finish();
        parts.push({ ...stored, part: done.part, rows: done.rows });
      });
      // Nothing awaits this finish while the next part fills: without a
      // handler of its own, an upload failing now (S3 gone mid-backup) would
      // be an unhandled rejection, which ends the whole manager process.
      // The failure ends this table's dump instead, and so the backup.
      finishing.catch(fail);
    };

    /** Writes the pending statement; returns what to wait for before more rows, if anything. */
    const writeStatement = (): Promise<void> | undefined => {
      if (statementRows === 0) return undefined;
      chunks.push(statementEnd);
      const statement = Buffer.concat(chunks, statementSize + statementEnd.length);
      const target = current ?? openPart();
      target.rows += statementRows;
      chunks = [];
      statementSize = 0;
      statementRows = 0;
      const ok = target.upload.write(statement);
      if (target.upload.bytesWritten >= options.objectBytes) {
        // Bound the pending finish to one: wait for the previous before starting another.
        const previous = finishing;
        closePart();
        return previous;
      }
      return ok ? undefined : target.upload.drained();
    };

    stream.on("data", (row: [Buffer | null]) => {
      if (settled) return;
      try {
        const tuple = row[0];
        if (tuple === null) {
          // CONCAT yields NULL only past max_allowed_packet.
          throw new BackupError(
            "RowTooLarge",
            `a row of ${qualified} is larger than the server's max_allowed_packet once written as SQL; raise max_allowed_packet on the server (a client restoring it needs as much)`,
          );
        }
        if (statementRows > 0 && statementSize + rowSeparator.length + tuple.length + statementEnd.length > options.statementBytes) {
          const wait = writeStatement();
          if (wait) pauseUntil(wait);
        }
        if (statementRows === 0) {
          chunks.push(prefix);
          statementSize = prefix.length;
        } else {
          chunks.push(rowSeparator);
          statementSize += rowSeparator.length;
        }
        chunks.push(tuple);
        statementSize += tuple.length;
        statementRows += 1;
        options.onRows?.(1, tuple.length + rowSeparator.length);
      } catch (err) {
        fail(err);
      }
    });
    stream.on("error", fail);
    stream.on("end", () => {
      if (settled) return;
      try {
        const wait = writeStatement();
        // An empty table still gets its (header-only) object, so the manifest lists every table.
        if (!current && parts.length === 0 && partNumber === 0) openPart();
        (wait ?? Promise.resolve())
          .then(() => {
            closePart();
            return finishing;
          })
          .then(() => {
            if (settled) return;
            settled = true;
            unsubscribe();
            parts.sort((a, b) => a.part - b.part);
            resolve(parts);
          }, fail);
      } catch (err) {
        fail(err);
      }
    });
  });
}
