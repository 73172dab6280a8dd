// Helpers for objects an operator owns: owner references, and server-side
// apply only when the live object differs from what we want — so a converged
// object costs no write (the steady-state rule) — and only over an object this
// owner controls: an object of the same name made by someone else is never
// taken over (server-side apply with force would silently adopt it, and
// garbage collection would later delete it with the owner).
import { isConflict, isInvalid, isNotFound } from "./errors.ts";
import type { KubeClient } from "./kube-client.ts";
import type { KubeObject, OwnerReference } from "./object.ts";
import type { ResourceType } from "./resource.ts";

/** An object already exists under the name an owner wants for its own object, and that owner does not control it. */
export class NameConflictError extends Error {
  override name = "NameConflictError";
  readonly kind: string;
  readonly namespace: string | undefined;
  readonly objectName: string;

  constructor(kind: string, namespace: string | undefined, name: string, existing: KubeObject, hint = "delete or rename it, or give the owner another name") {
    const controller = (existing.metadata.ownerReferences ?? []).find((o) => o.controller === true);
    const by = controller ? `controlled by ${controller.kind} ${controller.name}` : "not created by this owner";
    super(`${kind} ${name} already exists${namespace ? ` in namespace ${namespace}` : ""} and is ${by}: it was left as it is; ${hint}`);
    this.kind = kind;
    this.namespace = namespace;
    this.objectName = name;
  }
}

/** The controller reference `obj` declares, if any. */
function controllerOf(obj: KubeObject): OwnerReference | undefined {
  return (obj.metadata.ownerReferences ?? []).find((o) => o.controller === true);
}

/** Whether `obj` is controlled by the owner with this uid. */
export function isControlledBy(obj: KubeObject, ownerUid: string): boolean {
  return (obj.metadata.ownerReferences ?? []).some((o) => o.controller === true && o.uid === ownerUid);
}

/** Throws NameConflictError when `live` exists and is not controlled by the owner with `ownerUid`. */
export function checkControlled(rt: ResourceType, live: KubeObject | undefined, ownerUid: string): void {
  if (live && !isControlledBy(live, ownerUid)) throw new NameConflictError(rt.kind, live.metadata.namespace, live.metadata.name ?? "", live);
}

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
 *
 * When `desired` names a controller (an owned object), the object it lands
 * on must be controlled by the same owner, else NameConflictError and nothing
 * is written. The cache may be behind or not hold the object at all:
 * - with `live`, the apply carries its uid as a precondition — the API server
 *   refuses an apply whose uid differs from the stored object's (one deleted
 *   and made again by someone else), and one whose object no longer exists;
 * - without `live`, the object is read first (a GET on the create path only;
 *   a converged object costs nothing). The API server has no "create only"
 *   precondition for an apply (a uid is refused when nothing exists), so an
 *   object made by someone else between that read and the apply — the same
 *   name, within milliseconds — is the one case not caught.
 */
export async function applyIfChanged<T extends KubeObject>(client: KubeClient, rt: ResourceType, desired: T, live: KubeObject | undefined): Promise<boolean> {
  const owner = controllerOf(desired);
  if (owner) checkControlled(rt, live, owner.uid);
  const { apiVersion: _a, kind: _k, ...comparable } = desired;
  if (live && isSubset(comparable, live)) return false;
  if (!owner) {
    await client.apply(rt, desired, { force: true });
    return true;
  }
  const name = desired.metadata.name ?? "";
  const read = () =>
    client.get<KubeObject>(rt, desired.metadata.namespace, name).catch((e: unknown) => {
      if (isNotFound(e)) return undefined;
      throw e;
    });
  const current = live ?? (await read());
  checkControlled(rt, current, owner.uid);
  const body = current ? { ...desired, metadata: { ...desired.metadata, uid: current.metadata.uid } } : desired;
  try {
    await client.apply(rt, body, { force: true });
  } catch (err) {
    if (!current || !(isConflict(err) || isInvalid(err))) throw err;
    // The uid precondition failed: the cached object was deleted (and perhaps made again) since.
    // Whose is it now? Someone else's: refused; ours or none: applied once more against what is there.
    const now = await read();
    checkControlled(rt, now, owner.uid);
    await client.apply(rt, now ? { ...desired, metadata: { ...desired.metadata, uid: now.metadata.uid } } : desired, { force: true });
  }
  return true;
}
