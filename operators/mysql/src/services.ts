// The shared MySQL services in the manager's container. Every MySQL operator
// module calls `bindMySQLServices` from its ContainerModule; the first one
// binds, the others find the services bound — so all operators of a process
// share one connector, and thus one connection pool per instance.
import { Tokens, bindResolved, token, type ControllerSetup } from "@stateward/core";
import type { ContainerModuleLoadOptions } from "inversify";
import { directAddresses, type ServerAddressResolver } from "./addresses.ts";
import { MySQLConnector, type ConnectorOptions } from "./connector.ts";
import { SecretReader } from "./secrets.ts";

export const MySQLTokens = {
  /** MySQLConnector: the per-instance connection pools. */
  Connector: token<MySQLConnector>("stateward.mysql.MySQLConnector"),
  /** SecretReader: referenced Secrets, from the cache or the API server. */
  SecretReader: token<SecretReader>("stateward.mysql.SecretReader"),
  /** ServerAddressResolver: where a host and port are reached (a test binds its own first). */
  ServerAddresses: token<ServerAddressResolver>("stateward.mysql.ServerAddresses"),
  /** ControllerSetup of the MySQLInstance controller, bound once however many MySQL operators load (instance-controller.ts). */
  InstanceController: token<ControllerSetup>("stateward.mysql.InstanceController"),
} as const;

/**
 * What a MySQL operator's controller usually takes, by name (for core's
 * `bindResolved`): the client, the cache, the event recorders, and the shared
 * connector and Secret reader. A module adds what else it needs.
 */
export const mysqlControllerDeps = {
  client: Tokens.KubeClient,
  cache: Tokens.Cache,
  events: Tokens.EventRecorderFactory,
  connector: MySQLTokens.Connector,
  secrets: MySQLTokens.SecretReader,
};

/**
 * Binds the connector and the Secret reader unless another module already
 * did. `options` only take effect for the module that binds first.
 */
export function bindMySQLServices(container: Pick<ContainerModuleLoadOptions, "bind" | "isBound">, options: ConnectorOptions = {}): void {
  const { bind, isBound } = container;
  if (!isBound(MySQLTokens.SecretReader)) {
    bindResolved(bind, MySQLTokens.SecretReader, { client: Tokens.KubeClient, cache: Tokens.Cache }, ({ client, cache }) => new SecretReader(client, cache));
  }
  if (!isBound(MySQLTokens.ServerAddresses)) {
    bind<ServerAddressResolver>(MySQLTokens.ServerAddresses).toConstantValue(directAddresses);
  }
  if (!isBound(MySQLTokens.Connector)) {
    bindResolved(
      bind,
      MySQLTokens.Connector,
      { secrets: MySQLTokens.SecretReader, logger: Tokens.Logger, addresses: MySQLTokens.ServerAddresses },
      ({ secrets, logger, addresses }) => new MySQLConnector(secrets, logger, { ...options, addresses: options.addresses ?? addresses }),
    )
      // Runs when the container unbinds the connector; see MySQLConnector.close.
      .onDeactivation((connector) => connector.close());
  }
}
