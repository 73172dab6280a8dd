// The shared MySQL services in the manager's container. Every MySQL operator
// module calls `bindMySQLServices` from its ContainerModule; the first one
// binds, the others find the services bound — so all operators of a process
// share one connector, and thus one connection pool per instance.
import { Tokens, type Cache, type KubeClient, type Logger } from "@stateward/core";
import type { ContainerModuleLoadOptions } from "inversify";
import { directAddresses, type ServerAddressResolver } from "./addresses.ts";
import { MySQLConnector, type ConnectorOptions } from "./connector.ts";
import { SecretReader } from "./secrets.ts";

export const MySQLTokens = {
  /** MySQLConnector: the per-instance connection pools. */
  Connector: Symbol.for("stateward.mysql.MySQLConnector"),
  /** SecretReader: referenced Secrets, from the cache or the API server. */
  SecretReader: Symbol.for("stateward.mysql.SecretReader"),
  /** ServerAddressResolver: where a host and port are reached (a test binds its own first). */
  ServerAddresses: Symbol.for("stateward.mysql.ServerAddresses"),
  /** ControllerSetup of the MySQLInstance controller, bound once however many MySQL operators load (instance-controller.ts). */
  InstanceController: Symbol.for("stateward.mysql.InstanceController"),
} as const;

/**
 * Binds the connector and the Secret reader unless another module already
 * did. `options` only take effect for the module that binds first.
 */
export function bindMySQLServices(container: Pick<ContainerModuleLoadOptions, "bind" | "isBound">, options: ConnectorOptions = {}): void {
  const { bind, isBound } = container;
  if (!isBound(MySQLTokens.SecretReader)) {
    bind<SecretReader>(MySQLTokens.SecretReader).toResolvedValue(
      (client: KubeClient, cache: Cache) => new SecretReader(client, cache),
      [Tokens.KubeClient, Tokens.Cache],
    );
  }
  if (!isBound(MySQLTokens.ServerAddresses)) {
    bind<ServerAddressResolver>(MySQLTokens.ServerAddresses).toConstantValue(directAddresses);
  }
  if (!isBound(MySQLTokens.Connector)) {
    bind<MySQLConnector>(MySQLTokens.Connector)
      .toResolvedValue(
        (secrets: SecretReader, logger: Logger, addresses: ServerAddressResolver) => new MySQLConnector(secrets, logger, { ...options, addresses: options.addresses ?? addresses }),
        [MySQLTokens.SecretReader, Tokens.Logger, MySQLTokens.ServerAddresses],
      )
      // Runs when the container unbinds the connector; see MySQLConnector.close.
      .onDeactivation((connector) => connector.close());
  }
}
