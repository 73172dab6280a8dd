// Volume expansion on a machine without a storage driver. The apiserver lets a
// claim grow only when its StorageClass allows expansion; LocalPodServers binds
// claims of any class to volumes it makes, so a class of our own with
// allowVolumeExpansion serves. What the driver (external-resizer, kubelet)
// would then do — grow the volume and report the new capacity on the claim — a
// test does with finishExpansion.
import { randomBytes } from "node:crypto";
import { builtin, resourceType, type KubeClient, type KubeObject } from "@stateward/core";

const STORAGE_CLASS = resourceType("storage.k8s.io/v1", "StorageClass", "storageclasses", false);
/** Cluster-scoped: the volumes LocalPodServers makes for claims, and what a driver grows. */
export const PV = resourceType("v1", "PersistentVolume", "persistentvolumes", false);

/** A StorageClass that allows expansion (cluster-scoped: delete it with deleteStorageClass). */
export async function createExpandableStorageClass(client: KubeClient): Promise<string> {
  const name = `sw-expandable-${randomBytes(3).toString("hex")}`;
  await client.create(STORAGE_CLASS, {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: { name },
    provisioner: "stateward.io/local-pod-servers",
    allowVolumeExpansion: true,
    volumeBindingMode: "Immediate",
  } as KubeObject);
  return name;
}

export async function deleteStorageClass(client: KubeClient, name: string): Promise<void> {
  await client.delete(STORAGE_CLASS, undefined, name).catch(() => undefined);
}

/** The driver's part of an expansion: the claim's volume grows to `size` and the claim reports it. */
export async function finishExpansion(client: KubeClient, namespace: string, claim: string, size: string): Promise<void> {
  const pvc = await client.get<KubeObject & { spec: { volumeName?: string } }>(builtin.persistentVolumeClaim, namespace, claim);
  if (pvc.spec.volumeName) await client.patch(PV, undefined, pvc.spec.volumeName, { spec: { capacity: { storage: size } } });
  await client.patch(builtin.persistentVolumeClaim, namespace, claim, { status: { capacity: { storage: size } } }, "merge", "status");
}
