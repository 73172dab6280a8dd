import { ownConnectionSsl, type ConnectionSettings } from "@stateward/mysql";
import type { MySQLConnectionOptions } from "../engine/index.ts";

/**
 * The engine opens dedicated connections (a consistent snapshot needs its own
 * sessions), from the instance's resolved settings. TLS mode "preferred"
 * means "TLS if the server offers it": the connector's settings say whether
 * it does (its pool found out), so no connection is opened to ask.
 */
export function engineConnection(settings: ConnectionSettings): Promise<MySQLConnectionOptions> {
  const ssl = ownConnectionSsl(settings);
  return Promise.resolve({
    host: settings.host,
    port: settings.port,
    user: settings.user,
    password: settings.password,
    ...(ssl !== undefined && typeof ssl !== "string" ? { ssl } : {}),
  });
}
