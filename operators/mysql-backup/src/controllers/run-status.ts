// Status writes of one-shot operations (backups, restores). They happen from
// background tasks, long after the reconcile that started them, so each
// write reads the object first and re-reads it on conflict instead of using a
// cached copy.
import { isNotFound, readyStatus, writeStatus, type ConditionUpdate, type KubeClient, type KubeObject, type ResourceType } from "@stateward/core";

export interface RunStatus {
  phase?: "Pending" | "Running" | "Completed" | "Failed";
  observedGeneration?: number;
  conditions?: { type: string; status: "True" | "False" | "Unknown"; reason: string; message: string; lastTransitionTime: string; observedGeneration?: number }[];
  [field: string]: unknown;
}

type WithStatus = KubeObject & { status?: RunStatus };

/** Writes tried in all while others change the object. */
const WRITE_ATTEMPTS = 5;

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
  try {
    const live = await client.get<WithStatus>(rt, namespace, name);
    await writeStatus(client, rt, live, readyStatus<WithStatus>(fields, ready), { attempts: WRITE_ATTEMPTS });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}
