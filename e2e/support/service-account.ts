// A kubeconfig that authenticates as a ServiceAccount, so that a test (or a manager run
// locally) acts with exactly the RBAC the chart grants that ServiceAccount — the same
// identity the manager has in a cluster.
import { CoreV1Api } from "@kubernetes/client-node";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { writeKubeconfig } from "../harness/kubeconfig.ts";
import { kubeConfigFrom } from "./kube.ts";

export interface ServiceAccountKubeconfigOptions {
  /**
   * Lifetime of the token. Defaults to 2 h: longer than any suite that runs a manager
   * under it, short enough that a leaked file is soon worthless.
   */
  expirationSeconds?: number;
  /** Where to write the kubeconfig. Defaults to `sa-<namespace>-<name>.kubeconfig` beside the admin kubeconfig. */
  path?: string;
}

/**
 * Issues a token for ServiceAccount `namespace/name` through the TokenRequest API
 * (`POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`, as the kubelet does for a
 * pod), using the admin kubeconfig, and writes a kubeconfig (mode 0600) for the same API
 * server with that token. Returns its path. The ServiceAccount must exist.
 */
export async function serviceAccountKubeconfig(
  adminKubeconfigPath: string,
  namespace: string,
  name: string,
  opts: ServiceAccountKubeconfigOptions = {},
): Promise<string> {
  const admin = kubeConfigFrom(adminKubeconfigPath);
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error(`${adminKubeconfigPath} has no current cluster`);
  const caPem = cluster.caData
    ? Buffer.from(cluster.caData, "base64").toString("utf8")
    : cluster.caFile
      ? readFileSync(cluster.caFile, "utf8")
      : undefined;
  if (!caPem) throw new Error(`${adminKubeconfigPath}: cluster ${cluster.name} has no certificate authority to trust`);

  const request = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    name,
    namespace,
    // No audiences: the token is for the API server itself (its default audience).
    body: { spec: { expirationSeconds: opts.expirationSeconds ?? 7200 } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`the API server issued no token for ServiceAccount ${namespace}/${name}`);

  const path = opts.path ?? join(dirname(adminKubeconfigPath), `sa-${namespace}-${name}.kubeconfig`);
  writeKubeconfig(path, {
    server: cluster.server,
    caPem,
    user: { name: `system:serviceaccount:${namespace}:${name}`, token },
    contextName: `${namespace}-${name}`,
  });
  return path;
}
