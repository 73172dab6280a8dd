// Connections to the servers of a cluster. Each pod's server is reached at its
// stable DNS name behind the headless Service, as root, through the shared
// connector (so through the injectable ServerAddressResolver: in the tests a
// pod's name maps to a local mariadbd). A pool is keyed by the pod, which no
// MySQLInstance can collide with: object names hold no "/".
import type { InstanceConnection, MySQLConnector, MySQLInstance } from "@stateward/mysql";
import type { MySQLCluster } from "../api.ts";
import { MYSQL_PORT, podHost, podName } from "../resources/names.ts";
import { rootSecretRef } from "../resources/objects.ts";

/** The connector's key prefix of a cluster's pods: `<namespace>/pod/<cluster>-`. */
export function memberPoolName(cluster: string, ordinal: number): string {
  return `pod/${podName(cluster, ordinal)}`;
}

/** A MySQLInstance that exists only in memory: how the connector reaches one pod's server. */
export function memberInstance(cluster: MySQLCluster, ordinal: number, podUid: string): MySQLInstance {
  const name = cluster.metadata.name ?? "";
  const namespace = cluster.metadata.namespace ?? "";
  const root = rootSecretRef(cluster);
  return {
    apiVersion: "stateward.io/v1alpha1",
    kind: "MySQLInstance",
    metadata: { name: memberPoolName(name, ordinal), namespace, uid: podUid },
    spec: {
      host: podHost(name, namespace, ordinal),
      port: MYSQL_PORT,
      adminSecretRef: { name: root.name, usernameKey: "username", passwordKey: root.key },
      // Inside the cluster network; the official images serve no TLS by default.
      tls: { mode: "preferred" },
    },
  };
}

export async function connectMember(connector: MySQLConnector, cluster: MySQLCluster, ordinal: number, podUid: string): Promise<InstanceConnection> {
  return connector.connect(memberInstance(cluster, ordinal, podUid));
}
