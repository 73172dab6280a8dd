// How a MySQLInstance's settings become mysql2 pool options, TLS mode by
// TLS mode (named as MySQL's client names its --ssl-mode values).
import type { PoolOptions } from "mysql2/promise";
import type { TlsMode } from "./instance-api.ts";

/**
 * mysql2 settings every connection Stateward opens carries (the operators' pools and the backup's
 * own sessions alike).
 */
export const driverDefaults = {
  // No stack captured at every query for the rare error that would use it (mysql2's default:
  // ~40 µs of CPU per query, docs/performance.md); errors are classified by code and message.
  trace: false,
  // No prepared statements are used (every statement goes through query()), and mysql2 sizes
  // each connection's statement cache by this at connect: its default of 16,000 is four arrays
  // of 16,000 slots, ~0.5 MiB allocated per connection and held for its life (docs/performance.md,
  // finding 25). 0 would mean the default.
  maxPreparedStatements: 1,
} as const satisfies PoolOptions;

/** Everything needed to open connections to one instance, resolved from its spec and Secrets. */
export interface ConnectionSettings {
  host: string;
  port: number;
  user: string;
  password: string;
  tlsMode: TlsMode;
  /** PEM CA bundle for verify-ca / verify-identity; the system CAs when undefined. */
  ca: string | undefined;
  /**
   * For `preferred`: whether the server offered TLS when the instance's shared
   * pool opened (see MySQLConnector.connectionSettings); undefined when not known.
   */
  tlsOffered?: boolean;
}

export interface PoolTuning {
  /** Connections per instance. Defaults to 4: reconciles of one instance rarely overlap more. */
  connectionLimit?: number;
  /** Idle connections kept per instance. Defaults to 2. */
  maxIdle?: number;
  /** An idle connection is closed after this long. Defaults to 60 s (mysql2's default). */
  idleTimeoutMs?: number;
  /** Giving up on a TCP/TLS/login handshake. Defaults to 10 s (mysql2's default). */
  connectTimeoutMs?: number;
}

/**
 * The TLS options for `mode`; `attemptTls` is false only for the plain-text
 * retry of `preferred` against a server that offers no TLS.
 */
export function sslOptions(mode: TlsMode, ca: string | undefined, attemptTls = true): PoolOptions["ssl"] {
  switch (mode) {
    case "disabled":
      return undefined;
    case "preferred":
      return attemptTls ? { rejectUnauthorized: false } : undefined;
    case "required":
      // Encrypted but unverified, as MySQL's REQUIRED.
      return { rejectUnauthorized: false };
    case "verify-ca":
      return { ...(ca !== undefined ? { ca } : {}), rejectUnauthorized: true, verifyIdentity: false };
    case "verify-identity":
      return { ...(ca !== undefined ? { ca } : {}), rejectUnauthorized: true, verifyIdentity: true };
  }
}

/** The TLS options for a connection of your own: `preferred` attempts TLS unless the server is known to offer none. */
export function ownConnectionSsl(settings: ConnectionSettings): PoolOptions["ssl"] {
  return sslOptions(settings.tlsMode, settings.ca, settings.tlsOffered ?? true);
}

export function poolOptions(settings: ConnectionSettings, tuning: PoolTuning = {}, attemptTls = true): PoolOptions {
  const ssl = sslOptions(settings.tlsMode, settings.ca, attemptTls);
  return {
    host: settings.host,
    port: settings.port,
    user: settings.user,
    password: settings.password,
    ...(ssl !== undefined ? { ssl } : {}),
    connectionLimit: tuning.connectionLimit ?? 4,
    maxIdle: tuning.maxIdle ?? 2,
    idleTimeout: tuning.idleTimeoutMs ?? 60_000,
    connectTimeout: tuning.connectTimeoutMs ?? 10_000,
    enableKeepAlive: true,
    // One statement per query: nothing a value could smuggle in runs as a second statement.
    multipleStatements: false,
    charset: "utf8mb4_unicode_ci",
    ...driverDefaults,
  };
}
