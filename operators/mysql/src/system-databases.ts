// The databases that belong to the server itself, on MySQL and MariaDB alike:
// never backed up, never copied into a replica, never counted as a user's data.
export const SYSTEM_DATABASES: ReadonlySet<string> = new Set(["mysql", "information_schema", "performance_schema", "sys"]);

/** `<column> NOT IN (?, …)` and its values: a WHERE condition keeping only users' databases. */
export function notSystemDatabase(column: string): { sql: string; values: string[] } {
  const values = [...SYSTEM_DATABASES];
  return { sql: `${column} NOT IN (${values.map(() => "?").join(", ")})`, values };
}
