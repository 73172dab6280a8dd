// The mysql-backup benchmark's database (PERF-NOTES.md's reference): two
// tables of (INT, VARCHAR(64), INT, DATETIME, DECIMAL(12,2), VARCHAR(255)),
// `rows` each, generated inside the server from MariaDB's sequence engine
// (seq_1_to_N) so that 2 × 4 M rows take seconds, not the minutes a client
// sending INSERTs would. Values are deterministic pseudo-random (CRC32 of the
// row number and a per-column salt): the same `rows` gives the same data
// every run. At 4 M rows a table mariadb-dump writes 1.21 GB of SQL, which
// gzip -6 turns into 281 MB (4.3×): close to the reference's 1.19 GB and
// 286 MB, so the compressor does about as much work per byte. wideShape is
// the same idea with fewer, wider rows, for a test that needs a gigabyte fast.
import mysql from "mysql2/promise";
import { quoteIdentifier } from "@stateward/mysql";

export const benchTables = ["orders", "shipments"] as const;

export interface ServerLogin {
  host: string;
  port: number;
  user: string;
  password: string;
}

export function connect(server: ServerLogin): Promise<mysql.Connection> {
  return mysql.createConnection({ host: server.host, port: server.port, user: server.user, password: server.password, charset: "utf8mb4" });
}

/** A table's definition and the SELECT that generates its rows from a sequence table. */
export interface TableShape {
  columns: string;
  select(source: string): string;
}

const columns = `(
  id INT NOT NULL PRIMARY KEY,
  customer VARCHAR(64) NOT NULL,
  quantity INT NOT NULL,
  ordered_at DATETIME NOT NULL,
  amount DECIMAL(12,2) NOT NULL,
  note VARCHAR(255) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`;

/**
 * One row per `seq`. `@salt` is the table's, so the two tables differ. About
 * 151 bytes of mariadb-dump SQL a row; the text columns repeat words (as real
 * data does), so the data compresses like the reference's.
 */
const rowSelect = (source: string) => `SELECT seq,
  CONCAT(ELT(1 + CRC32(CONCAT(@salt, 'f', seq)) % 8, 'alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi'), '.',
         ELT(1 + CRC32(CONCAT(@salt, 'l', seq)) % 8, 'smith', 'jones', 'garcia', 'müller', 'rossi', 'dubois', 'novak', 'tanaka'), '-',
         CONV(CRC32(CONCAT(@salt, 'n', seq)), 10, 36)),
  CRC32(CONCAT(@salt, 'q', seq)) % 100000,
  TIMESTAMP('2020-01-01') + INTERVAL (CRC32(CONCAT(@salt, 't', seq)) % 157680000) SECOND,
  (CRC32(CONCAT(@salt, 'a', seq)) % 100000000) / 100,
  CONCAT('order #', seq, ' shipped to ',
         ELT(1 + CRC32(CONCAT(@salt, 'c', seq)) % 8, 'Amsterdam', 'Lisbon', 'Kraków', 'Osaka', 'Montréal', 'Nairobi', 'Santiago', 'Auckland'),
         ' via ', ELT(1 + CRC32(CONCAT(@salt, 'v', seq)) % 4, 'DHL', 'UPS', 'FedEx', 'PostNL'),
         ' ref #SW-', 100000000 + seq, ', status: ',
         ELT(1 + CRC32(CONCAT(@salt, 's', seq)) % 5, 'pending', 'packed', 'shipped', 'delivered', 'returned'))
FROM ${source}`;

/** PERF-NOTES.md's reference rows: about 151 bytes of SQL each, 4.3× smaller once gzipped. */
export const benchShape: TableShape = { columns, select: rowSelect };

/**
 * Wider rows (about 590 bytes of SQL, 5.7× smaller gzipped: words, an MD5, a
 * SHA-256): a given size of SQL in a quarter of the rows, so a test can have
 * a gigabyte in about 30 s where the bench's shape takes minutes (the server
 * spends its time per row, not per byte).
 */
export const wideShape: TableShape = {
  columns: `(
  id INT NOT NULL PRIMARY KEY,
  customer VARCHAR(64) NOT NULL,
  amount DECIMAL(12,2) NOT NULL,
  detail TEXT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  select: (source) => `SELECT seq,
  CONCAT(ELT(1 + CRC32(CONCAT(@salt, 'f', seq)) % 8, 'alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi'), '-', CONV(CRC32(CONCAT(@salt, 'n', seq)), 10, 36)),
  (CRC32(CONCAT(@salt, 'a', seq)) % 100000000) / 100,
  CONCAT_WS(' ',
    'order', seq, 'shipped to', ELT(1 + CRC32(CONCAT(@salt, 'c', seq)) % 8, 'Amsterdam', 'Lisbon', 'Kraków', 'Osaka', 'Montréal', 'Nairobi', 'Santiago', 'Auckland'),
    'via', ELT(1 + CRC32(CONCAT(@salt, 'v', seq)) % 4, 'DHL', 'UPS', 'FedEx', 'PostNL'), 'tracking', MD5(CONCAT(@salt, 'k', seq)),
    'status', ELT(1 + CRC32(CONCAT(@salt, 's', seq)) % 5, 'pending', 'packed', 'shipped', 'delivered', 'returned'),
    'items', REPEAT(CONCAT('sku-', CONV(CRC32(CONCAT(@salt, 'i', seq)), 10, 36), ' x', 1 + seq % 7, '; '), 12),
    'note', SHA2(CONCAT(@salt, 'h', seq), 256), 'customer comment:',
    REPEAT(ELT(1 + CRC32(CONCAT(@salt, 'w', seq)) % 6, 'please leave at the door ', 'call before delivery ', 'fragile, handle with care ',
                'gift wrap requested ', 'deliver after 6pm ', 'no signature needed '), 8))
FROM ${source}`,
};

/**
 * Creates `database` with both tables of `rows` rows, one table per
 * connection at once (a core each). Returns how long it took.
 */
export async function createBenchDatabase(server: ServerLogin, database: string, rows: number, shape: TableShape = benchShape): Promise<number> {
  if (!Number.isSafeInteger(rows) || rows < 1) throw new Error(`rows must be a positive integer, not ${rows}`);
  const db = quoteIdentifier(database, "database");
  const t0 = performance.now();
  const admin = await connect(server);
  try {
    await admin.query(`CREATE DATABASE ${db}`);
    for (const t of benchTables) await admin.query(`CREATE TABLE ${db}.${quoteIdentifier(t)} ${shape.columns}`);
  } finally {
    await admin.end();
  }
  await Promise.all(
    benchTables.map(async (t, i) => {
      const conn = await connect(server);
      try {
        await conn.query("SET @salt = ?", [`t${i}`]);
        // `rows` is a checked integer: the sequence engine's table name is not a value that can be a parameter.
        await conn.query(`INSERT INTO ${db}.${quoteIdentifier(t)} ${shape.select(`${db}.seq_1_to_${rows}`)}`);
      } finally {
        await conn.end();
      }
    }),
  );
  return performance.now() - t0;
}

/** CHECKSUM TABLE of every bench table: equal checksums mean equal rows. */
export async function tableChecksums(conn: mysql.Connection, database: string): Promise<Record<string, string>> {
  const db = quoteIdentifier(database, "database");
  const [rows] = await conn.query(`CHECKSUM TABLE ${benchTables.map((t) => `${db}.${quoteIdentifier(t)}`).join(", ")} EXTENDED`);
  const out: Record<string, string> = {};
  for (const r of rows as { Table: string; Checksum: string | number | null }[]) out[r.Table] = String(r.Checksum);
  return out;
}

/** InnoDB data + index bytes of the database, as information_schema estimates them. */
export async function databaseBytes(conn: mysql.Connection, database: string): Promise<number> {
  const db = quoteIdentifier(database, "database");
  // InnoDB updates these statistics in the background; right after a bulk insert they are still near zero.
  await conn.query(`ANALYZE TABLE ${benchTables.map((t) => `${db}.${quoteIdentifier(t)}`).join(", ")}`);
  const [rows] = await conn.query("SELECT COALESCE(SUM(DATA_LENGTH + INDEX_LENGTH), 0) AS bytes FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", [database]);
  return Number((rows as { bytes: number | string }[])[0]?.bytes ?? 0);
}

export async function dropDatabase(conn: mysql.Connection, database: string): Promise<void> {
  await conn.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(database, "database")}`);
}

/** The tables whose CHECKSUM TABLE differs from `expected` (tableChecksums), each saying how. */
export function differences(expected: Record<string, string>, got: Record<string, string>): string[] {
  return Object.keys(expected)
    .filter((t) => got[t] !== expected[t])
    .map((t) => `${t}: ${got[t] ?? "missing"} instead of ${expected[t] ?? "?"}`);
}
