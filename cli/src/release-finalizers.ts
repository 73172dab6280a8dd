// `stateward release-finalizers`: for when the manager is gone for good (the
// chart uninstalled first, the Deployment scaled to zero) and objects with a
// Stateward finalizer hold their namespace in Terminating forever — only the
// manager removes its finalizers, after its cleanup. This command lists every
// Stateward object carrying one, says what that finalizer would have cleaned
// up (an account on a MySQL server, a backup folder in S3), and with --yes
// removes the finalizers without cleaning anything: what they would have
// removed is left behind, and the listing says where. Secrets are looked at
// too: a MySQLInstance's admin and CA Secrets carry the in-use finalizer while
// DatabaseUsers need them.
import { parseArgs } from "node:util";
// config.js, not the package index, which loads the whole generated API client (slim-client-node.ts).
import { KubeConfig } from "@kubernetes/client-node/dist/config.js";
import { KubeClient, builtin, isForbidden, isNotFound, messageOf, removeFinalizer, resourceOf, uniqueKinds, type KubeObject, type ResourceType } from "@stateward/core";
import { FINALIZER as DROP_ACCOUNT_FINALIZER, IN_USE_FINALIZER } from "@stateward/operator-database-user";
import { BACKUP_FINALIZER, RESTORE_FINALIZER, completedStorage, describeStorage, restoreRunId, stagingDatabasesPattern, type MySQLBackup, type MySQLRestore } from "@stateward/operator-mysql-backup";
import { listAll } from "./commands/common.ts";
import { UsageError, selectOperators } from "./operators.ts";

/** Every finalizer Stateward writes is in this domain. */
export const FINALIZER_PREFIX = "stateward.io/";

export const releaseUsage = `Usage:
  stateward release-finalizers (--namespace NS | --all-namespaces) [--yes] [--kubeconfig PATH]

Lists every Stateward object (and Secret) with a Stateward finalizer and what that
finalizer would have cleaned up. Only for when the manager is gone: with the manager
running, delete objects normally and let it clean up.

  --namespace NS       objects in this namespace
  --all-namespaces     objects in every namespace
  --dry-run            only list (the default)
  --yes, --confirm     remove the finalizers; what they would have cleaned up is left behind
  --kubeconfig PATH    kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)

Exit status: 0 done (or nothing found); 1 some finalizers could not be removed (see
the messages; objects not listed as released keep theirs); 2 usage error; 4 the
Kubernetes API could not be reached or refused a list (nothing was removed).
`;

type Described = KubeObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

export interface Cleanup {
  /** What the finalizer does before it is removed, e.g. "drop the MySQL account 'app'@'%' on MySQLInstance shop/db". */
  action: string;
  /** What stays behind when the finalizer is removed without it; undefined when nothing does. */
  leftBehind?: string;
}

/** What `finalizer` on `obj` (of `kind`) would have cleaned up, in words a user can act on. */
export function describeCleanup(kind: string, obj: Described, finalizer: string): Cleanup {
  const spec = obj.spec ?? {};
  const ns = obj.metadata.namespace ?? "";
  const instance = (spec.instanceRef as { name?: string } | undefined)?.name ?? "?";
  if (kind === "DatabaseUser" && finalizer === DROP_ACCOUNT_FINALIZER) {
    if (spec.deletionPolicy === "Retain") return { action: "do nothing (deletionPolicy Retain keeps the MySQL account)" };
    const user = typeof spec.user === "string" ? spec.user : (obj.metadata.name ?? "");
    const host = typeof spec.host === "string" ? spec.host : "%";
    const account = `the MySQL account '${user}'@'${host}' on MySQLInstance ${ns}/${instance}`;
    return { action: `drop ${account}`, leftBehind: account };
  }
  if (kind === "MySQLBackup" && finalizer === BACKUP_FINALIZER) {
    // A backup holds the finalizer until its run ends whatever its policy: an unfinished run's partial upload is removed.
    const phase = obj.status?.phase;
    // A failed run's finalizer deletes nothing; its location may even name another backup's folder (BackupExists).
    if (phase === "Failed") return { action: "do nothing (the backup failed; its status and Events say whether its run left anything in the bucket)" };
    const retain = (spec.deletionPolicy ?? "Retain") !== "Delete";
    if (retain && phase === "Completed") return { action: "do nothing (deletionPolicy Retain keeps the stored backup)" };
    if (phase === "Completed") {
      const folder = `the backup folder ${describeStorage(completedStorage(obj as MySQLBackup))}`;
      return { action: `delete ${folder} (its objects and any incomplete multipart upload)`, leftBehind: folder };
    }
    const location = obj.status?.location;
    if (typeof location !== "string" || location === "") return { action: "do nothing (no backup was stored)" };
    const partial = `the partial upload of a backup that did not finish, in ${location}`;
    return { action: `remove ${partial}`, leftBehind: partial };
  }
  if (kind === "MySQLRestore" && finalizer === RESTORE_FINALIZER) {
    const phase = obj.status?.phase;
    if (phase === "Completed" || phase === "Failed") return { action: "do nothing (the restore has ended; its own cleanup ran)" };
    if (phase !== "Running") return { action: "do nothing (the restore has not started)" };
    // In place there is nothing staged: the target holds what was applied, with or without the finalizer.
    if (obj.status?.mode === "InPlace") return { action: "do nothing (an in-place restore stages nothing; its target may hold part of the data)" };
    const staging = `the restore's staging databases (${stagingDatabasesPattern(restoreRunId(obj as MySQLRestore))}) on MySQLInstance ${ns}/${instance}`;
    return { action: `drop ${staging}`, leftBehind: staging };
  }
  if ((kind === "MySQLInstance" || kind === "Secret") && finalizer === IN_USE_FINALIZER) {
    return { action: "do nothing (it keeps the object while DatabaseUsers need it to drop their accounts; those are listed on their own)" };
  }
  return { action: `do what ${finalizer} does (not known to this version of stateward)`, leftBehind: `whatever ${finalizer} would have cleaned up` };
}

export interface Finding {
  kind: string;
  namespace: string | undefined;
  name: string;
  beingDeleted: boolean;
  finalizers: ({ name: string } & Cleanup)[];
}

/** The Stateward finalizers of one object and what each would have done; none → undefined. */
export function findingOf(kind: string, obj: Described): Finding | undefined {
  const finalizers = (obj.metadata.finalizers ?? []).filter((f) => f.startsWith(FINALIZER_PREFIX));
  if (finalizers.length === 0) return undefined;
  return {
    kind,
    namespace: obj.metadata.namespace,
    name: obj.metadata.name ?? "",
    beingDeleted: obj.metadata.deletionTimestamp !== undefined,
    finalizers: finalizers.map((f) => ({ name: f, ...describeCleanup(kind, obj, f) })),
  };
}

export async function releaseFinalizers(argv: string[], out: (s: string) => void = (s) => process.stdout.write(s)): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      namespace: { type: "string", short: "n" },
      "all-namespaces": { type: "boolean", short: "A", default: false },
      "dry-run": { type: "boolean", default: false },
      yes: { type: "boolean", short: "y", default: false },
      confirm: { type: "boolean", default: false },
      kubeconfig: { type: "string" },
    },
    strict: true,
  });
  const all = values["all-namespaces"];
  if (!values.namespace === !all) throw new UsageError("give either --namespace NS or --all-namespaces");
  const apply = values.yes || values.confirm;
  if (apply && values["dry-run"]) throw new UsageError("--dry-run and --yes contradict each other");

  const kubeConfig = new KubeConfig();
  if (values.kubeconfig) kubeConfig.loadFromFile(values.kubeconfig);
  else kubeConfig.loadFromDefault();
  const client = new KubeClient({ kubeConfig, fieldManager: "stateward-release-finalizers" });

  const kinds = uniqueKinds((await selectOperators()).flatMap((m) => m.kinds));
  const findings: { finding: Finding; obj: Described; rt: ResourceType }[] = [];
  for (const kind of kinds) {
    if (kind.scope === "Cluster" && !all) continue;
    let objects: Described[];
    try {
      objects = await listAll<Described>(client, kind, kind.scope === "Namespaced" && !all ? values.namespace : undefined);
    } catch (err) {
      if (isNotFound(err)) continue; // That CRD is not installed: nothing of this kind exists.
      throw err;
    }
    for (const obj of objects) {
      const finding = findingOf(kind.kind, obj);
      if (finding) findings.push({ finding, obj, rt: resourceOf(kind) });
    }
  }
  // Secrets as metadata only: their values are never read. Without the right to list them, the rest is still
  // released (said on stderr): an instance's Secret kept in use then stays for the user to release by hand.
  try {
    let cont: string | undefined;
    do {
      const page = await client.list<Described>(builtin.secret, { namespace: all ? undefined : values.namespace, metadataOnly: true, limit: 500, continue: cont });
      // An empty PartialObjectMetadataList comes with items: null.
      for (const obj of page.items ?? []) {
        const finding = findingOf("Secret", obj);
        if (finding) findings.push({ finding, obj, rt: builtin.secret });
      }
      cont = page.metadata?.continue || undefined;
    } while (cont);
  } catch (err) {
    if (!isForbidden(err)) throw err;
    process.stderr.write(
      `stateward: cannot list Secrets in ${all ? "any namespace" : `namespace ${values.namespace ?? ""}`} (forbidden): a Secret a MySQLInstance keeps in use ` +
        `(finalizer ${IN_USE_FINALIZER}) is not listed; remove that finalizer by hand if one stays\n`,
    );
  }

  const where = all ? "any namespace" : `namespace ${values.namespace ?? ""}`;
  if (findings.length === 0) {
    out(`No Stateward object with a Stateward finalizer in ${where}.\n`);
    return 0;
  }
  out(`${findings.length} Stateward object(s) with Stateward finalizers in ${where}:\n`);
  for (const { finding: f } of findings) {
    const id = f.namespace ? `${f.namespace}/${f.name}` : f.name;
    out(`\n${f.kind} ${id}${f.beingDeleted ? " (being deleted)" : " (not being deleted)"}\n`);
    for (const fin of f.finalizers) {
      out(`  finalizer ${fin.name} would ${fin.action}\n`);
      if (fin.leftBehind) out(`    released without the manager, it leaves behind ${fin.leftBehind}\n`);
    }
  }
  if (!apply) {
    out(`\nDry run: nothing changed. With --yes these finalizers are removed WITHOUT their cleanup:\n` +
      `what is listed as left behind stays, for you to remove by hand.\n`);
    return 0;
  }
  out("\n");
  let failed = 0;
  for (const { finding: f, obj, rt } of findings) {
    const id = f.namespace ? `${f.namespace}/${f.name}` : f.name;
    try {
      let current = obj;
      for (const fin of f.finalizers) current = await removeFinalizer(client, rt, current, fin.name);
      const left = f.finalizers.flatMap((x) => (x.leftBehind ? [x.leftBehind] : []));
      out(`released ${f.kind} ${id}${left.length ? `; left behind: ${left.join("; ")}` : ""}\n`);
    } catch (err) {
      if (isNotFound(err)) {
        out(`${f.kind} ${id} is already gone\n`);
        continue;
      }
      failed++;
      process.stderr.write(`stateward: could not release ${f.kind} ${id}: ${messageOf(err)}\n`);
    }
  }
  return failed > 0 ? 1 : 0;
}
