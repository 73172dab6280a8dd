// Public surface of @stateward/operator-mysql-backup.
// The backup engine (Kubernetes-free): consistent dumps to S3, restores, deletion.
export { BackupError, isBackupError, type BackupFailureReason } from "./errors.ts";
export * from "./engine/index.ts";
export * from "./restore/index.ts";
export * from "./storage/index.ts";
export * from "./binlog/index.ts";
// The operator: kinds and controllers.
export {
  MySQLBackupKind,
  MySQLBackupScheduleKind,
  MySQLBinlogArchiveKind,
  MySQLRestoreKind,
  type MySQLBackup,
  type MySQLBackupSchedule,
  type MySQLBinlogArchive,
  type MySQLRestore,
} from "./api.ts";
export { defaultServerId } from "./controllers/binlog-archive-reconciler.ts";
export { BACKUP_FINALIZER, completedStorage, describeStorage } from "./controllers/backup-reconciler.ts";
export { RESTORE_FINALIZER, restoreRunId } from "./controllers/restore-reconciler.ts";
export { SCHEDULE_LABEL, backupNameFor, backupsToPrune } from "./controllers/schedule-reconciler.ts";
export { createMySQLBackupOperator, mysqlBackupOperator, type MySQLBackupOperatorOptions } from "./module.ts";
export { dueTimesBetween, nextDueTime, ScheduleError, validateSchedule } from "./schedule/due-times.ts";
