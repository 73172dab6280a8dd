// The cache index that maps a MySQLBackup to the MySQLRestores that restore
// it: a restore waiting for its backup is woken by the backup's changes (the
// controller watches MySQLBackup), not by polling; and a schedule's retention
// leaves a backup alone while a restore still needs it.
import type { Cache, Request } from "@stateward/core";
import { MySQLRestoreKind, type MySQLBackup, type MySQLRestore } from "../api.ts";

export const RESTORE_BY_BACKUP = "mysqlrestore.backup";

/**
 * The index values of a restore: `<namespace>/<backup name>` of the MySQLBackup it restores —
 * spec.source.backupRef, or the one a point-in-time restore chose (status.pointInTime.backup).
 */
export function restoreBackupRef(restore: MySQLRestore): string[] {
  const names = new Set([restore.spec.source?.backupRef?.name, restore.status?.pointInTime?.backup]);
  names.delete(undefined);
  return [...names].map((name) => `${restore.metadata.namespace ?? ""}/${name ?? ""}`);
}

/** Whether a restore may still be waiting for its backup: it has not started. */
export function waitsForBackup(restore: MySQLRestore): boolean {
  const phase = restore.status?.phase;
  return phase === undefined || phase === "Pending";
}

/**
 * The restores that have yet to finish with the MySQLBackup `namespace/name` (not Completed or
 * Failed: pending, or reading its objects now).
 */
export function restoresReading(cache: Cache, namespace: string, name: string): MySQLRestore[] {
  return cache.byIndex<MySQLRestore>(MySQLRestoreKind.resource, RESTORE_BY_BACKUP, `${namespace}/${name}`).filter((r) => r.status?.phase !== "Completed" && r.status?.phase !== "Failed");
}

/** The restores a change of `backup` may let start (its MapFunc, through the index). */
export function restoresWaitingFor(cache: Cache, backup: MySQLBackup): Request[] {
  return cache
    .byIndex<MySQLRestore>(MySQLRestoreKind.resource, RESTORE_BY_BACKUP, `${backup.metadata.namespace ?? ""}/${backup.metadata.name ?? ""}`)
    .filter(waitsForBackup)
    .map((r) => ({ namespace: r.metadata.namespace, name: r.metadata.name ?? "" }));
}
