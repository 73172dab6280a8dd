import mysql from "mysql2/promise";
import { sslOptions, type ConnectionSettings } from "@stateward/mysql";
import type { MySQLConnectionOptions } from "../engine/index.ts";

function options(settings: ConnectionSettings, attemptTls: boolean): MySQLConnectionOptions {
  const ssl = sslOptions(settings.tlsMode, settings.ca, attemptTls);
  return {
    host: settings.host,
    port: settings.port,
    user: settings.user,
    password: settings.password,
    ...(ssl !== undefined && typeof ssl !== "string" ? { ssl } : {}),
  };
}

/**
 * The engine opens dedicated connections (a consistent snapshot needs its own
 * sessions), from the instance's resolved settings. TLS mode "preferred"
 * means "TLS if the server offers it", so one probe decides, as the
 * connector's pools do.
 */
export async function engineConnection(settings: ConnectionSettings): Promise<MySQLConnectionOptions> {
  const withTls = options(settings, true);
  if (settings.tlsMode !== "preferred") return withTls;
  try {
    const conn = await mysql.createConnection({ ...withTls, connectTimeout: 10_000 });
    await conn.end();
    return withTls;
  } catch (err) {
    if (err instanceof Error && /secure connection|SSL|TLS/i.test(err.message)) return options(settings, false);
    // Anything else (unreachable, wrong password) is reported by the engine with its own clear error.
    return withTls;
  }
}
