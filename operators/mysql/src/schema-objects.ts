// Schema objects recreated from SHOW CREATE text, shared by the backup engine
// (which writes them into a dump) and the cluster's seeding (which runs them
// on a replica).
//
// Views are created twice: first a placeholder with the view's columns, right
// after the tables, then — once every database, table and routine exists —
// the real view in its place. A view may use a view, table or function of
// any database, in any order; MariaDB refuses a view whose objects do not
// exist yet (1146, 1305), and the placeholders let views refer to each other.

/** Quoted as the server named it (view and column names come from the server, not from a user). */
function quoted(name: string): string {
  if (name.includes("\0")) throw new Error("an identifier contains a NUL character");
  return `\`${name.replaceAll("`", "``")}\``;
}

/** `CREATE VIEW v AS SELECT 1 AS c1, 1 AS c2` — a stand-in with the view's columns (unqualified: run it in the view's database). */
export function viewPlaceholder(view: string, columns: readonly string[]): string {
  const list = columns.length > 0 ? columns.map((c) => `1 AS ${quoted(c)}`).join(", ") : "1 AS `1`";
  return `CREATE VIEW ${quoted(view)} AS SELECT ${list}`;
}
