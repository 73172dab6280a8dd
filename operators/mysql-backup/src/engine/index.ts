// The backup engine: a consistent dump of MySQL databases into an S3 folder,
// with no Kubernetes in it. The MySQLBackup / MySQLRestore reconcilers drive it:
//
//   const result = await runBackup({
//     source: { host, port, user, password, ssl },            // from the MySQLInstance and its Secret
//     storage: { bucket, prefix: `${prefix}/${ns}/${name}`, endpoint, region, forcePathStyle,
//                credentials: { accessKeyId, secretAccessKey }, caBundle },
//     databases, compression, signal, onProgress, logger,
//   });                         // status: result.location.url, size, position, durations, warnings
//   await runRestore({ target, source: await locateRestoreSource({ ...s3, bucket, path }), databases });
//   await deleteBackup(storage);  // deletionPolicy: Delete, and after a manager restart mid-backup
//
// Every failure is a BackupError (../errors.ts): `reason` fits a condition's reason as is,
// `message` says what to do, `retryable` says whether trying again may help.
export { runBackup, type BackupOptions, type BackupProgress, type BackupResult } from "./backup.ts";
export { MySQLSession, type MySQLConnectionOptions } from "./connection.ts";
