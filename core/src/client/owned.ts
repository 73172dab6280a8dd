// Helpers for objects an operator owns: owner references, and server-side
// apply only when the live object differs from what we want — so a converged
// object costs no write (the steady-state rule).
import type { KubeClient } from "./kube-client.ts";
import type { KubeObject, OwnerReference } from "./object.ts";
import type { ResourceType } from "./resource.ts";

/** The controller owner reference that makes `owned` garbage-collected with `owner` and mapped back to it. */
export function controllerReference(owner: KubeObject, rt: ResourceType): OwnerReference {
  if (!owner.metadata.uid || !owner.metadata.name) throw new Error(`owner ${rt.kind} has no uid/name yet`);
  return {
    apiVersion: rt.apiVersion,
    kind: rt.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * True when every field set in `desired` has the same value in `live`
 * (arrays compared element by element). Fields the server or other managers
 * add to `live` are ignored.
 */
export function isSubset(desired: unknown, live: unknown): boolean {
  if (desired === null || typeof desired !== "object") return desired === live;
  if (Array.isArray(desired)) {
    return Array.isArray(live) && live.length === desired.length && desired.every((d, i) => isSubset(d, live[i]));
  }
  if (live === null || typeof live !== "object" || Array.isArray(live)) return false;
  const l = live as Record<string, unknown>;
  return Object.entries(desired as Record<string, unknown>).every(([k, v]) => v === undefined || isSubset(v, l[k]));
}

/**
 * Server-side applies `desired` unless `live` (from the cache) already
 * matches it. Returns true when it wrote.
 */
export async function applyIfChanged<T extends KubeObject>(client: KubeClient, rt: ResourceType, desired: T, live: KubeObject | undefined): Promise<boolean> {
  const { apiVersion: _a, kind: _k, ...comparable } = desired;
  if (live && isSubset(comparable, live)) return false;
  await client.apply(rt, desired, { force: true });
  return true;
}
