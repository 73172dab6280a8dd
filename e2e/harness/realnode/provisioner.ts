// The real node's storage: a small provisioner for the default StorageClass
// (stateward-local). For a claim of that class whose pod the scheduler put on
// the node (WaitForFirstConsumer: the claim names the selected node), it makes
// a folder and a `local` PersistentVolume pinned to the node — a local volume,
// unlike a hostPath one, gets the pod's fsGroup, so uid 999 can write it. A
// claim that asks for more gets it (what an external resizer does; a folder
// has no size to grow). A released volume is deleted, folder and all.
//
// Runs as a process of the environment (recorded and stopped by pid):
//   node e2e/harness/realnode/provisioner.ts --kubeconfig FILE --dir DIR --node NAME
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions, type V1PersistentVolume, type V1PersistentVolumeClaim } from "@kubernetes/client-node";
import { messageOf } from "@stateward/core/errors";

/** Kept in step with node.ts (not imported: this process loads only what it needs). */
const STORAGE_CLASS = "stateward-local";
const PROVISIONED_BY = "stateward.io/local";
const SELECTED_NODE = "volume.kubernetes.io/selected-node";

const { values } = parseArgs({ options: { kubeconfig: { type: "string" }, dir: { type: "string" }, node: { type: "string" } }, strict: true });
if (!values.kubeconfig || !values.dir || !values.node) throw new Error("usage: provisioner.ts --kubeconfig FILE --dir DIR --node NAME");
const dir = resolve(values.dir);
const node = values.node;
const kc = new KubeConfig();
kc.loadFromFile(values.kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

function log(message: string, fields: Record<string, unknown> = {}): void {
  console.log(JSON.stringify({ time: new Date().toISOString(), message, ...fields }));
}

function volumeName(claim: V1PersistentVolumeClaim): string {
  return `pvc-${claim.metadata?.uid ?? ""}`;
}

async function provision(claim: V1PersistentVolumeClaim): Promise<void> {
  const ns = claim.metadata?.namespace ?? "";
  const name = claim.metadata?.name ?? "";
  const pv = volumeName(claim);
  const path = join(dir, pv);
  // Root-owned 0755: the kubelet gives it the pod's fsGroup (group-writable, setgid).
  mkdirSync(path, { recursive: true, mode: 0o755 });
  const volume: V1PersistentVolume = {
    metadata: { name: pv, annotations: { "pv.kubernetes.io/provisioned-by": PROVISIONED_BY } },
    spec: {
      capacity: { storage: claim.spec?.resources?.requests?.storage ?? "1Gi" },
      accessModes: claim.spec?.accessModes ?? ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Delete",
      storageClassName: STORAGE_CLASS,
      volumeMode: "Filesystem",
      local: { path },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: [node] }] }] } },
      claimRef: { namespace: ns, name, uid: claim.metadata?.uid },
    },
  };
  try {
    await core.createPersistentVolume({ body: volume });
    log("provisioned", { claim: `${ns}/${name}`, volume: pv, path });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
}

async function expand(claim: V1PersistentVolumeClaim, volume: V1PersistentVolume): Promise<void> {
  const wanted = claim.spec?.resources?.requests?.storage;
  if (!wanted || volume.spec?.capacity?.storage === wanted && claim.status?.capacity?.storage === wanted) return;
  // The API refuses a smaller request than the claim's capacity, so a different request is a larger one.
  await core.patchPersistentVolume({ name: volume.metadata?.name ?? "", body: { spec: { capacity: { storage: wanted } } } }, mergePatch);
  await core.patchNamespacedPersistentVolumeClaimStatus(
    { name: claim.metadata?.name ?? "", namespace: claim.metadata?.namespace ?? "", body: { status: { capacity: { storage: wanted }, conditions: null, allocatedResources: { storage: wanted } } } },
    mergePatch,
  );
  log("expanded", { claim: `${claim.metadata?.namespace}/${claim.metadata?.name}`, size: wanted });
}

async function reclaim(volume: V1PersistentVolume): Promise<void> {
  const path = volume.spec?.local?.path ?? "";
  // Only folders this provisioner made.
  if (path.startsWith(`${dir}/`)) rmSync(path, { recursive: true, force: true });
  await core.deletePersistentVolume({ name: volume.metadata?.name ?? "" }).catch((err: unknown) => {
    if ((err as { code?: number }).code !== 404) throw err;
  });
  log("deleted", { volume: volume.metadata?.name, path });
}

async function tick(): Promise<void> {
  const [claims, volumes] = await Promise.all([core.listPersistentVolumeClaimForAllNamespaces(), core.listPersistentVolume()]);
  const ours = volumes.items.filter((v) => v.metadata?.annotations?.["pv.kubernetes.io/provisioned-by"] === PROVISIONED_BY);
  const byName = new Map(ours.map((v) => [v.metadata?.name ?? "", v]));
  for (const claim of claims.items) {
    if (claim.spec?.storageClassName !== STORAGE_CLASS || claim.metadata?.deletionTimestamp) continue;
    const bound = claim.spec.volumeName ? byName.get(claim.spec.volumeName) : undefined;
    if (bound) await expand(claim, bound);
    else if (!claim.spec.volumeName && claim.metadata?.annotations?.[SELECTED_NODE] === node) await provision(claim);
  }
  for (const volume of ours) {
    if (volume.status?.phase === "Released" || volume.status?.phase === "Failed") await reclaim(volume);
  }
}

let stopping = false;
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => (stopping = true));
mkdirSync(dir, { recursive: true });
let announced = false;
while (!stopping) {
  try {
    await tick();
    if (!announced && !existsSync(join(dir, ".ready"))) writeFileSync(join(dir, ".ready"), "");
    announced = true;
  } catch (err) {
    log("tick failed", { error: messageOf(err) });
  }
  await sleep(1_000);
}
process.exit(0);
