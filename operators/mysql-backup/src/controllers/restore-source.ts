// The backup a restore reads (spec.source.backupRef, or the one a
// point-in-time restore chose): Completed, or waited for (refused once Failed).
import { MySQLBackupKind, type MySQLBackup } from "../api.ts";
import type { RestoreSource } from "../restore/index.ts";
import { findCondition } from "@stateward/core";
import { NotReady, Refused } from "./operation-reconciler.ts";
import type { OperationDeps } from "./operation.ts";
import { backupFolder, resolveS3 } from "./s3-settings.ts";

/**
 * The MySQLBackup `name`, Completed; NotReady (woken by the backup's watch) until it is, Refused when it
 * failed: a backup runs once, so a restore waiting for a Failed one would wait Pending forever.
 */
export function completedBackup(d: OperationDeps, ns: string, name: string): MySQLBackup & { status: NonNullable<MySQLBackup["status"]> } {
  const backup = d.cache.get<MySQLBackup>(MySQLBackupKind.resource, ns, name);
  if (!backup) throw new NotReady("BackupNotFound", `MySQLBackup ${name} not found in namespace ${ns}`);
  if (backup.status?.phase === "Failed") {
    const reason = findCondition(backup.status.conditions, "Ready")?.reason;
    throw new Refused("BackupFailed", `MySQLBackup ${name} failed${reason ? ` (${reason})` : ""} and does not run again: restore from another backup`);
  }
  if (backup.status?.phase !== "Completed") {
    throw new NotReady("BackupNotCompleted", `MySQLBackup ${name} is ${backup.status?.phase ?? "Pending"}, not Completed; the restore waits for it`);
  }
  return backup as MySQLBackup & { status: NonNullable<MySQLBackup["status"]> };
}

/** Where a Completed backup is, with the manifest checksum it recorded. */
export async function backupSource(d: OperationDeps, backup: MySQLBackup, ns: string): Promise<{ source: RestoreSource; description: string }> {
  const s3 = await resolveS3(ns, backup.spec.storage.s3, d.secrets);
  const prefix = backupFolder(backup.spec.storage.s3.prefix, ns, backup.metadata.name ?? "");
  // The manifest's checksum recorded at completion: a manifest changed since is refused.
  const manifestSha256 = backup.status?.manifestSha256;
  return {
    source: { backup: { ...s3, prefix }, ...(manifestSha256 ? { manifestSha256 } : {}) },
    description: backup.status?.location ?? `s3://${s3.bucket}/${prefix}/`,
  };
}
