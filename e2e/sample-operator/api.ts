// The sample operator of the core's integration tests: a tiny `Widget` kind
// whose reconciler writes a ConfigMap it owns and a Ready condition, keeps a
// record in an "external system" (cleaned up through a finalizer), and can be
// told to fail.
import { boolean, conditionsSchema, defineKind, integer, object, optional, string, type ObjectOf } from "@stateward/core";

export const WidgetKind = defineKind({
  group: "sample.stateward.io",
  version: "v1alpha1",
  kind: "Widget",
  plural: "widgets",
  shortNames: ["wdg"],
  scope: "Namespaced",
  description: "A sample object for testing the Stateward core: it is rendered into a ConfigMap.",
  spec: object(
    {
      message: string("Text written into the owned ConfigMap.", { minLength: 1, maxLength: 64 }),
      replicas: optional(integer("A number with bounds, to exercise schema validation.", { minimum: 1, maximum: 10, default: 1 })),
      fail: optional(boolean("Make every reconcile fail (to test retries and the condition message).")),
    },
    "The desired widget.",
  ),
  status: object(
    {
      observedGeneration: optional(integer("The generation last reconciled.")),
      configMap: optional(string("Name of the owned ConfigMap.")),
      conditions: optional(conditionsSchema()),
    },
    "The observed state of the widget.",
  ),
  printerColumns: [
    { name: "Message", type: "string", jsonPath: ".spec.message" },
    { name: "Ready", type: "string", jsonPath: `.status.conditions[?(@.type=="Ready")].status` },
  ],
});

export type Widget = ObjectOf<typeof WidgetKind>;
