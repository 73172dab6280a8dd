// Finalizers: added before the operator creates anything outside Kubernetes,
// removed as soon as the cleanup succeeded. Both writes carry the object's
// resourceVersion, so a concurrent change makes them fail with 409 Conflict
// (the reconcile is retried) instead of overwriting someone else's list.
import type { KubeClient, KubeObject, ResourceType } from "../client/index.ts";

export function hasFinalizer(obj: KubeObject, finalizer: string): boolean {
  return obj.metadata.finalizers?.includes(finalizer) ?? false;
}

export function isBeingDeleted(obj: KubeObject): boolean {
  return obj.metadata.deletionTimestamp !== undefined;
}

async function writeFinalizers<T extends KubeObject>(client: KubeClient, rt: ResourceType, obj: T, finalizers: string[]): Promise<T> {
  return client.patch<T>(rt, obj.metadata.namespace, obj.metadata.name!, {
    metadata: { finalizers, resourceVersion: obj.metadata.resourceVersion },
  });
}

/** Adds the finalizer if missing; returns the updated object (or obj itself when nothing changed). */
export async function addFinalizer<T extends KubeObject>(client: KubeClient, rt: ResourceType, obj: T, finalizer: string): Promise<T> {
  if (hasFinalizer(obj, finalizer)) return obj;
  return writeFinalizers(client, rt, obj, [...(obj.metadata.finalizers ?? []), finalizer]);
}

/** Removes the finalizer if present. */
export async function removeFinalizer<T extends KubeObject>(client: KubeClient, rt: ResourceType, obj: T, finalizer: string): Promise<T> {
  if (!hasFinalizer(obj, finalizer)) return obj;
  return writeFinalizers(client, rt, obj, (obj.metadata.finalizers ?? []).filter((f) => f !== finalizer));
}
