// Status writes that happen only when something changed: a converged object
// costs no API call (the steady-state rule).
import { isDeepStrictEqual } from "node:util";
import type { KubeClient, KubeObject, ResourceType } from "../client/index.ts";
import { setCondition, type Condition, type ConditionUpdate } from "./conditions.ts";

interface WithStatus<S> extends KubeObject {
  status?: S;
}

/** Plain JSON: no undefined fields, so that a status compares equal to what the server returns. */
function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/**
 * Writes `fields`, the Ready condition and any `others` into the object's status (through
 * the status subresource, with its resourceVersion: a concurrent change makes
 * it fail with 409 and the reconcile is retried). Returns the object as
 * stored, or `obj` itself when nothing changed.
 */
export async function writeStatus<S extends { observedGeneration?: number; conditions?: Condition[] }, T extends WithStatus<S>>(
  client: KubeClient,
  rt: ResourceType,
  obj: T,
  fields: Partial<Omit<S, "conditions" | "observedGeneration">>,
  ready: Omit<ConditionUpdate, "type" | "observedGeneration">,
  others: readonly Omit<ConditionUpdate, "observedGeneration">[] = [],
): Promise<T> {
  const generation = obj.metadata.generation;
  let conditions = setCondition(obj.status?.conditions, { type: "Ready", ...ready, observedGeneration: generation });
  for (const c of others) conditions = setCondition(conditions, { ...c, observedGeneration: generation });
  const next = plain({ ...obj.status, ...fields, observedGeneration: generation, conditions } as S);
  if (isDeepStrictEqual(next, plain(obj.status ?? {}))) return obj;
  return client.updateStatus<T>(rt, { ...structuredClone(obj), status: next });
}
