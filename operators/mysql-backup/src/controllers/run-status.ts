// Status writes of one-shot operations (backups, restores). They happen from
// background tasks, long after the reconcile that started them, so each
// write re-reads the object and retries on conflict instead of using a
// cached copy.
import { isConflict, isNotFound, setCondition, type ConditionUpdate, type KubeClient, type KubeObject, type ResourceType } from "@stateward/core";

export interface RunStatus {
  phase?: "Pending" | "Running" | "Completed" | "Failed";
  observedGeneration?: number;
  conditions?: { type: string; status: "True" | "False" | "Unknown"; reason: string; message: string; lastTransitionTime: string; observedGeneration?: number }[];
  [field: string]: unknown;
}

type WithStatus = KubeObject & { status?: RunStatus };

/**
 * Merges `fields` into the status and sets the Ready condition, re-reading
 * the object on conflict. Returns false when the object is gone.
 */
export async function writeRunStatus(
  client: KubeClient,
  rt: ResourceType,
  namespace: string,
  name: string,
  fields: Partial<RunStatus>,
  ready: Omit<ConditionUpdate, "observedGeneration" | "type">,
): Promise<boolean> {
  for (let attempt = 0; attempt < 5; attempt++) {
    let live: WithStatus;
    try {
      live = await client.get<WithStatus>(rt, namespace, name);
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
    const generation = live.metadata.generation;
    const conditions = setCondition(live.status?.conditions, { ...ready, type: "Ready", observedGeneration: generation });
    const status: RunStatus = { ...live.status, ...fields, observedGeneration: generation, conditions };
    try {
      await client.updateStatus<WithStatus>(rt, { ...live, status });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      if (!isConflict(err)) throw err;
    }
  }
  throw new Error(`could not write the status of ${rt.kind} ${namespace}/${name}: it kept changing (5 conflicts)`);
}
