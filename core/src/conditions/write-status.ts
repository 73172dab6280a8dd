// The one way status is written: what a mutation makes of the object's
// status, only when it changed (a converged object costs no API call, the
// steady-state rule), through the status subresource with the object's
// resourceVersion.
import { isDeepStrictEqual } from "node:util";
import { isConflict, type KubeClient, type KubeObject, type ResourceType } from "../client/index.ts";
import { setCondition, type Condition, type ConditionUpdate } from "./conditions.ts";

interface WithStatus extends KubeObject {
  status?: unknown;
}

/** The status an object should have, computed from the object as read. */
export type StatusMutation<T extends WithStatus> = (obj: T) => NonNullable<T["status"]>;

export interface WriteStatusOptions {
  /**
   * Writes tried in all when others change the object meanwhile (409): each
   * conflict re-reads the object and applies the mutation again. Defaults to
   * 1: a reconcile working from the cache lets the conflict fail it, and is
   * retried on the new version (its status describes the spec it converged,
   * not a newer one). Work that outlives its reconcile (a backup's run) or a
   * decision that only adds fields re-reads instead.
   */
  attempts?: number;
}

/** Plain JSON: no undefined fields, so that a status compares equal to what the server returns. */
function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value ?? {})) as T;
}

/**
 * Writes `mutate(obj)` as the object's status, unless it is what the status
 * already is. Returns the object as stored, or the object itself when nothing
 * changed. A conflict is retried on a fresh read up to `attempts` times in all;
 * the last one throws. A NotFound is thrown as it is.
 */
export async function writeStatus<T extends WithStatus>(client: KubeClient, rt: ResourceType, obj: T, mutate: StatusMutation<T>, options: WriteStatusOptions = {}): Promise<T> {
  const attempts = options.attempts ?? 1;
  let current = obj;
  for (let attempt = 1; ; attempt++) {
    const next = plain(mutate(current));
    if (isDeepStrictEqual(next, plain(current.status))) return current;
    try {
      // A shallow copy: the object is only serialized, never changed (a deep copy of the cached object
      // was a whole DatabaseUser's allocation per status write for nothing, docs/performance.md finding 31).
      return await client.updateStatus<T>(rt, { ...current, status: next });
    } catch (err) {
      if (!isConflict(err) || attempt >= attempts) {
        if (attempts > 1 && isConflict(err)) {
          const where = current.metadata.namespace ? `${current.metadata.namespace}/${current.metadata.name ?? ""}` : (current.metadata.name ?? "");
          throw new Error(`could not write the status of ${rt.kind} ${where}: it kept changing (${attempts} conflicts)`, { cause: err });
        }
        throw err;
      }
    }
    current = await client.get<T>(rt, current.metadata.namespace ?? "", current.metadata.name ?? "");
  }
}

interface ConditionedStatus {
  observedGeneration?: number;
  conditions?: Condition[];
}

/**
 * The usual mutation: `fields` merged into the status, the Ready condition
 * and any `others` set, all for the object's generation.
 */
export function readyStatus<T extends KubeObject & { status?: ConditionedStatus }>(
  fields: Partial<Omit<NonNullable<T["status"]>, "conditions" | "observedGeneration">>,
  ready: Omit<ConditionUpdate, "type" | "observedGeneration">,
  others: readonly Omit<ConditionUpdate, "observedGeneration">[] = [],
): StatusMutation<T> {
  return (obj) => {
    const generation = obj.metadata.generation;
    let conditions = setCondition(obj.status?.conditions, { type: "Ready", ...ready, observedGeneration: generation });
    for (const c of others) conditions = setCondition(conditions, { ...c, observedGeneration: generation });
    return { ...obj.status, ...fields, observedGeneration: generation, conditions };
  };
}
