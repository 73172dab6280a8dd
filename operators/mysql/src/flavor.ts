// Which server we are talking to. MariaDB and MySQL share the wire protocol
// and most of the account syntax, but differ in privilege names, how SHOW
// GRANTS prints some of them, and a few statements; everything that differs
// is decided on the `ServerInfo` detected here, once per connection pool.

export type Flavor = "MySQL" | "MariaDB";

export const FLAVORS: readonly [Flavor, Flavor] = ["MySQL", "MariaDB"];

export interface ServerInfo {
  flavor: Flavor;
  /** `major.minor.patch`, e.g. "10.11.19" or "8.0.36". */
  version: string;
  major: number;
  minor: number;
  patch: number;
  /** What `SELECT VERSION()` returned, e.g. "10.11.19-MariaDB-0+deb12u1". */
  versionString: string;
  /**
   * `@@lower_case_table_names`: 0 (the default on Linux) compares database and table names as written;
   * 1 and 2 compare them in lower case, and the grant tables hold them in lower case (GRANT on `Shop`
   * shows as `shop`). Undefined when not read (taken as 0).
   */
  lowerCaseTableNames?: number;
}

/**
 * The flavor from `SELECT VERSION(), @@version_comment` (the comment is
 * optional). MariaDB always names itself in VERSION(), e.g.
 * "10.11.6-MariaDB-log"; MySQL and its builds (Percona, cloud variants) do
 * not, and are treated as MySQL.
 */
export function flavorOf(versionString: string, versionComment = ""): Flavor {
  return /mariadb/i.test(versionString) || /mariadb/i.test(versionComment) ? "MariaDB" : "MySQL";
}

/**
 * Detects the flavor (see flavorOf) and version. Older MariaDB handshakes
 * prefix "5.5.5-" for replication compatibility; that prefix is skipped.
 */
export function detectServer(versionString: string, versionComment = ""): ServerInfo {
  const flavor = flavorOf(versionString, versionComment);
  const withoutPrefix = flavor === "MariaDB" ? versionString.replace(/^5\.5\.5-/, "") : versionString;
  const m = /(\d+)\.(\d+)\.(\d+)/.exec(withoutPrefix);
  if (!m) throw new Error(`cannot read a version number from the server's VERSION() ${JSON.stringify(versionString)}`);
  const [major, minor, patch] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return { flavor, version: `${major}.${minor}.${patch}`, major, minor, patch, versionString };
}

/** True when the server's version is at least `major.minor.patch`. */
export function atLeast(server: Pick<ServerInfo, "major" | "minor" | "patch">, major: number, minor = 0, patch = 0): boolean {
  if (server.major !== major) return server.major > major;
  if (server.minor !== minor) return server.minor > minor;
  return server.patch >= patch;
}
