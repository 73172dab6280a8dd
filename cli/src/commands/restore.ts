// `stateward restore <backup> --to <instance>`: creates a MySQLRestore of a
// MySQLBackup into a MySQLInstance and follows it until it ends. The target is
// never implied — a restore replaces tables — so --to is required, even to
// restore into the instance the backup was taken from.
import { parseArgs } from "node:util";
import { MySQLRestoreKind, type MySQLRestore } from "@stateward/operator-mysql-backup";
import { UsageError } from "../operators.ts";
import { list } from "./backup.ts";
import {
  CommandError,
  EXIT,
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
  timestamp,
} from "./common.ts";
import { followOperation, type Operation } from "./operation.ts";

export const restoreUsage = `Usage:
  stateward restore BACKUP --to INSTANCE [--databases a,b] [--mode Staged|InPlace] [--no-wait] [--timeout 1h] [-o json|yaml]

Creates a MySQLRestore of the MySQLBackup BACKUP into the MySQLInstance INSTANCE and follows
it until it is Completed or Failed (progress on stderr, the result on stdout). The restored
databases' tables are replaced; tables the backup does not contain stay.

  --to INSTANCE        the MySQLInstance to restore into (required, even for the backup's own)
  --databases a,b      restore only these databases (default: every one in the backup)
  --mode MODE          Staged (default: built aside, swapped in atomically once verified) or
                       InPlace (no extra space; a failure leaves the target partly restored)
  --name NAME          the MySQLRestore's name (default: BACKUP-restore-YYYYMMDDHHMMSS, UTC)
  --no-wait            create it and exit
  --timeout DURATION   stop following after this long (default: no limit)
  -o, --output FORMAT  json or yaml: the MySQLRestore as it ended (or as created, with --no-wait)
${connectionHelp}
${exitCodesHelp}`;

export async function restore(argv: string[], out: (s: string) => void = (s) => process.stdout.write(s), progress: (s: string) => void = (s) => process.stderr.write(s)): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { ...connectionOptions, ...outputOption, ...followOptions, to: { type: "string" }, databases: { type: "string" }, mode: { type: "string" }, name: { type: "string" } },
    strict: true,
  });
  const backupName = onePositional(positionals, "BACKUP (the MySQLBackup to restore)");
  if (!values.to) throw new UsageError("--to INSTANCE is required: the MySQLInstance whose tables the restore replaces");
  const mode = values.mode;
  if (mode !== undefined && mode !== "Staged" && mode !== "InPlace") throw new UsageError(`--mode must be Staged or InPlace, not "${mode}"`);
  const format = outputFormat(values.output);
  const timeoutMs = values.timeout !== undefined ? parseDuration(values.timeout, "--timeout") : 0;
  const name = checkName(values.name ?? generatedName(backupName, `restore-${timestamp(new Date())}`), "--name");
  const databases = list(values.databases);
  const { client, namespace } = connect(values);

  const source = await getExisting<Operation>(client, "MySQLBackup", namespace, backupName);
  if (source.status?.phase === "Failed") throw new CommandError(EXIT.failed, `MySQLBackup ${namespace}/${backupName} failed; there is nothing to restore`);
  await getExisting(client, "MySQLInstance", namespace, values.to);
  const spec: MySQLRestore["spec"] = { instanceRef: { name: values.to }, source: { backupRef: { name: backupName } } };
  if (databases) spec.databases = databases;
  if (mode) spec.mode = mode;
  const manifest: MySQLRestore = { apiVersion: MySQLRestoreKind.apiVersion, kind: MySQLRestoreKind.kind, metadata: { name, namespace }, spec };
  if (source.status?.phase !== "Completed") progress(`MySQLBackup ${namespace}/${backupName} is ${source.status?.phase ?? "not started"}; the restore waits for it to complete\n`);
  const created = await client.create<Operation>(MySQLRestoreKind.resource, manifest);
  return followOperation({ client, kind: "MySQLRestore", created, wait: !values["no-wait"], timeoutMs, format, out, progress });
}
