// Step 1 of a reconcile: the root and replication passwords. A Secret the
// user names must exist with the keys the published MySQLInstance reads; a
// generated one is created once when absent and never overwritten — only
// whether it goes with the cluster follows secretDeletionPolicy.
import { builtin, isAlreadyExists, type ReconcileContext } from "@stateward/core";
import { MissingSecretError, secretValue } from "@stateward/mysql";
import { randomBytes } from "node:crypto";
import type { MySQLCluster } from "../api.ts";
import { clusterNames } from "../resources/names.ts";
import { generatedSecret, rootSecretRef } from "../resources/objects.ts";
import type { ClusterReconcilerDeps } from "./deps.ts";
import { checkGeneratedSecret } from "./ownership.ts";
import { ClusterProblem } from "./problems.ts";

type Deps = Pick<ClusterReconcilerDeps, "client" | "secrets" | "events">;

/** The generated Secrets exist (created once, never overwritten); returns the replication password. */
export async function ensureSecrets(d: Deps, cluster: MySQLCluster, ctx: ReconcileContext): Promise<string> {
  const ns = cluster.metadata.namespace ?? "";
  const names = clusterNames(cluster.metadata.name ?? "");
  const root = rootSecretRef(cluster);
  if (cluster.spec.rootPasswordSecretRef) {
    const secret = await d.secrets.read(ns, root.name);
    if (!secret) throw new ClusterProblem("Pending", "SecretNotFound", `root password Secret ${root.name} not found in namespace ${ns}; create it with keys username (root) and ${root.key}`);
    try {
      secretValue(secret, root.key);
      if (secretValue(secret, "username") !== "root") throw new MissingSecretError("SecretKeyMissing", `Secret ${root.name} must have username: root (the published MySQLInstance logs in with it)`);
    } catch (err) {
      if (err instanceof MissingSecretError) throw new ClusterProblem("Pending", err.reason, `${err.message}; the root password Secret needs keys username (root) and ${root.key}`);
      throw err;
    }
  } else {
    await ensureGenerated(d, cluster, root.name, () => ({ username: "root", password: newPassword() }), ctx);
  }
  const replication = await ensureGenerated(d, cluster, names.replicationSecret, () => ({ username: "replication", password: newPassword() }), ctx);
  return secretValue(replication, "password");
}

async function ensureGenerated(d: Deps, cluster: MySQLCluster, name: string, generate: () => Record<string, string>, ctx: ReconcileContext) {
  const ns = cluster.metadata.namespace ?? "";
  const existing = await d.secrets.read(ns, name);
  const wanted = generatedSecret(cluster, name, {});
  if (existing) {
    checkGeneratedSecret(existing, cluster);
    // Never overwritten; only whether it goes with the cluster follows secretDeletionPolicy.
    const owned = (existing.metadata.ownerReferences ?? []).some((o) => o.uid === cluster.metadata.uid);
    const shouldOwn = (wanted.metadata.ownerReferences ?? []).length > 0;
    if (owned !== shouldOwn && existing.metadata.labels?.["app.kubernetes.io/managed-by"] === "stateward") {
      const others = (existing.metadata.ownerReferences ?? []).filter((o) => o.uid !== cluster.metadata.uid);
      await d.client.patch(builtin.secret, ns, name, { metadata: { ownerReferences: shouldOwn ? [...others, ...(wanted.metadata.ownerReferences ?? [])] : others, resourceVersion: existing.metadata.resourceVersion } });
    }
    return existing;
  }
  try {
    await d.client.create(builtin.secret, generatedSecret(cluster, name, generate()));
    ctx.log.info("generated a Secret", { secret: name });
    await d.events.record(cluster, "Normal", "SecretGenerated", `Generated Secret ${name}`);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  const created = await d.secrets.read(ns, name);
  if (!created) throw new Error(`Secret ${name} vanished right after it was created`);
  checkGeneratedSecret(created, cluster); // someone else's, made between the look-up and the create
  return created;
}

function newPassword(): string {
  // 24 bytes of randomness in URL-safe base64: no quoting trouble in any client.
  return randomBytes(24).toString("base64url");
}
