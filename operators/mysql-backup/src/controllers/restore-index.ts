// The cache index that maps a MySQLBackup to the MySQLRestores naming it in
// spec.source.backupRef: a restore waiting for its backup is woken by the
// backup's changes (the controller watches MySQLBackup), not by polling.
import type { Cache, Request } from "@stateward/core";
import { MySQLRestoreKind, type MySQLBackup, type MySQLRestore } from "../api.ts";

export const RESTORE_BY_BACKUP = "mysqlrestore.backup";

/** The index values of a restore: `<namespace>/<backup name>` when its source is a MySQLBackup. */
export function restoreBackupRef(restore: MySQLRestore): string[] {
  const ref = restore.spec.source?.backupRef;
  return ref ? [`${restore.metadata.namespace ?? ""}/${ref.name}`] : [];
}

/** Whether a restore may still be waiting for its backup: it has not started. */
export function waitsForBackup(restore: MySQLRestore): boolean {
  const phase = restore.status?.phase;
  return phase === undefined || phase === "Pending";
}

/** The restores a change of `backup` may let start (its MapFunc, through the index). */
export function restoresWaitingFor(cache: Cache, backup: MySQLBackup): Request[] {
  return cache
    .byIndex<MySQLRestore>(MySQLRestoreKind.resource, RESTORE_BY_BACKUP, `${backup.metadata.namespace ?? ""}/${backup.metadata.name ?? ""}`)
    .filter(waitsForBackup)
    .map((r) => ({ namespace: r.metadata.namespace, name: r.metadata.name ?? "" }));
}
