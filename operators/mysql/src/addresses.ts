// Where a MySQL server named by host and port is actually reached. In a
// Kubernetes cluster that is the name itself (a Service or a pod's DNS name
// behind a headless Service). The integration tests run pods without
// containers (KWOK) and map those names to local mariadbd instances instead,
// so every connection the operators open — admin pools, backup streams, and
// the replication a replica is told to follow — goes through this one
// injectable service.

export interface ServerAddress {
  host: string;
  port: number;
}

export interface ServerAddressResolver {
  /** The address to connect to for a server known as `address`. */
  resolve(address: ServerAddress): Promise<ServerAddress>;
  /**
   * The address a MySQL server is told to replicate from, for a server known
   * as `address`. The servers may reach names the operator cannot (inside a
   * cluster, pods resolve each other's DNS names even where the operator's
   * process does not), so this can differ from `resolve`. Defaults to `resolve`.
   */
  resolveForServer?(address: ServerAddress): Promise<ServerAddress>;
}

/** Where a MySQL server is told to reach the server known as `address` (its replication source). */
export function replicationSource(resolver: ServerAddressResolver, address: ServerAddress): Promise<ServerAddress> {
  return resolver.resolveForServer ? resolver.resolveForServer(address) : resolver.resolve(address);
}

/** The resolver used in a cluster: names are reached as they are. */
export const directAddresses: ServerAddressResolver = {
  resolve: (address) => Promise.resolve(address),
};
