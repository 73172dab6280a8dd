// MySQLConnector: one mysql2 connection pool per MySQLInstance, shared by
// every operator in the process (it is a singleton of the manager's
// container). A pool is keyed by the instance and fingerprinted by everything
// it was opened with — host, port, TLS settings, the admin credentials, the
// CA — so an edit of the instance or of its Secrets opens a new pool on the
// next use and retires the old one. The fingerprint lives in memory only.
import { createHash } from "node:crypto";
import mysql from "mysql2/promise";
import type { Pool, PoolConnection, QueryOptions, RowDataPacket } from "mysql2/promise";
import type { Logger } from "@stateward/core";
import { directAddresses, type ServerAddressResolver } from "./addresses.ts";
import { poolOptions, type ConnectionSettings, type PoolTuning } from "./connection-options.ts";
import { MySQLError, isDriverError, toMySQLError } from "./errors.ts";
import { detectServer, type ServerInfo } from "./flavor.ts";
import { instanceSecrets, type MySQLInstance } from "./instance-api.ts";
import { MissingSecretError, secretValue, type SecretReader } from "./secrets.ts";

export interface ConnectorOptions extends PoolTuning {
  /** A statement running longer than this fails. Defaults to 30 s: account statements take milliseconds. */
  queryTimeoutMs?: number;
  /** A replaced pool is closed this long after its replacement opened, so statements in flight can finish. Defaults to 10 s. */
  retireAfterMs?: number;
  /** Called after every statement (tests and benchmarks count them). */
  onStatement?: (o: StatementObservation) => void;
  /** Where an instance's host and port are reached. Defaults to as written. */
  addresses?: ServerAddressResolver;
}

/** One statement run through a pool. */
export interface StatementObservation {
  /** `<namespace>/<name>` of the MySQLInstance. */
  instance: string;
  /** The SQL text with its `?` placeholders (values are never included). */
  sql: string;
  /** The server's or driver's error code when it failed. */
  error?: string;
  seconds: number;
}

/** The server refused a value we sent, or a statement failed: see MySQLError. A Secret problem: see MissingSecretError. */
export type ConnectError = MySQLError | MissingSecretError;

/**
 * sql_mode flags that change how SQL text is read: ANSI_QUOTES makes `"` quote
 * identifiers, NO_BACKSLASH_ESCAPES makes `\` an ordinary character in string
 * literals — which would break the escaping of values — and the combination
 * modes that include them. Sessions of the pool run without them.
 */
const UNSAFE_SQL_MODES = new Set(["ANSI_QUOTES", "NO_BACKSLASH_ESCAPES", "ANSI", "DB2", "MAXDB", "MSSQL", "ORACLE", "POSTGRESQL"]);

/** A value bound to a `?` placeholder (sent as an escaped literal). */
export type SqlValue = string | number | boolean | null;

/** A pool for one instance: run statements as the admin account. */
export class InstanceConnection {
  /** `<namespace>/<name>` of the MySQLInstance. */
  readonly key: string;
  readonly username: string;
  /** Whether connections are encrypted. */
  readonly tls: boolean;
  private serverInfo: ServerInfo;
  private readonly pool: Pool;
  private readonly queryTimeoutMs: number;
  private readonly prepared = new WeakSet<object>();
  /** The admin password: never in an error message, should the server echo it. */
  private readonly redactions: readonly string[];

  private readonly observe: ((o: StatementObservation) => void) | undefined;

  constructor(init: {
    key: string;
    username: string;
    tls: boolean;
    server: ServerInfo;
    pool: Pool;
    queryTimeoutMs: number;
    redact: readonly string[];
    observe?: (o: StatementObservation) => void;
  }) {
    this.observe = init.observe;
    this.key = init.key;
    this.username = init.username;
    this.tls = init.tls;
    this.serverInfo = init.server;
    this.pool = init.pool;
    this.queryTimeoutMs = init.queryTimeoutMs;
    this.redactions = init.redact;
  }

  /** Flavor and version, as detected when the pool opened (or at the last `ping`). */
  get server(): ServerInfo {
    return this.serverInfo;
  }

  /**
   * Runs a statement and returns its rows (empty for statements without a
   * result set). `values` replace `?` placeholders as escaped literals;
   * `secrets` are values that must not appear in an error message. `columnsNamedByData`: the
   * result's column names change with the data (SHOW GRANTS FOR names its one column after the
   * account): mysql2 would compile, and keep in an LRU of up to 15,000, a row parser for every
   * such name (~0.4 ms of CPU each, against ~0.1 ms for its interpreted parser: docs/performance.md).
   * @throws MySQLError
   */
  async query<Row extends object = Record<string, unknown>>(
    sql: string,
    values: readonly SqlValue[] = [],
    secrets: readonly string[] = [],
    opts: { columnsNamedByData?: boolean } = {},
  ): Promise<Row[]> {
    let conn: PoolConnection | undefined;
    const started = performance.now();
    try {
      conn = await this.pool.getConnection();
      await this.prepare(conn);
      // disableEval is honoured per query (Query reads its own options) though mysql2's QueryOptions type omits it.
      const options: QueryOptions & { disableEval?: boolean } = { sql, timeout: this.queryTimeoutMs, disableEval: opts.columnsNamedByData === true };
      const [rows] = await conn.query(options, [...values]);
      this.observe?.({ instance: this.key, sql, seconds: (performance.now() - started) / 1000 });
      return Array.isArray(rows) ? (rows as Row[]) : [];
    } catch (err) {
      // Failing to get a connection is failing to log in: there "access denied" means wrong credentials.
      const e = toMySQLError(err, { secrets: [...secrets, ...this.redactions], connecting: conn === undefined });
      this.observe?.({ instance: this.key, sql, error: e.code ?? e.failure, seconds: (performance.now() - started) / 1000 });
      throw e;
    } finally {
      conn?.release();
    }
  }

  /**
   * A connection of the pool to itself, for work that needs one session
   * (a transaction, a consistent snapshot, a streamed result); released when
   * `fn` settles. Driver errors thrown inside become MySQLErrors (no SQL
   * text, no value listed in `secrets`); other errors pass through.
   */
  async withConnection<T>(fn: (conn: PoolConnection) => Promise<T>, secrets: readonly string[] = []): Promise<T> {
    let conn: PoolConnection;
    try {
      conn = await this.pool.getConnection();
      await this.prepare(conn);
    } catch (err) {
      throw toMySQLError(err, { secrets: [...secrets, ...this.redactions], connecting: true });
    }
    try {
      return await fn(conn);
    } catch (err) {
      throw isDriverError(err) ? toMySQLError(err, { secrets: [...secrets, ...this.redactions] }) : err;
    } finally {
      // `fn` may have changed the session: the next borrower checks its sql_mode again.
      this.prepared.delete(conn.connection);
      conn.release();
    }
  }

  /** Re-reads the server's version (a health check); returns it. */
  async ping(): Promise<ServerInfo> {
    const [row] = await this.query<ProbeRow>(PROBE_SQL);
    if (row === undefined) throw new MySQLError("ServerError", "SELECT VERSION() returned no row");
    this.serverInfo = serverOf(row);
    return this.serverInfo;
  }

  /** Once per physical connection: a session sql_mode in which our quoting means what it says. */
  private async prepare(conn: PoolConnection): Promise<void> {
    const raw = conn.connection as object;
    if (this.prepared.has(raw)) return;
    const [rows] = await conn.query<RowDataPacket[]>("SELECT @@SESSION.sql_mode AS mode");
    const mode = String(rows[0]?.mode ?? "");
    const modes = mode.split(",").filter((m) => m !== "");
    const safe = modes.filter((m) => !UNSAFE_SQL_MODES.has(m.toUpperCase()));
    if (safe.length !== modes.length) await conn.query("SET SESSION sql_mode = ?", [safe.join(",")]);
    this.prepared.add(raw);
  }

  /** Closes every connection. */
  async end(): Promise<void> {
    await this.pool.end().catch(() => undefined);
  }
}

interface PoolEntry {
  fingerprint: string;
  ready: Promise<InstanceConnection>;
  /** The Secrets it was opened with (`<namespace>/<name>`): forgotten with it. */
  secrets: string[];
}

interface Retiring {
  ready: Promise<InstanceConnection>;
  timer: NodeJS.Timeout | undefined;
}

export class MySQLConnector {
  private readonly secrets: SecretReader;
  private readonly log: Logger;
  private readonly opts: ConnectorOptions;
  private readonly pools = new Map<string, PoolEntry>();
  private readonly retiring = new Set<Retiring>();
  private closed = false;

  constructor(secrets: SecretReader, logger: Logger, opts: ConnectorOptions = {}) {
    this.secrets = secrets;
    this.log = logger.child({ component: "mysql-connector" });
    this.opts = opts;
  }

  /**
   * The pool of `instance`, opened (and probed: log in, read the version) on
   * first use or when the instance or its Secrets changed.
   * @throws MissingSecretError when the admin or CA Secret or a key is missing
   * @throws MySQLError when the server cannot be reached or refuses the login
   */
  async connect(instance: MySQLInstance): Promise<InstanceConnection> {
    if (this.closed) throw new Error("the MySQL connector is closed (the manager is shutting down)");
    const key = `${instance.metadata.namespace ?? ""}/${instance.metadata.name ?? ""}`;
    const settings = await this.resolveSettings(instance);
    const fingerprint = createHash("sha256").update(JSON.stringify([instance.metadata.uid, settings])).digest("hex");
    const existing = this.pools.get(key);
    if (existing?.fingerprint === fingerprint) return existing.ready;
    if (existing) this.retire(existing, "the instance or its Secrets changed");
    const entry: PoolEntry = { fingerprint, ready: this.open(key, settings), secrets: instanceSecrets(instance) };
    this.pools.set(key, entry);
    // A failed open is not kept: the next connect tries again.
    entry.ready.catch(() => {
      if (this.pools.get(key) === entry) this.pools.delete(key);
    });
    return entry.ready;
  }

  /** Closes the pool of an instance that no longer exists. */
  forget(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const entry = this.pools.get(key);
    if (!entry) return;
    this.pools.delete(key);
    this.secrets.forgetRecurring(entry.secrets);
    this.retire(entry, "the instance was deleted");
  }

  /** Closes every pool (the manager is stopping). */
  async close(): Promise<void> {
    this.closed = true;
    const entries = [...this.pools.values()];
    this.pools.clear();
    const retiring = [...this.retiring];
    this.retiring.clear();
    for (const r of retiring) clearTimeout(r.timer);
    await Promise.all([...entries, ...retiring].map((e) => e.ready.then((c) => c.end(), () => undefined)));
  }

  /**
   * The instance's connection settings with its Secrets resolved, for an
   * operator that opens connections of its own (a long backup should not hold
   * a connection of the shared pool). They hold the admin password: keep them
   * out of logs, events, status and errors.
   *
   * With TLS mode `preferred`, `tlsOffered` says whether to attempt TLS (see
   * ownConnectionSsl): the instance's pool found out when it opened — it is
   * opened now if need be — so no connection is opened just to ask. A pool
   * that cannot open leaves it unknown (TLS is attempted): the caller's own
   * connection then fails and reports why in its own words.
   * @throws MissingSecretError when the admin or CA Secret or a key is missing
   */
  async connectionSettings(instance: MySQLInstance): Promise<ConnectionSettings> {
    const settings = await this.resolveSettings(instance);
    if (settings.tlsMode !== "preferred") return settings;
    const tlsOffered = await this.connect(instance).then(
      (conn) => conn.tls,
      () => undefined,
    );
    return tlsOffered === undefined ? settings : { ...settings, tlsOffered };
  }

  /** The instance's spec with its Secrets and address resolved. */
  private async resolveSettings(instance: MySQLInstance): Promise<ConnectionSettings> {
    const namespace = instance.metadata.namespace ?? "";
    const { spec } = instance;
    const admin = spec.adminSecretRef;
    const secret = await this.secrets.readRecurring(namespace, admin.name);
    if (secret === undefined) throw new MissingSecretError("SecretNotFound", `admin Secret ${admin.name} not found in namespace ${namespace}`);
    const user = secretValue(secret, admin.usernameKey ?? "username");
    if (user === "") throw new MissingSecretError("SecretKeyMissing", `admin Secret ${admin.name} has an empty ${admin.usernameKey ?? "username"}`);
    const password = secretValue(secret, admin.passwordKey ?? "password");
    const tlsMode = spec.tls?.mode ?? "preferred";
    let ca: string | undefined;
    const caRef = spec.tls?.caSecretRef;
    if (caRef !== undefined && (tlsMode === "verify-ca" || tlsMode === "verify-identity")) {
      const caSecret = await this.secrets.readRecurring(namespace, caRef.name);
      if (caSecret === undefined) throw new MissingSecretError("SecretNotFound", `CA Secret ${caRef.name} not found in namespace ${namespace}`);
      ca = secretValue(caSecret, caRef.key ?? "ca.crt");
    }
    const { host, port } = await (this.opts.addresses ?? directAddresses).resolve({ host: spec.host, port: spec.port ?? 3306 });
    return { host, port, user, password, tlsMode, ca };
  }

  private async open(key: string, settings: ConnectionSettings): Promise<InstanceConnection> {
    const attempt = async (attemptTls: boolean): Promise<InstanceConnection> => {
      const options = poolOptions(settings, this.opts, attemptTls);
      const pool = mysql.createPool(options);
      try {
        const server = await probe(pool, this.queryTimeoutMs);
        return new InstanceConnection({
          key,
          username: settings.user,
          tls: options.ssl !== undefined,
          server,
          pool,
          queryTimeoutMs: this.queryTimeoutMs,
          redact: [settings.password],
          observe: this.opts.onStatement,
        });
      } catch (err) {
        await pool.end().catch(() => undefined);
        throw toMySQLError(err, { connecting: true, secrets: [settings.password] });
      }
    };
    let conn: InstanceConnection;
    try {
      conn = await attempt(true);
    } catch (err) {
      // `preferred` falls back to plain TCP against a server that offers no TLS, as MySQL's client does.
      if (settings.tlsMode !== "preferred" || !(err instanceof MySQLError) || err.code !== "HANDSHAKE_NO_SSL_SUPPORT") throw err;
      conn = await attempt(false);
    }
    this.log.info("connection pool opened", {
      instance: key,
      host: settings.host,
      port: settings.port,
      user: settings.user,
      tls: conn.tls,
      flavor: conn.server.flavor,
      version: conn.server.version,
    });
    return conn;
  }

  private get queryTimeoutMs(): number {
    return this.opts.queryTimeoutMs ?? 30_000;
  }

  /** Closes a replaced pool after a grace period, so statements in flight can finish. */
  private retire(entry: PoolEntry, why: string): void {
    const retiring: Retiring = { ready: entry.ready, timer: undefined };
    this.retiring.add(retiring);
    entry.ready.then(
      (conn) => {
        this.log.info("connection pool retired", { instance: conn.key, reason: why });
        retiring.timer = setTimeout(() => {
          this.retiring.delete(retiring);
          void conn.end();
        }, this.opts.retireAfterMs ?? 10_000);
        retiring.timer.unref();
      },
      () => this.retiring.delete(retiring),
    );
  }
}

/** What a pool asks a server when it opens, and at each health check. */
const PROBE_SQL = "SELECT VERSION() AS version, @@version_comment AS comment, @@lower_case_table_names AS lowerCaseTableNames";

interface ProbeRow {
  version: unknown;
  comment: unknown;
  lowerCaseTableNames: unknown;
}

function serverOf(row: ProbeRow): ServerInfo {
  return {
    ...detectServer(String(row.version), typeof row.comment === "string" ? row.comment : ""),
    lowerCaseTableNames: Number(row.lowerCaseTableNames ?? 0),
  };
}

async function probe(pool: Pool, timeout: number): Promise<ServerInfo> {
  const [rows] = await pool.query<RowDataPacket[]>({ sql: PROBE_SQL, timeout });
  const row = rows[0] as ProbeRow | undefined;
  if (row === undefined) throw new MySQLError("ServerError", "SELECT VERSION() returned no row");
  return serverOf(row);
}
