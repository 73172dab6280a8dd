// Status writes that happen only when something changed: a converged object
// costs no API call (the steady-state rule).
import { isDeepStrictEqual } from "node:util";
import { setCondition, type Condition, type ConditionUpdate, type KubeClient, type KubeObject, type ResourceType } from "@stateward/core";

interface WithStatus<S> extends KubeObject {
  status?: S;
}

/** Plain JSON: no undefined fields, so that a status compares equal to what the server returns. */
function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/**
 * Writes `fields` and the Ready condition into the object's status (through
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
): Promise<T> {
  const generation = obj.metadata.generation;
  const conditions = setCondition(obj.status?.conditions, { type: "Ready", ...ready, observedGeneration: generation });
  const next = plain({ ...obj.status, ...fields, observedGeneration: generation, conditions } as S);
  if (isDeepStrictEqual(next, plain(obj.status ?? {}))) return obj;
  return client.updateStatus<T>(rt, { ...structuredClone(obj), status: next });
}
