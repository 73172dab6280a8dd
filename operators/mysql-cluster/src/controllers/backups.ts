// Backups and rollouts: no pod is restarted while a MySQLBackup of the cluster
// runs, and with updateStrategy.backupBeforeUpgrade the operator first takes
// one (a MySQLBackup resource, which the mysql-backup operator runs) and waits
// for it to complete. Operators never import each other: the MySQLBackup kind
// is addressed by its API name, and a cluster without the CRD simply has no
// backups.
import { isInvalid, isNotFound, messageOf, resourceType, type KubeClient, type KubeObject } from "@stateward/core";
import type { MySQLCluster } from "../api.ts";
import { commonLabels } from "../resources/names.ts";

export const MYSQL_BACKUP = resourceType("stateward.io/v1alpha1", "MySQLBackup", "mysqlbackups");
/** Label on the backups the operator takes before a rollout. */
export const BEFORE_UPGRADE_LABEL = "stateward.io/before-upgrade-of";

interface Backup extends KubeObject {
  spec?: { instanceRef?: { name?: string } };
  status?: { phase?: string; conditions?: { type: string; message?: string }[] };
}

export type BackupGate =
  | { kind: "clear" }
  | { kind: "wait"; reason: "BackupRunning" | "BackingUp"; message: string }
  | { kind: "failed"; message: string };

/** Backups of the cluster (those naming its MySQLInstance); none when the MySQLBackup CRD is not installed. */
async function backupsOf(client: KubeClient, cluster: MySQLCluster): Promise<Backup[]> {
  try {
    const list = await client.list<Backup>(MYSQL_BACKUP, { namespace: cluster.metadata.namespace });
    return list.items.filter((b) => b.spec?.instanceRef?.name === cluster.metadata.name);
  } catch (err) {
    if (isNotFound(err)) return [];
    throw err;
  }
}

/** The name of the backup taken before rolling to `revision`. */
export function beforeUpgradeName(cluster: string, revision: string): string {
  const suffix = revision.startsWith(`${cluster}-`) ? revision.slice(cluster.length + 1) : revision;
  return `${cluster}-before-${suffix}`.slice(0, 253);
}

/**
 * Whether the rollout may take its next step: not while a backup of the
 * cluster runs; with backupBeforeUpgrade and pods to update, only once the
 * backup taken for this revision completed (it is created here when missing).
 */
export async function backupGate(client: KubeClient, cluster: MySQLCluster, revision: string, upgrading: boolean, targetLabel = "stateward.io/target"): Promise<BackupGate> {
  const backups = await backupsOf(client, cluster);
  const name = cluster.metadata.name ?? "";
  const beforeName = beforeUpgradeName(name, revision);
  const running = backups.find((b) => b.status?.phase === "Running" && b.metadata.name !== beforeName);
  if (running) return { kind: "wait", reason: "BackupRunning", message: `waiting for MySQLBackup ${running.metadata.name ?? ""} of this cluster to finish before restarting pods` };
  const template = cluster.spec.updateStrategy?.backupBeforeUpgrade;
  // A switchover alone (spec.primary) changes no server: no backup is taken for it.
  if (!template || !upgrading) return { kind: "clear" };
  const before = backups.find((b) => b.metadata.name === beforeName);
  if (!before) {
    const target = cluster.metadata.labels?.[targetLabel];
    try {
      await client.create(MYSQL_BACKUP, {
        apiVersion: MYSQL_BACKUP.apiVersion,
        kind: MYSQL_BACKUP.kind,
        // With the cluster's target label: the manager that runs its backups must see it.
        metadata: {
          name: beforeName,
          namespace: cluster.metadata.namespace,
          labels: { ...commonLabels(name), [BEFORE_UPGRADE_LABEL]: name, ...(target === undefined ? {} : { [targetLabel]: target }) },
        },
        spec: { ...template, instanceRef: { name } },
      } as KubeObject);
    } catch (err) {
      if (isNotFound(err)) return { kind: "failed", message: "updateStrategy.backupBeforeUpgrade is set, but the MySQLBackup kind is not installed (run the mysql-backup operator); no pod was restarted" };
      if (isInvalid(err)) return { kind: "failed", message: `updateStrategy.backupBeforeUpgrade is not a valid MySQLBackup spec: ${messageOf(err)}; no pod was restarted` };
      throw err;
    }
    return { kind: "wait", reason: "BackingUp", message: `taking MySQLBackup ${beforeName} before the first pod restarts` };
  }
  switch (before.status?.phase) {
    case "Completed":
      return { kind: "clear" };
    case "Failed":
      return {
        kind: "failed",
        message: `MySQLBackup ${beforeName}, taken before the rollout, failed (${before.status.conditions?.find((c) => c.type === "Ready")?.message ?? "see kubectl describe mysqlbackup"}); no pod was restarted. Fix the cause and delete the backup to try again, or remove backupBeforeUpgrade`,
      };
    default:
      return { kind: "wait", reason: "BackingUp", message: `waiting for MySQLBackup ${beforeName} to complete before the first pod restarts` };
  }
}
