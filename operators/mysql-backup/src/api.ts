// The kinds of the mysql-backup operator: MySQLBackup and MySQLRestore.
// Field semantics follow docs/conventions.md; each field's description is
// what `kubectl explain` shows.
import {
  array,
  boolean,
  conditionsSchema,
  defineKind,
  integer,
  object,
  optional,
  string,
  stringEnum,
  type ObjectOf,
} from "@stateward/core";

const NAME = { minLength: 1, maxLength: 253, pattern: "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$" };

const instanceRef = (what: string) =>
  object({ name: string("Name of the MySQLInstance in the same namespace.", NAME) }, what);

const secretKeyRef = (description: string) =>
  object(
    {
      name: string("Name of the Secret in the same namespace.", NAME),
      key: string("Key in the Secret's data.", { minLength: 1, maxLength: 253 }),
    },
    description,
  );

/** Where objects live in S3: shared by a backup's storage, a restore's source and a binlog archive's storage. */
function s3Fields(prefixDescription = "Key prefix under which backups are stored, without a trailing slash. Backups go to <prefix>/<namespace>/<backup name>/.") {
  return {
    bucket: string("Bucket name.", { minLength: 3, maxLength: 63 }),
    prefix: optional(
      string(prefixDescription, {
        maxLength: 512,
        default: "",
        pattern: "^([^/].*[^/]|[^/]?)$",
      }),
    ),
    endpoint: optional(
      string("S3 endpoint URL for S3-compatible stores (e.g. https://minio.example:9000). Default: AWS for the region.", {
        maxLength: 2048,
        pattern: "^https?://",
      }),
    ),
    region: optional(string("Region of the bucket.", { maxLength: 64, default: "us-east-1" })),
    forcePathStyle: optional(boolean("Address the bucket as <endpoint>/<bucket> instead of <bucket>.<endpoint>; most S3-compatible stores need this.", { default: false })),
    credentialsSecretRef: object(
      {
        name: string("Name of the Secret in the same namespace.", NAME),
        accessKeyIdKey: optional(string("Key of the access key id in the Secret.", { default: "AWS_ACCESS_KEY_ID", maxLength: 253 })),
        secretAccessKeyKey: optional(string("Key of the secret access key in the Secret.", { default: "AWS_SECRET_ACCESS_KEY", maxLength: 253 })),
      },
      "The Secret holding the S3 credentials. They are never copied into status, events or logs.",
    ),
    tls: optional(
      object(
        {
          caSecretRef: optional(secretKeyRef("A Secret key holding the PEM CA bundle that signed the endpoint's certificate.")),
        },
        "TLS settings for a custom endpoint.",
      ),
    ),
    requestChecksumCalculation: optional(
      stringEnum(["WhenSupported", "WhenRequired"], "When to send request checksums. WhenRequired suits S3-compatible stores that predate flexible checksums.", {
        default: "WhenSupported",
      }),
    ),
  };
}

const storageSchema = object({ s3: object(s3Fields(), "An S3 or S3-compatible bucket.") }, "Where the backup is stored.");

const databasesSchema = (what: string) =>
  optional(array(string("A database name.", { minLength: 1, maxLength: 64 }), what, { maxItems: 256, listType: "set" }));

const phaseSchema = stringEnum(["Pending", "Running", "Completed", "Failed"], "Where the operation is in its lifecycle.");

const positionSchema = object(
  {
    binlogFile: optional(string("Binary log file at the snapshot.")),
    binlogPosition: optional(integer("Position in the binary log file at the snapshot.")),
    gtid: optional(string("GTID set (MySQL: gtid_executed; MariaDB: gtid_binlog_pos) at the snapshot.")),
  },
  "The server's replication position at the consistent snapshot; restoring gives exactly this state.",
);

/** The fields of a backup's spec, shared by MySQLBackup and a schedule's backupTemplate. */
function backupSpecFields() {
  return {
    instanceRef: instanceRef("The MySQLInstance to back up."),
    storage: storageSchema,
    databases: databasesSchema("Databases to back up. Default: every user database (not mysql, sys, information_schema, performance_schema)."),
    compression: optional(stringEnum(["gzip", "zstd", "none"], "Compression of each stored object.", { default: "gzip" })),
    deletionPolicy: optional(
      stringEnum(["Retain", "Delete"], "What happens to the stored objects when this resource is deleted: Retain keeps them, Delete removes them. A run that has not finished has its partial upload removed either way.", {
        default: "Retain",
      }),
    ),
  };
}

export const MySQLBackupKind = defineKind({
  group: "stateward.io",
  version: "v1alpha1",
  kind: "MySQLBackup",
  plural: "mysqlbackups",
  shortNames: ["mysqlbk"],
  scope: "Namespaced",
  description: "A consistent backup of a MySQL server's databases, streamed to S3 as plain SQL objects and a manifest.",
  spec: object(
    backupSpecFields(),
    "The desired backup. A backup runs once; changing its spec afterwards has no effect on it (deletionPolicy still decides what deleting the MySQLBackup does), and storage cannot be changed at all.",
    {
      // Where a backup was written is what deleting it (deletionPolicy Delete)
      // removes; letting it be edited would point that at someone else's folder.
      validations: [{ rule: "self.storage == oldSelf.storage", message: "spec.storage cannot be changed after the MySQLBackup is created; create a new MySQLBackup to write elsewhere" }],
    },
  ),
  status: object(
    {
      phase: optional(phaseSchema),
      observedGeneration: optional(integer("The generation last acted upon.")),
      startTime: optional(string("When the backup started.", { format: "date-time" })),
      completionTime: optional(string("When the backup completed or failed.", { format: "date-time" })),
      durationSeconds: optional(integer("How long the backup took.")),
      location: optional(string("s3://<bucket>/<key prefix>/ of the backup folder (holding manifest.json).")),
      serverVersion: optional(string("Version of the server that was backed up.")),
      objects: optional(integer("Number of stored objects, the manifest excluded.")),
      compressedBytes: optional(integer("Bytes stored in the bucket.")),
      uncompressedBytes: optional(integer("Bytes of SQL before compression.")),
      manifestSha256: optional(string("SHA-256 of the stored manifest.json; each object's own SHA-256 is in the manifest.")),
      snapshotTime: optional(string("When the consistent snapshot was taken: the backup holds the data of this moment. A point-in-time restore to a later point can start from it.", { format: "date-time" })),
      storage: optional(
        object(
          {
            bucket: string("Bucket the backup was written to."),
            prefix: string("Key prefix of the backup folder (<prefix>/<namespace>/<name>), without a trailing slash."),
            endpoint: optional(string("S3 endpoint the backup was written to; absent for AWS.")),
            region: optional(string("Region of the bucket.")),
            forcePathStyle: optional(boolean("Whether the bucket was addressed as <endpoint>/<bucket>.")),
          },
          "Where this backup's objects were written, recorded when it completed. Deleting the MySQLBackup with deletionPolicy Delete removes only this folder, and only when the backup completed: a backup that failed (e.g. BackupExists) never deletes anything.",
        ),
      ),
      position: optional(positionSchema),
      startedBy: optional(string("The manager instance that ran the backup; a backup found Running under another instance was interrupted.")),
      conditions: optional(conditionsSchema()),
    },
    "What the backup did.",
  ),
  printerColumns: [
    { name: "Instance", type: "string", jsonPath: ".spec.instanceRef.name" },
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "Size", type: "integer", jsonPath: ".status.compressedBytes", description: "Bytes stored" },
    { name: "Location", type: "string", jsonPath: ".status.location", priority: 1 },
    { name: "Completed", type: "date", jsonPath: ".status.completionTime" },
  ],
});

export type MySQLBackup = ObjectOf<typeof MySQLBackupKind>;

export const MySQLRestoreKind = defineKind({
  group: "stateward.io",
  version: "v1alpha1",
  kind: "MySQLRestore",
  plural: "mysqlrestores",
  shortNames: ["mysqlrs"],
  scope: "Namespaced",
  description: "Restores a backup (or a plain mysqldump file) from S3 into a MySQL server; with pointInTime, a backup and then the archived binary log up to a time or GTID.",
  spec: object(
    {
      instanceRef: instanceRef("The MySQLInstance to restore into."),
      source: optional(object(
        {
          backupRef: optional(object({ name: string("Name of a Completed MySQLBackup in the same namespace.", NAME) }, "Restore this MySQLBackup. With pointInTime: the full backup the archived transactions are replayed onto (its snapshot must be before the point and its GTID position within the archive).")),
          s3: optional(
            object(
              {
                ...s3Fields(),
                path: string("A backup folder (holding manifest.json) or the key of a single mysqldump/mariadb-dump file (gzip or plain), relative to the bucket.", {
                  minLength: 1,
                  maxLength: 1024,
                }),
              },
              "Restore from this S3 location.",
            ),
          ),
        },
        "What to restore: exactly one of backupRef or s3. Optional with pointInTime, which then starts from the newest fitting backup.",
        { validations: [{ rule: "has(self.backupRef) != has(self.s3)", message: "set exactly one of source.backupRef or source.s3" }] },
      )),
      pointInTime: optional(
        object(
          {
            archiveRef: object(
              { name: string("Name of a MySQLBinlogArchive in the same namespace that archives the backed-up server's binary log.", NAME) },
              "The binlog archive whose transactions are replayed after the backup.",
            ),
            time: optional(
              string(
                "Restore the state of this moment (RFC 3339, e.g. 2026-12-02T03:14:15Z): every transaction whose binlog event time is at or before it is replayed, none after. The binlog records whole seconds, so a fraction is cut off. It must not be later than now.",
                { format: "date-time" },
              ),
            ),
            gtid: optional(
              string("Restore up to and including the transaction with this MariaDB GTID (domain-server-sequence, e.g. 0-1-4711), and nothing of its domain after it.", {
                maxLength: 64,
                pattern: "^[0-9]{1,10}-[0-9]{1,10}-[0-9]{1,20}$",
              }),
            ),
          },
          "Point-in-time recovery: a full backup (source.backupRef, or else the newest Completed MySQLBackup of the archived MySQLInstance taken before the point whose GTID position the archive covers; a backup of another instance is refused) is restored, then the archived transactions after its snapshot up to the point are replayed onto the target. Before the target is changed at all, the archive's index is read, the needed binlog files are downloaded and their size and SHA-256 checked. The replay is limited to the databases restored, each statement taken by its default database (as mariadb-binlog --database). A statement logged without a default database (run without USE, e.g. DROP TABLE shop.t) is replayed when every database of the backup is restored; with spec.databases naming only some, the restore fails (UnattributedStatement) before changing the target. Exactly one of time or gtid.",
          { validations: [{ rule: "has(self.time) != has(self.gtid)", message: "set exactly one of pointInTime.time or pointInTime.gtid" }] },
        ),
      ),
      databases: databasesSchema("Restore only these databases. Default: all in the backup."),
      mode: optional(
        stringEnum(
          ["Staged", "InPlace"],
          "How a backup is restored (a plain dump file is always applied in place). Staged builds each restored database in a staging database (stw_restore_<id>_<n>), streaming every object from S3 and checking its size and SHA-256, and swaps the tables in with one atomic RENAME TABLE only when everything was verified and applied; views, routines, triggers and events are recreated after the swap. A missing or corrupt object, a failed statement, a deletion of this resource or a manager killed before the swap leave the target's tables as they were; after the swap, the tables it replaced are kept aside (stw_replaced_<id>) and the Ready condition says where. The server needs free space for a second copy of the restored tables while it runs. InPlace needs no extra space: every object is downloaded and verified first, then applied to the target table by table (DROP TABLE, CREATE TABLE, INSERT); a failure or a killed manager mid-apply leaves the target partly restored. Tables of the target that the backup does not contain stay as they are in both modes.",
          { default: "Staged" },
        ),
      ),
    },
    "The desired restore. A restore runs once.",
    {
      validations: [
        { rule: "has(self.source) || has(self.pointInTime)", message: "set spec.source, or spec.pointInTime (which then picks the backup itself)" },
        {
          rule: "!has(self.pointInTime) || !has(self.source) || !has(self.source.s3)",
          message: "spec.source.s3 cannot be combined with spec.pointInTime: a point-in-time restore starts from a MySQLBackup (source.backupRef), whose GTID position it needs",
        },
      ],
    },
  ),
  status: object(
    {
      phase: optional(phaseSchema),
      observedGeneration: optional(integer("The generation last acted upon.")),
      startTime: optional(string("When the restore started.", { format: "date-time" })),
      completionTime: optional(string("When the restore completed or failed.", { format: "date-time" })),
      durationSeconds: optional(integer("How long the restore took.")),
      source: optional(string("s3://<bucket>/<key> that was restored.")),
      objects: optional(integer("Number of objects applied.")),
      bytes: optional(integer("Bytes of SQL applied.")),
      mode: optional(stringEnum(["Staged", "InPlace"], "How the restore applies: Staged (swapped in once everything was verified), or InPlace (spec.mode InPlace, and every plain dump file).")),
      pointInTime: optional(
        object(
          {
            backup: optional(string("The MySQLBackup restored before the replay (chosen, or source.backupRef).")),
            backupPosition: optional(string("GTID position of that backup's snapshot: the replay starts after it.")),
            point: optional(string("The point restored to: spec.pointInTime.time or gtid.")),
            binlogFiles: optional(integer("Archived binlog files downloaded and verified for the replay.")),
            transactions: optional(integer("Transactions replayed onto the target.")),
            lastReplayedGtid: optional(string("GTID of the last transaction replayed onto the target.")),
            lastReplayedTime: optional(string("Binlog event time of the last transaction replayed.", { format: "date-time" })),
          },
          "What a point-in-time restore chose and replayed.",
        ),
      ),
      startedBy: optional(string("The manager instance that ran the restore.")),
      conditions: optional(conditionsSchema()),
    },
    "What the restore did.",
  ),
  printerColumns: [
    { name: "Instance", type: "string", jsonPath: ".spec.instanceRef.name" },
    { name: "Backup", type: "string", jsonPath: ".spec.source.backupRef.name" },
    { name: "Point", type: "string", jsonPath: ".status.pointInTime.point", priority: 1 },
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "Completed", type: "date", jsonPath: ".status.completionTime" },
  ],
});

export type MySQLRestore = ObjectOf<typeof MySQLRestoreKind>;

/**
 * The longest name a MySQLBackupSchedule may have: 63, the longest label value, because the name is the value
 * of the stateward.io/backup-schedule label on every MySQLBackup the schedule creates (a longer one has every
 * create refused). The other name derived from it, each backup's `<schedule>-<yyyymmddhhmmss>` (15 more, at
 * most 78), is an object name only (up to 253; its Events' names add 16): backups run in the manager, not in
 * Jobs or Pods, and their names are no label values, so nothing asks for less (CronJob's 52 leaves room for the
 * 11 characters its Jobs add, whose names go into their Pods' job-name label).
 */
export const MAX_SCHEDULE_NAME_LENGTH = 63;

export const MySQLBackupScheduleKind = defineKind({
  group: "stateward.io",
  version: "v1alpha1",
  kind: "MySQLBackupSchedule",
  plural: "mysqlbackupschedules",
  shortNames: ["mysqlbks"],
  scope: "Namespaced",
  description: `Creates MySQLBackups on a cron schedule and keeps the history within a retention policy. Its name is at most ${MAX_SCHEDULE_NAME_LENGTH} characters: each backup carries it in the label stateward.io/backup-schedule.`,
  spec: object(
    {
      schedule: string(
        "When backups are due, in node-cron syntax: five fields (minute hour day-of-month month day-of-week), an optional leading seconds field, or a macro such as @daily or @hourly. Day-of-month and day-of-week must both match.",
        { minLength: 1, maxLength: 128, pattern: "^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|\\S+(\\s+\\S+){4,5})$" },
      ),
      timeZone: optional(
        string("IANA time zone the schedule is read in, e.g. Europe/Berlin. Wall-clock times skipped by a DST change are not run; repeated ones run once.", {
          default: "UTC",
          maxLength: 64,
          pattern: "^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$",
        }),
      ),
      backupTemplate: object(backupSpecFields(), "The spec of each MySQLBackup this schedule creates."),
      retention: optional(
        object(
          {
            keepLast: optional(integer("Keep at most this many Completed backups; older ones are deleted (with their stored objects when their deletionPolicy is Delete). Failed backups never count.", { minimum: 1, maximum: 1000 })),
            maxAge: optional(string("Delete Completed backups older than this, e.g. 720h or 30d (the newest Completed backup is always kept).", { pattern: "^[0-9]+(s|m|h|d)$", maxLength: 16 })),
          },
          "Which completed backups to keep. A backup a MySQLRestore has yet to finish with is kept until it has (Event PruneDeferred).",
        ),
      ),
      concurrencyPolicy: optional(
        stringEnum(["Forbid", "Allow", "Replace"], "When a backup is due while the previous one still runs: Forbid skips the new one, Allow runs both, Replace deletes the running one first.", {
          default: "Forbid",
        }),
      ),
      suspend: optional(boolean("Stop creating backups. Resuming does not catch up on what was due meanwhile, except the latest due time within startingDeadlineSeconds.", { default: false })),
      startingDeadlineSeconds: optional(
        integer("A due time missed by more than this (manager down, suspended) is skipped with an Event instead of run late.", { minimum: 1, default: 300 }),
      ),
    },
    "The schedule.",
  ),
  status: object(
    {
      observedGeneration: optional(integer("The generation last acted upon.")),
      lastScheduleTime: optional(string("The latest due time that was handled (a backup created, or skipped with an Event).", { format: "date-time" })),
      nextScheduleTime: optional(string("The next due time.", { format: "date-time" })),
      lastSuccessfulBackup: optional(string("Name of the newest Completed backup.")),
      lastSuccessfulTime: optional(string("When the newest Completed backup completed.", { format: "date-time" })),
      active: optional(array(string("A MySQLBackup name."), "Backups of this schedule still Pending or Running.", { listType: "atomic" })),
      conditions: optional(conditionsSchema()),
    },
    "What the schedule did.",
  ),
  printerColumns: [
    { name: "Schedule", type: "string", jsonPath: ".spec.schedule" },
    { name: "Suspend", type: "boolean", jsonPath: ".spec.suspend" },
    { name: "Last", type: "date", jsonPath: ".status.lastScheduleTime" },
    { name: "Next", type: "date", jsonPath: ".status.nextScheduleTime" },
    { name: "Last Success", type: "string", jsonPath: ".status.lastSuccessfulBackup" },
  ],
  validations: [
    {
      rule: `self.metadata.name.size() <= ${MAX_SCHEDULE_NAME_LENGTH}`,
      message: `metadata.name is longer than ${MAX_SCHEDULE_NAME_LENGTH} characters, the longest label value: each MySQLBackup of the schedule carries the name in the label stateward.io/backup-schedule`,
    },
  ],
});

export type MySQLBackupSchedule = ObjectOf<typeof MySQLBackupScheduleKind>;

export const MySQLBinlogArchiveKind = defineKind({
  group: "stateward.io",
  version: "v1alpha1",
  kind: "MySQLBinlogArchive",
  plural: "mysqlbinlogarchives",
  shortNames: ["mysqlbla"],
  scope: "Namespaced",
  description:
    "Continuously archives a MariaDB server's binary log to S3, streamed by the manager over the replication protocol (as a replica would, GTID-based): standard binlog files, rotated by size and age, listed with their SHA-256, GTID range and event times in an index.json. The base for point-in-time recovery from a MySQLBackup.",
  spec: object(
    {
      instanceRef: instanceRef(
        "The MySQLInstance whose binary log is archived. For a MySQLCluster, name the MySQLInstance it publishes under its own name: it reaches the primary, and the archive follows a switchover or failover to the new primary, continuing after the last archived GTID.",
      ),
      storage: object(
        {
          s3: object(
            s3Fields("Key prefix under which archives are stored, without a trailing slash. The archive goes to <prefix>/<namespace>/<archive name>/ (index.json and binlog.NNNNNN files)."),
            "An S3 or S3-compatible bucket.",
          ),
        },
        "Where the archive is stored.",
      ),
      serverId: optional(
        integer(
          "The server id this archive announces to the server, as a replica's. It must differ from the server_id of every server and replica of the replication topology (a server drops an older stream of the same id). Default: one derived from the namespace and name, between 4000000000 and 4294967295.",
          { minimum: 1, maximum: 4294967295 },
        ),
      ),
      rotation: optional(
        object(
          {
            maxFileBytes: optional(
              integer("Close a file once it holds this many bytes (a transaction is never split, so a file can exceed it by its last transaction). A file is held in the manager's memory until it is uploaded.", {
                minimum: 1048576,
                maximum: 1073741824,
                default: 67108864,
              }),
            ),
            maxFileAgeSeconds: optional(
              integer("Close and upload a file this long after its first transaction: at most this much of the server's history is only in its own binary log, not yet in S3.", {
                minimum: 5,
                maximum: 3600,
                default: 60,
              }),
            ),
          },
          "When a file is closed and uploaded. Defaults: 64 MiB or 60 seconds, whichever comes first.",
        ),
      ),
      retention: optional(
        object(
          {
            policy: optional(
              stringEnum(
                ["KeepAll", "SinceOldestBackup"],
                "KeepAll: no archived file is ever deleted. SinceOldestBackup: a file is deleted once every transaction in it is at or before the snapshot (status.position.gtid) of every Completed MySQLBackup of the same MySQLInstance in this namespace, so no kept backup's point-in-time restore needs it; the index is rewritten without it before its object is deleted. Nothing is deleted while there is no such backup, or while one of them recorded no GTID position. The newest file is always kept.",
                { default: "KeepAll" },
              ),
            ),
            minimumAgeHours: optional(
              integer("With SinceOldestBackup, a file whose last transaction is younger than this is kept even when no backup needs it.", { minimum: 0, maximum: 87600, default: 24 }),
            ),
          },
          "Which archived files are deleted. Default: none (KeepAll).",
        ),
      ),
    },
    "The archive. Changing instanceRef, serverId, rotation or retention restarts the stream from the last archived GTID; storage cannot be changed.",
    {
      validations: [{ rule: "self.storage == oldSelf.storage", message: "spec.storage cannot be changed after the MySQLBinlogArchive is created; create a new MySQLBinlogArchive to archive elsewhere" }],
    },
  ),
  status: object(
    {
      observedGeneration: optional(integer("The generation last acted upon.")),
      location: optional(string("s3://<bucket>/<prefix>/<namespace>/<name>/ of the archive folder (holding index.json).")),
      startPosition: optional(string("GTID position where the archive begins: its first transaction is the one after it (the server's gtid_binlog_pos when archiving started).")),
      archivedPosition: optional(string("GTID position after the last transaction stored in S3, per replication domain: where the stream resumes.")),
      lastArchivedGtid: optional(string("GTID of the last transaction stored in S3.")),
      lastArchivedTime: optional(string("When the last transaction stored in S3 was written on the server (its binlog event time).", { format: "date-time" })),
      lagSeconds: optional(
        integer("Seconds since the oldest transaction received but not yet stored in S3 was written on the server; 0 when everything received is stored. Bounded by rotation.maxFileAgeSeconds while the stream keeps up."),
      ),
      files: optional(integer("Binlog files the archive's index lists.")),
      source: optional(string("The server streamed from: server id and address.")),
      conditions: optional(conditionsSchema()),
    },
    "What the archive did. Ready is True while the stream runs; its reason says why not (e.g. GtidGap, GtidDuplicate, BinlogUnavailable, InstanceNotFound).",
  ),
  printerColumns: [
    { name: "Instance", type: "string", jsonPath: ".spec.instanceRef.name" },
    { name: "Last GTID", type: "string", jsonPath: ".status.lastArchivedGtid" },
    { name: "Lag", type: "integer", jsonPath: ".status.lagSeconds", description: "Seconds" },
    { name: "Ready", type: "string", jsonPath: ".status.conditions[?(@.type==\"Ready\")].status" },
    { name: "Location", type: "string", jsonPath: ".status.location", priority: 1 },
  ],
});

export type MySQLBinlogArchive = ObjectOf<typeof MySQLBinlogArchiveKind>;
