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
}

/** The resolver used in a cluster: names are reached as they are. */
export const directAddresses: ServerAddressResolver = {
  resolve: (address) => Promise.resolve(address),
};
