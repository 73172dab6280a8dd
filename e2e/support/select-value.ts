// The one value a query answers (a variable, a count), on a connection of its own.
import type { Connection, RowDataPacket } from "mysql2/promise";

/** The first column of the first row of `sql` as text ("" when none), on a connection `open` makes and closes. */
export async function selectValue(open: () => Promise<Connection>, sql: string): Promise<string> {
  const c = await open();
  try {
    const [rows] = await c.query<RowDataPacket[]>(sql);
    return String(Object.values(rows[0] ?? {})[0] ?? "");
  } finally {
    await c.end();
  }
}
