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

async function writeFinalizers<T extends KubeObject>(client: KubeClient, rt: ResourceType, obj: T, finalizers: string[], annotations?: Record<string, string>): Promise<T> {
  return client.patch<T>(rt, obj.metadata.namespace, obj.metadata.name!, {
    metadata: { finalizers, resourceVersion: obj.metadata.resourceVersion, ...(annotations ? { annotations } : {}) },
  });
}

/**
 * Adds the finalizer if missing; returns the updated object (or obj itself when nothing changed).
 * `annotations` (default none) are set in the same write — written when either the finalizer or one
 * of them is missing — so that a reconciler records something on the object at no extra request.
 */
export async function addFinalizer<T extends KubeObject>(
  client: KubeClient,
  rt: ResourceType,
  obj: T,
  finalizer: string,
  annotations: Record<string, string> = {},
): Promise<T> {
  const missing = Object.entries(annotations).some(([key, value]) => obj.metadata.annotations?.[key] !== value);
  if (hasFinalizer(obj, finalizer) && !missing) return obj;
  const finalizers = hasFinalizer(obj, finalizer) ? (obj.metadata.finalizers ?? []) : [...(obj.metadata.finalizers ?? []), finalizer];
  return writeFinalizers(client, rt, obj, finalizers, missing ? annotations : undefined);
}

/** Removes the finalizer if present. */
export async function removeFinalizer<T extends KubeObject>(client: KubeClient, rt: ResourceType, obj: T, finalizer: string): Promise<T> {
  if (!hasFinalizer(obj, finalizer)) return obj;
  return writeFinalizers(client, rt, obj, (obj.metadata.finalizers ?? []).filter((f) => f !== finalizer));
}
