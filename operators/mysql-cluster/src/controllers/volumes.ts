// Growing a cluster's data volumes when spec.storage.size goes up.
//
// A StatefulSet's claim template cannot change, and the StatefulSet never
// touches the claims it already made. So each existing claim is asked for the
// new size first — the apiserver refuses unless the StorageClass allows
// expansion, and that refusal is what the user is told — and only when every
// claim took it is the StatefulSet deleted with its pods orphaned and created
// again (the next reconcile) with the new template, so that claims made later,
// by a scale-out, get the new size too. The pods keep running throughout; the
// new StatefulSet adopts them, and its revision is the old one (a revision is
// the pod template only), so nothing restarts.
//
// Growing the volume and the filesystem on it is the storage driver's work.
// Progress is the StorageResized condition: False while some claim's capacity
// is below the size (a driver that expands offline waits for the pod to
// restart: FileSystemResizePending), True once every claim has it. The
// condition appears with the first resize; a cluster never resized has none.
import { builtin, compareQuantity, findCondition, isForbidden, isInvalid, isNotFound, messageOf, type ConditionUpdate, type EventRecorder, type KubeClient, type KubeObject } from "@stateward/core";
import type { MySQLCluster } from "../api.ts";
import { clusterNames, ordinalOf, selectorString } from "../resources/names.ts";

export const STORAGE_CONDITION = "StorageResized";
/** The claim template's name; a pod's claim is data-<pod>. */
const CLAIM_TEMPLATE = "data";

interface Claim extends KubeObject {
  spec?: { resources?: { requests?: { storage?: string } } };
  status?: { capacity?: { storage?: string }; conditions?: { type: string; status: string }[] };
}

export interface StorageStep {
  /** The StorageResized condition to write; undefined when there is nothing to say. */
  condition?: Omit<ConditionUpdate, "observedGeneration">;
  /** The StatefulSet is being replaced (deleted, pods orphaned): it must not be applied in this reconcile. */
  replacingStatefulSet: boolean;
}

/**
 * One step of growing the volumes. `templateSize` is the live StatefulSet's
 * claim template size (undefined when there is no StatefulSet, e.g. right
 * after it was deleted to be replaced); a size below it was refused before.
 */
export async function growVolumes(
  d: { client: KubeClient; events: EventRecorder },
  cluster: MySQLCluster,
  templateSize: string | undefined,
  statefulSetTerminating: boolean,
): Promise<StorageStep> {
  const name = cluster.metadata.name ?? "";
  const ns = cluster.metadata.namespace ?? "";
  const size = cluster.spec.storage.size;
  const growing = templateSize !== undefined && compareQuantity(size, templateSize) > 0;
  const previous = findCondition(cluster.status?.conditions, STORAGE_CONDITION);
  // Deleted to be replaced, and not gone yet: the next reconcile creates it.
  if (statefulSetTerminating) return { replacingStatefulSet: true };
  if (!growing && (previous === undefined || previous.status === "True")) return { replacingStatefulSet: false };

  const prefix = `${CLAIM_TEMPLATE}-`;
  const claims = (await d.client.list<Claim>(builtin.persistentVolumeClaim, { namespace: ns, labelSelector: selectorString(name) })).items
    .filter((c) => (c.metadata.name ?? "").startsWith(prefix) && ordinalOf(name, (c.metadata.name ?? "").slice(prefix.length)) !== undefined)
    .sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""));

  // 1. Every claim asks for the size.
  for (const claim of claims) {
    const claimName = claim.metadata.name ?? "";
    if (compareQuantity(claim.spec?.resources?.requests?.storage ?? "0", size) >= 0) continue;
    try {
      await d.client.patch(builtin.persistentVolumeClaim, ns, claimName, { spec: { resources: { requests: { storage: size } } } }, "merge");
    } catch (err) {
      if (isNotFound(err)) continue;
      if (!isForbidden(err) && !isInvalid(err)) throw err;
      // Retried at the steady pace: allowVolumeExpansion can be turned on in the StorageClass meanwhile.
      const message =
        `cannot grow volume ${claimName} to ${size}: ${apiMessage(err)}. ` +
        `Its StorageClass must allow expansion (allowVolumeExpansion: true); the volumes stay at ${templateSize ?? "their size"} and the servers keep running`;
      if (previous?.reason !== "ExpansionRefused" || previous.message !== message) await d.events.record(cluster, "Warning", "ExpansionRefused", message);
      return { condition: { type: STORAGE_CONDITION, status: "False", reason: "ExpansionRefused", message }, replacingStatefulSet: false };
    }
  }

  // 2. The claim template: the StatefulSet goes (its pods stay) and comes back with the new size.
  if (growing) {
    await d.client.delete(builtin.statefulSet, ns, clusterNames(name).statefulSet, { propagationPolicy: "Orphan" }).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
    const message = `${claims.length} volume(s) asked for ${size} (were ${templateSize}); the StatefulSet is recreated with the new claim template, its pods keep running`;
    await d.events.record(cluster, "Normal", "VolumesExpanding", message);
    return { condition: { type: STORAGE_CONDITION, status: "False", reason: "Expanding", message }, replacingStatefulSet: true };
  }

  // 3. Progress, as the storage driver reports it.
  const behind = claims.filter((c) => compareQuantity(c.status?.capacity?.storage ?? "0", size) < 0);
  if (behind.length > 0) {
    const detail = behind.map((c) => {
      const offline = c.status?.conditions?.some((x) => x.type === "FileSystemResizePending" && x.status === "True");
      return `${c.metadata.name ?? ""} has ${c.status?.capacity?.storage ?? "no capacity yet"}${offline ? " (its filesystem grows when its pod restarts)" : ""}`;
    });
    return { condition: { type: STORAGE_CONDITION, status: "False", reason: "Expanding", message: `growing to ${size}: ${detail.join("; ")}` }, replacingStatefulSet: false };
  }
  const message = `every volume has ${size}`;
  if (previous?.status !== "True") await d.events.record(cluster, "Normal", "VolumesExpanded", message);
  return { condition: { type: STORAGE_CONDITION, status: "True", reason: "Resized", message }, replacingStatefulSet: false };
}

/** The apiserver's own words, without the request line the client puts first. */
function apiMessage(err: unknown): string {
  const message = messageOf(err);
  return message.replace(/^[A-Z]+ \/\S+: /, "");
}
