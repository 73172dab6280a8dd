// An application writing through a primary endpoint as fast as it can, one
// row per statement, reconnecting to wherever the endpoint points after a
// failure — what a rollout or a failover must not lose a write of. An id
// whose INSERT was not acknowledged is never reused: the row may have been
// committed with only the answer lost.
import { setTimeout as sleep } from "node:timers/promises";
import mysql from "mysql2/promise";

export interface AcknowledgedWriterOptions {
  /** Where the primary endpoint is reached now; asked again after every failure. */
  endpoint: () => Promise<{ host: string; port: number }>;
  /** An account without SUPER (or READ ONLY ADMIN): one that read-only stops. */
  user: string;
  password: string;
  /** A table with an integer primary key `id`; one row per write. */
  table: string;
  /** The pause after a failed write before connecting again. */
  retryAfterMs: number;
  /**
   * Also ask, after each acknowledged write, for the GTID it was given (MariaDB `@@last_gtid`,
   * on the same connection): what a test compares with the positions a failover reports.
   */
  recordGtids?: boolean;
}

export class AcknowledgedWriter {
  /** Ids whose INSERT the server acknowledged, in order. */
  readonly acknowledged: number[] = [];
  /** When each of `acknowledged` was acknowledged (ms since the epoch), in the same order: gaps are downtime. */
  readonly acknowledgedAt: number[] = [];
  /** When each refused or failed write happened (ms since the epoch). */
  readonly failures: number[] = [];
  /** With recordGtids: the GTID of each acknowledged write (missing when the question itself failed). */
  readonly gtids = new Map<number, string>();
  private readonly options: AcknowledgedWriterOptions;
  private stopped = false;
  private done: Promise<void> | undefined;

  constructor(options: AcknowledgedWriterOptions) {
    this.options = options;
  }

  start(): this {
    const { endpoint, user, password, table, retryAfterMs, recordGtids = false } = this.options;
    this.done = (async () => {
      let conn: mysql.Connection | undefined;
      let next = 1;
      while (!this.stopped) {
        const id = next++;
        try {
          if (!conn) conn = await mysql.createConnection({ ...(await endpoint()), user, password, connectTimeout: 1_000 });
          await conn.query(`INSERT INTO ${table} (id) VALUES (?)`, [id]);
          this.acknowledged.push(id);
          this.acknowledgedAt.push(Date.now());
          if (recordGtids) {
            const [rows] = await conn.query("SELECT @@last_gtid AS gtid");
            const gtid = (rows as { gtid?: string }[])[0]?.gtid;
            if (gtid) this.gtids.set(id, gtid);
          }
        } catch {
          this.failures.push(Date.now());
          await conn?.end().catch(() => undefined);
          conn = undefined;
          await sleep(retryAfterMs);
        }
        await sleep(10);
      }
      await conn?.end().catch(() => undefined);
    })();
    return this;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }
}
