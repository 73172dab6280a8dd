// S3 storage of backups: client options, object uploads, the manifest.
export { deleteBackup, readBackupManifest, removePartialBackup, type DeleteBackupResult } from "./backup-folder.ts";
export { compressionExtension, compressions, defaultCompressionLevel, detectCompression, type Compression } from "./compression.ts";
export {
  manifestFileName,
  manifestFormat,
  manifestFormatVersion,
  parseManifest,
  type BackupManifest,
  type ManifestObject,
  type ObjectKind,
  type ReplicationPosition,
  type ServerFlavor,
} from "./manifest.ts";
export { defaultPartSize, defaultQueueSize, type StoredObject, type UploadTuning } from "./object-upload.ts";
export { BackupStore, BucketClient, describeLocation, normalizePrefix, type IncompleteUpload, type S3Location, type S3ObjectLocation, type S3Options } from "./s3.ts";
