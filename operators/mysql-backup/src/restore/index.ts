// Restores: from a backup folder (verified object by object) or a plain dump file.
export { locateRestoreSource, runRestore, type RestoreOptions, type RestoreProgress, type RestoreResult, type RestoreSource } from "./restore.ts";
