// A sample kind for the tests of this folder: its spec uses every builder.
import {
  array,
  boolean,
  defineKind,
  integer,
  intOrString,
  map,
  number,
  object,
  optional,
  preserveUnknown,
  quantity,
  string,
  stringEnum,
} from "./index.ts";

/** Reused in two places on purpose: the YAML must not turn the second use into an alias. */
const port = object(
  {
    name: string("Name of the port, unique in the list.", { pattern: "^[a-z][-a-z0-9]*$", maxLength: 15 }),
    port: integer("Port number.", { minimum: 1, maximum: 65535, format: "int32" }),
    protocol: optional(stringEnum(["TCP", "UDP"], "Transport protocol.", { default: "TCP" })),
  },
  "A named network port.",
);

export const WidgetKind = defineKind({
  group: "test.stateward.io",
  version: "v1alpha1",
  kind: "Widget",
  plural: "widgets",
  shortNames: ["wdg"],
  categories: ["testing"],
  scope: "Namespaced",
  description: "A Widget exercises every field builder of core/crd.",
  spec: object(
    {
      image: string("Container image reference.", { minLength: 1, maxLength: 255 }),
      mode: string("How the widget runs.", { enum: ["Active", "Passive"], default: "Active" }),
      reclaimPolicy: stringEnum(["Delete", "Retain"], "What happens to the data when the Widget is deleted.", { default: "Delete" }),
      replicas: integer("Number of replicas.", { minimum: 0, maximum: 9, default: 1 }),
      ratio: optional(number("Share of traffic, between 0 and 1.", { minimum: 0, maximum: 1 })),
      paused: optional(boolean("Stop reconciling while true.", { default: false })),
      storage: quantity("Volume size, e.g. 10Gi.", { default: "1Gi" }),
      maxUnavailable: optional(intOrString("Pods that may be down during an update: a number or a percentage.", { pattern: "^[0-9]+%?$" })),
      labels: optional(map(string("Label value."), "Labels copied onto the pods.", { maxProperties: 64 })),
      ports: array(port, "Ports the widget listens on, merged by name.", { listType: "map", listMapKeys: ["name"], maxItems: 8 }),
      extraPorts: optional(array(port, "More ports, replaced as a whole.")),
      tags: optional(array(string("A tag."), "Free-form tags.", { listType: "set", default: [] })),
      backup: optional(
        object(
          {
            schedule: string("Cron schedule.", { pattern: "^\\S+( \\S+){4}$" }),
            retention: optional(
              object(
                {
                  keep: integer("How many backups to keep.", { minimum: 1, default: 7 }),
                  since: optional(string("Keep nothing older than this.", { format: "date-time" })),
                },
                "How long backups are kept.",
              ),
            ),
          },
          "Scheduled backups.",
          { validations: [{ rule: "!has(self.retention) || self.retention.keep <= 100", message: "keep at most 100 backups", fieldPath: ".retention.keep" }] },
        ),
      ),
      config: optional(preserveUnknown("Free-form configuration passed to the workload.")),
    },
    "The desired state of the Widget.",
    {
      validations: [
        { rule: "self.replicas == 0 || size(self.ports) > 0", message: "a running widget needs a port", reason: "FieldValueRequired" },
        { rule: "self.reclaimPolicy == oldSelf.reclaimPolicy", messageExpression: "'reclaimPolicy is immutable, was ' + oldSelf.reclaimPolicy" },
      ],
    },
  ),
  status: object(
    {
      phase: optional(stringEnum(["Pending", "Running", "Failed"], "Lifecycle phase.")),
      readyReplicas: optional(integer("Replicas ready.", { minimum: 0 })),
      observedGeneration: optional(integer("The metadata.generation last reconciled.", { format: "int64" })),
    },
    "The observed state of the Widget.",
  ),
  printerColumns: [
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "Replicas", type: "integer", jsonPath: ".spec.replicas", description: "Desired replicas." },
    { name: "Image", type: "string", jsonPath: ".spec.image", priority: 1 },
  ],
  validations: [{ rule: "self.metadata.name.size() <= 40", message: "name must be at most 40 characters" }],
});
