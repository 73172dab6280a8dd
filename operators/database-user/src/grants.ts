// Converging an account's grants to exactly `spec.grants`: the wished-for and
// the actual grants (from SHOW GRANTS) as privilege sets per level, the
// difference as GRANT and REVOKE changes, and the statements for them.
// Grants come first and revokes after, so a privilege that only moves (from a
// table to its database, say) is never briefly missing, and a privilege in
// both sets is never touched. Pure: no I/O.
import { checkPrivilegeKeyword, databaseInGrant, grantLevelSql, type ServerInfo } from "@stateward/mysql";
import { ALL_PRIVILEGES, allPrivilegesAt, canonicalPrivilege, grantLevel } from "./privileges.ts";
import { type ParsedGrant } from "./show-grants.ts";
import type { Grant } from "./api.ts";

type Server = Pick<ServerInfo, "flavor" | "major" | "minor" | "patch" | "lowerCaseTableNames">;

/**
 * A database or table name as the server keeps it in its grant tables: in lower case when it compares
 * names in lower case (lower_case_table_names 1 or 2: GRANT on `Shop` shows as `shop`). Compared as
 * written, a grant on `Shop` never matched SHOW GRANTS: granted and revoked again at every pass.
 */
function asStored(name: string, server: Server): string {
  return name === "*" || !server.lowerCaseTableNames ? name : name.toLowerCase();
}

/** The privileges at one level, named as SHOW GRANTS names them. */
export interface LevelGrants {
  /** "*", or the database as written in SQL: a wildcard-escaped pattern at database level, the name at table level. */
  database: string;
  /** "*" or a table name. */
  table: string;
  /** Canonical privilege names; may hold ALL PRIVILEGES. */
  privileges: Set<string>;
  grantOption: boolean;
}

/** Grants by level; the key is `levelKey(database, table)`. */
export type GrantSet = Map<string, LevelGrants>;

export interface GrantChange {
  action: "GRANT" | "REVOKE";
  database: string;
  table: string;
  /** Privileges granted or revoked; for a GRANT, empty means only the grant option is added. */
  privileges: string[];
  /** GRANT: add WITH GRANT OPTION. REVOKE: also revoke the grant option. */
  grantOption: boolean;
}

export interface GrantDiff {
  /** Run first. */
  grants: GrantChange[];
  /** Run after every grant succeeded. */
  revokes: GrantChange[];
}

const levelKey = (database: string, table: string) => JSON.stringify([database, table]);

function level(set: GrantSet, database: string, table: string): LevelGrants {
  const key = levelKey(database, table);
  let entry = set.get(key);
  if (!entry) set.set(key, (entry = { database, table, privileges: new Set(), grantOption: false }));
  return entry;
}

/** `spec.grants` as the server will show them. */
export function desiredGrants(grants: readonly Grant[], server: Server): GrantSet {
  const set: GrantSet = new Map();
  for (const g of grants) {
    const table = asStored(g.table ?? "*", server);
    const entry = level(set, databaseInGrant(asStored(g.database, server), table), table);
    for (const p of g.privileges) entry.privileges.add(canonicalPrivilege(p, server));
    entry.grantOption ||= g.withGrantOption ?? false;
  }
  return set;
}

/**
 * What SHOW GRANTS reported, merged per level (MySQL 8 prints static and
 * dynamic privileges of `*.*` on separate lines). Column, routine, proxy and
 * role grants are not object grants and are left out: Stateward neither
 * grants nor revokes them.
 */
export function actualGrants(parsed: readonly ParsedGrant[], server: Server): GrantSet {
  const set: GrantSet = new Map();
  for (const g of parsed) {
    if (g.kind !== "object") continue;
    if (g.privileges.length === 0 && !g.grantOption) continue; // the USAGE line
    const entry = level(set, asStored(g.database, server), asStored(g.table, server));
    for (const p of g.privileges) entry.privileges.add(canonicalPrivilege(p, server));
    entry.grantOption ||= g.grantOption;
  }
  return set;
}

const byLevel = (a: LevelGrants, b: LevelGrants) => {
  const rank = (l: LevelGrants) => ["global", "database", "table"].indexOf(grantLevel(l.database, l.table));
  return rank(a) - rank(b) || (a.database < b.database ? -1 : a.database > b.database ? 1 : 0) || (a.table < b.table ? -1 : a.table > b.table ? 1 : 0);
};

/**
 * The changes that turn `actual` into `desired`. ALL PRIVILEGES on either side
 * is expanded to the privileges it stands for at that level, so that going
 * from ALL to "all but DROP" revokes DROP alone instead of everything.
 */
export function diffGrants(desired: GrantSet, actual: GrantSet, server: Server): GrantDiff {
  const grants: GrantChange[] = [];
  const revokes: GrantChange[] = [];
  const levels = new Map<string, LevelGrants>();
  for (const [key, l] of [...actual, ...desired]) levels.set(key, l);
  for (const l of [...levels.values()].sort(byLevel)) {
    const key = levelKey(l.database, l.table);
    const want = desired.get(key);
    const have = actual.get(key);
    const wanted = want?.privileges ?? new Set<string>();
    const held = have?.privileges ?? new Set<string>();
    const all = allPrivilegesAt(grantLevel(l.database, l.table), server);
    const heldExpanded = held.has(ALL_PRIVILEGES) ? new Set([...all, ...held].filter((p) => p !== ALL_PRIVILEGES)) : held;

    let toGrant: string[];
    let toRevoke: string[];
    if (wanted.has(ALL_PRIVILEGES)) {
      // Satisfied when ALL is held, or everything ALL stands for is (MySQL 8 lists global ALL by name).
      toGrant = held.has(ALL_PRIVILEGES) || all.every((p) => heldExpanded.has(p)) ? [] : [ALL_PRIVILEGES];
      toRevoke = [];
    } else {
      toGrant = [...wanted].filter((p) => !heldExpanded.has(p));
      const extra = [...heldExpanded].filter((p) => !wanted.has(p));
      // Nothing wanted here but ALL held: revoke ALL, which also covers privileges this catalogue does not know.
      toRevoke = wanted.size === 0 && held.has(ALL_PRIVILEGES) ? [ALL_PRIVILEGES] : extra;
    }
    const wantOption = want?.grantOption ?? false;
    const haveOption = have?.grantOption ?? false;
    if (toGrant.length > 0 || (wantOption && !haveOption)) {
      grants.push({ action: "GRANT", database: l.database, table: l.table, privileges: toGrant, grantOption: wantOption && !haveOption });
    }
    if (toRevoke.length > 0 || (!wantOption && haveOption)) {
      revokes.push({ action: "REVOKE", database: l.database, table: l.table, privileges: toRevoke, grantOption: !wantOption && haveOption });
    }
  }
  return { grants, revokes };
}

export function isEmptyDiff(diff: GrantDiff): boolean {
  return diff.grants.length === 0 && diff.revokes.length === 0;
}

/**
 * The statements for one change, `account` already quoted. Privilege names
 * are checked to be plain keywords: those from the server (an unknown one to
 * revoke) go into the SQL text too.
 */
export function changeStatements(change: GrantChange, account: string): string[] {
  const on = grantLevelSql(change.database, change.table);
  const privileges = change.privileges.map(checkPrivilegeKeyword);
  if (change.action === "GRANT") {
    const list = privileges.length > 0 ? privileges.join(", ") : "USAGE";
    return [`GRANT ${list} ON ${on} TO ${account}${change.grantOption ? " WITH GRANT OPTION" : ""}`];
  }
  // "ALL PRIVILEGES, GRANT OPTION" is only valid without ON; at a level they are two statements.
  if (privileges.includes(ALL_PRIVILEGES)) {
    const out = [`REVOKE ALL PRIVILEGES ON ${on} FROM ${account}`];
    if (change.grantOption) out.push(`REVOKE GRANT OPTION ON ${on} FROM ${account}`);
    return out;
  }
  const list = [...privileges, ...(change.grantOption ? ["GRANT OPTION"] : [])];
  return [`REVOKE ${list.join(", ")} ON ${on} FROM ${account}`];
}

/** A change in words, for events and logs: "granted SELECT, INSERT on `shop`.*". */
export function describeChange(change: GrantChange): string {
  const on = grantLevelSql(change.database, change.table);
  const what = [...change.privileges, ...(change.grantOption ? ["GRANT OPTION"] : [])].join(", ");
  return `${change.action === "GRANT" ? "granted" : "revoked"} ${what} on ${on}`;
}
