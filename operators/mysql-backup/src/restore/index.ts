// Restores: from a backup folder (staged and swapped in, or verified first and applied in place) or a plain dump file.
export {
  locateRestoreSource,
  runRestore,
  type RestoreMode,
  type RestoreOptions,
  type RestoreProgress,
  type RestoreResult,
  type RestoreSource,
} from "./restore.ts";
export { leftTargetUntouched, targetNoteOf } from "./backup-restore.ts";
export { cleanUpRestore, findLeftovers, keptReplaced, replacedTablesPlace, stagingDatabaseName, stagingDatabasesPattern, type StagingLeftovers } from "./staging.ts";
