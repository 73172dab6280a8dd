// `stateward backup <instance>`: creates a MySQLBackup now and follows it
// until it is Completed or Failed.
//
// A MySQLBackup needs to know where to write. A person taking a backup by
// hand wants it where the instance's scheduled backups go, so without storage
// flags the storage (and compression, deletion policy and databases) is taken
// from the instance's MySQLBackupSchedule; with none, from its newest
// MySQLBackup. The flags (--bucket …) or --from-schedule say it explicitly.
// The result says where it came from.
import { isDeepStrictEqual, parseArgs } from "node:util";
import { resourceOf, type KubeClient, type KubeObject } from "@stateward/core";
import { MySQLBackupKind, type MySQLBackup, type MySQLBackupSchedule } from "@stateward/operator-mysql-backup";
import { UsageError } from "../operators.ts";
import {
  checkName,
  connect,
  connectionHelp,
  connectionOptions,
  exitCodesHelp,
  followOptions,
  generatedName,
  getExisting,
  onePositional,
  outputFormat,
  outputOption,
  parseDuration,
  statewardKind,
  timestamp,
} from "./common.ts";
import { followOperation, type Operation } from "./operation.ts";

export const backupUsage = `Usage:
  stateward backup INSTANCE [--databases a,b] [storage] [--no-wait] [--timeout 1h] [-o json|yaml]

Creates a MySQLBackup of the MySQLInstance INSTANCE (a MySQLCluster's is named after the
cluster) now, and follows it until it is Completed or Failed: its phase and what it waits
for are printed to stderr as they change; the result (or, with -o, the final MySQLBackup) to
stdout.

Where it is stored, in this order:
  --bucket B --credentials-secret S [--prefix P] [--endpoint URL] [--region R] [--path-style]
                       this S3 bucket, with the AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
                       of Secret S in the namespace
  --from-schedule NAME as MySQLBackupSchedule NAME stores its backups (its backupTemplate's
                       storage, compression, deletion policy and databases)
  (neither)            as the instance's MySQLBackupSchedule does (when it has one, or several
                       storing in the same place); else where its newest MySQLBackup is

  --databases a,b      the databases to back up (default: the schedule's, else every user database)
  --compression C      gzip, zstd or none (default: the schedule's, else gzip)
  --deletion-policy P  Retain or Delete: what deleting the MySQLBackup does to what it stored
                       (default: the schedule's, else Retain)
  --name NAME          the MySQLBackup's name (default: INSTANCE-manual-YYYYMMDDHHMMSS, UTC)
  --no-wait            create it and exit
  --timeout DURATION   stop following after this long (e.g. 30m; default: no limit)
  -o, --output FORMAT  json or yaml: the MySQLBackup as it ended (or as created, with --no-wait)
${connectionHelp}
${exitCodesHelp}`;

type Storage = MySQLBackup["spec"]["storage"];
type Template = MySQLBackupSchedule["spec"]["backupTemplate"];

export interface StorageFlags {
  bucket?: string;
  prefix?: string;
  endpoint?: string;
  region?: string;
  pathStyle?: boolean;
  credentialsSecret?: string;
  fromSchedule?: string;
}

/** What the new backup takes from elsewhere, and where that was. */
export interface StorageChoice {
  storage: Storage;
  compression?: Template["compression"];
  deletionPolicy?: Template["deletionPolicy"];
  databases?: string[];
  /** "--bucket", "MySQLBackupSchedule nightly", "MySQLBackup db-1". */
  from: string;
}

/**
 * Where a backup of `instance` goes: the flags, else the named schedule,
 * else the instance's schedules (when they agree), else its newest backup.
 * `schedules` and `backups` are those of the namespace.
 */
export function chooseStorage(instance: string, flags: StorageFlags, schedules: MySQLBackupSchedule[], backups: MySQLBackup[]): StorageChoice {
  const storageFlags = flags.bucket !== undefined || flags.credentialsSecret !== undefined || flags.prefix !== undefined || flags.endpoint !== undefined || flags.region !== undefined || flags.pathStyle === true;
  if (storageFlags && flags.fromSchedule !== undefined) throw new UsageError("give either storage flags (--bucket …) or --from-schedule, not both");
  if (storageFlags) {
    if (!flags.bucket || !flags.credentialsSecret) throw new UsageError("--bucket and --credentials-secret are both needed to say where the backup goes");
    const s3: Storage["s3"] = { bucket: flags.bucket, credentialsSecretRef: { name: flags.credentialsSecret } };
    if (flags.prefix !== undefined) s3.prefix = flags.prefix;
    if (flags.endpoint !== undefined) s3.endpoint = flags.endpoint;
    if (flags.region !== undefined) s3.region = flags.region;
    if (flags.pathStyle) s3.forcePathStyle = true;
    return { storage: { s3 }, from: "--bucket" };
  }
  const fromTemplate = (s: MySQLBackupSchedule): StorageChoice => {
    const t = s.spec.backupTemplate;
    return { storage: t.storage, compression: t.compression, deletionPolicy: t.deletionPolicy, databases: t.databases, from: `MySQLBackupSchedule ${s.metadata.name ?? ""}` };
  };
  if (flags.fromSchedule !== undefined) {
    const s = schedules.find((x) => x.metadata.name === flags.fromSchedule);
    if (!s) throw new UsageError(`no MySQLBackupSchedule "${flags.fromSchedule}" in the namespace`);
    return fromTemplate(s);
  }
  const own = schedules.filter((s) => s.spec.backupTemplate.instanceRef.name === instance).sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""));
  const first = own[0];
  if (first) {
    if (own.every((s) => isDeepStrictEqual(s.spec.backupTemplate.storage, first.spec.backupTemplate.storage))) return own.length === 1 ? fromTemplate(first) : { storage: first.spec.backupTemplate.storage, from: `MySQLBackupSchedules ${own.map((s) => s.metadata.name).join(", ")}` };
    throw new UsageError(`the schedules of ${instance} store in different places (${own.map((s) => s.metadata.name).join(", ")}): choose one with --from-schedule NAME, or give --bucket …`);
  }
  const newest = backups
    .filter((b) => b.spec.instanceRef.name === instance)
    .sort((a, b) => (b.metadata.creationTimestamp ?? "").localeCompare(a.metadata.creationTimestamp ?? "") || (b.metadata.name ?? "").localeCompare(a.metadata.name ?? ""))[0];
  if (newest) return { storage: newest.spec.storage, from: `MySQLBackup ${newest.metadata.name ?? ""}` };
  throw new UsageError(`${instance} has no MySQLBackupSchedule or MySQLBackup to take the storage from: give --bucket B --credentials-secret S (and --endpoint, --path-style for an S3-compatible store), or --from-schedule NAME`);
}

/** The new MySQLBackup: the choice, overridden by the flags. */
export function backupManifest(namespace: string, name: string, instance: string, choice: StorageChoice, flags: { databases?: string[]; compression?: string; deletionPolicy?: string }): MySQLBackup {
  const spec: MySQLBackup["spec"] = { instanceRef: { name: instance }, storage: choice.storage };
  const databases = flags.databases ?? choice.databases;
  if (databases && databases.length > 0) spec.databases = databases;
  const compression = flags.compression ?? choice.compression;
  if (compression !== undefined) {
    if (compression !== "gzip" && compression !== "zstd" && compression !== "none") throw new UsageError(`--compression must be gzip, zstd or none, not "${compression}"`);
    spec.compression = compression;
  }
  const deletionPolicy = flags.deletionPolicy ?? choice.deletionPolicy;
  if (deletionPolicy !== undefined) {
    if (deletionPolicy !== "Retain" && deletionPolicy !== "Delete") throw new UsageError(`--deletion-policy must be Retain or Delete, not "${deletionPolicy}"`);
    spec.deletionPolicy = deletionPolicy;
  }
  return {
    apiVersion: MySQLBackupKind.apiVersion,
    kind: MySQLBackupKind.kind,
    metadata: { name, namespace, annotations: { "stateward.io/storage-from": choice.from } },
    spec,
  };
}

async function listItems<T extends KubeObject>(client: KubeClient, kind: string, namespace: string): Promise<T[]> {
  // One page is enough to choose from: the newest backup and the schedules of one instance.
  return (await client.list<T>(resourceOf(await statewardKind(kind)), { namespace })).items;
}

export function list(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const items = value.split(",").map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) throw new UsageError("--databases needs at least one name");
  return items;
}

export async function backup(argv: string[], out: (s: string) => void = (s) => process.stdout.write(s), progress: (s: string) => void = (s) => process.stderr.write(s)): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...connectionOptions,
      ...outputOption,
      ...followOptions,
      databases: { type: "string" },
      compression: { type: "string" },
      "deletion-policy": { type: "string" },
      name: { type: "string" },
      bucket: { type: "string" },
      prefix: { type: "string" },
      endpoint: { type: "string" },
      region: { type: "string" },
      "path-style": { type: "boolean", default: false },
      "credentials-secret": { type: "string" },
      "from-schedule": { type: "string" },
    },
    strict: true,
  });
  const instance = onePositional(positionals, "INSTANCE (the MySQLInstance to back up)");
  const format = outputFormat(values.output);
  const timeoutMs = values.timeout !== undefined ? parseDuration(values.timeout, "--timeout") : 0;
  const name = checkName(values.name ?? generatedName(instance, `manual-${timestamp(new Date())}`), "--name");
  const databases = list(values.databases);
  const { client, namespace } = connect(values);

  await getExisting(client, "MySQLInstance", namespace, instance);
  const [schedules, backups] = await Promise.all([
    listItems<MySQLBackupSchedule>(client, "MySQLBackupSchedule", namespace),
    listItems<MySQLBackup>(client, "MySQLBackup", namespace),
  ]);
  const choice = chooseStorage(instance, {
    bucket: values.bucket, prefix: values.prefix, endpoint: values.endpoint, region: values.region, pathStyle: values["path-style"],
    credentialsSecret: values["credentials-secret"], fromSchedule: values["from-schedule"],
  }, schedules, backups);
  const manifest = backupManifest(namespace, name, instance, choice, { databases, compression: values.compression, deletionPolicy: values["deletion-policy"] });
  const s3 = choice.storage.s3;
  progress(`storage: s3://${s3.bucket}/${s3.prefix ? `${s3.prefix}/` : ""}${namespace}/${name}/ (from ${choice.from})\n`);
  const created = await client.create<Operation>(MySQLBackupKind.resource, manifest);
  return followOperation({ client, kind: "MySQLBackup", created, wait: !values["no-wait"], timeoutMs, format, out, progress });
}

