// The CRD schema of a `status.conditions` list, shared by every kind.
import { array, integer, object, optional, string, stringEnum } from "../crd/index.ts";

export function conditionsSchema(description = "The latest observations of the object's state; `Ready` is always present once reconciled.") {
  return array(
    object(
      {
        type: string("Type of condition in CamelCase, e.g. Ready.", { maxLength: 316 }),
        status: stringEnum(["True", "False", "Unknown"], "Status of the condition."),
        reason: string("Machine-readable CamelCase reason for the last transition.", { maxLength: 1024 }),
        message: string("Human-readable details; what to do about it when the status is not the desired one.", { maxLength: 32768 }),
        lastTransitionTime: string("When the status last changed.", { format: "date-time" }),
        observedGeneration: optional(integer("The metadata.generation this condition was computed for.", { minimum: 0 })),
      },
      "A condition of the object (metav1.Condition).",
    ),
    description,
    { listType: "map", listMapKeys: ["type"] },
  );
}
