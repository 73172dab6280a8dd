// The SQL work on one account. Names are quoted identifiers (account
// statements take no placeholders for them); the password and numbers are `?`
// values, escaped by the driver in a session whose sql_mode the connector
// pinned. The password is passed as a secret of every statement that carries
// it, so no error message can echo it.
import { quoteAccount, type InstanceConnection } from "@stateward/mysql";
import { parseShowGrants, type ParsedGrant } from "./show-grants.ts";
import type { DatabaseUserSpec } from "./api.ts";

export interface Account {
  user: string;
  host: string;
}

export type TlsRequirement = NonNullable<DatabaseUserSpec["tlsRequirement"]>;

/** An account as the server has it. */
export interface AccountState {
  /** mysql.user.ssl_type: "" (none), "ANY" (SSL), "X509", "SPECIFIED". */
  sslType: string;
  maxUserConnections: number;
  /** The authentication plugin, e.g. "mysql_native_password", "caching_sha2_password". */
  plugin: string;
  /** The stored password hash (never logged; compared with the Secret's password for mysql_native_password). */
  authenticationString: string;
}

/** mysql.user.ssl_type for each tlsRequirement. */
const SSL_TYPE: Record<TlsRequirement, string> = { None: "", SSL: "ANY", X509: "X509" };
const REQUIRE: Record<TlsRequirement, string> = { None: "NONE", SSL: "SSL", X509: "X509" };

export function sslTypeFor(tls: TlsRequirement): string {
  return SSL_TYPE[tls];
}

export function describeAccount(account: Account): string {
  return `'${account.user}'@'${account.host}'`;
}

/** The account's attributes, or undefined when it does not exist. Both flavors keep them in mysql.user (a view in MariaDB). */
export async function readAccount(conn: InstanceConnection, account: Account): Promise<AccountState | undefined> {
  const rows = await conn.query<{ sslType: string | null; maxUserConnections: number | string | null; plugin: string | null; auth: string | Buffer | null }>(
    "SELECT ssl_type AS sslType, max_user_connections AS maxUserConnections, plugin, authentication_string AS auth FROM mysql.user WHERE User = ? AND Host = ?",
    [account.user, account.host],
  );
  const row = rows[0];
  if (row === undefined) return undefined;
  return {
    sslType: String(row.sslType ?? "").toUpperCase(),
    maxUserConnections: Number(row.maxUserConnections ?? 0),
    plugin: String(row.plugin ?? ""),
    authenticationString: row.auth === null ? "" : row.auth.toString(),
  };
}

export async function createAccount(
  conn: InstanceConnection,
  account: Account,
  password: string,
  limits: { tls: TlsRequirement; maxUserConnections: number },
): Promise<void> {
  await conn.query(
    `CREATE USER ${quoteAccount(account.user, account.host)} IDENTIFIED BY ? REQUIRE ${REQUIRE[limits.tls]} WITH MAX_USER_CONNECTIONS ?`,
    [password, limits.maxUserConnections],
    [password],
  );
}

export async function setPassword(conn: InstanceConnection, account: Account, password: string): Promise<void> {
  await conn.query(`ALTER USER ${quoteAccount(account.user, account.host)} IDENTIFIED BY ?`, [password], [password]);
}

export async function setLimits(conn: InstanceConnection, account: Account, limits: { tls: TlsRequirement; maxUserConnections: number }): Promise<void> {
  await conn.query(`ALTER USER ${quoteAccount(account.user, account.host)} REQUIRE ${REQUIRE[limits.tls]} WITH MAX_USER_CONNECTIONS ?`, [
    limits.maxUserConnections,
  ]);
}

export async function dropAccount(conn: InstanceConnection, account: Account): Promise<void> {
  await conn.query(`DROP USER IF EXISTS ${quoteAccount(account.user, account.host)}`);
}

export async function showGrants(conn: InstanceConnection, account: Account): Promise<ParsedGrant[]> {
  const rows = await conn.query(`SHOW GRANTS FOR ${quoteAccount(account.user, account.host)}`, [], [], { columnsNamedByData: true });
  // One column, named "Grants for <user>@<host>".
  return parseShowGrants(rows.map((row) => String(Object.values(row)[0])));
}

/** Runs one statement built from a grant change (see grants.ts). */
export async function runStatement(conn: InstanceConnection, sql: string): Promise<void> {
  await conn.query(sql);
}
