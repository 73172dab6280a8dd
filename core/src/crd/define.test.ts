import { loadYaml, type V1CustomResourceDefinition } from "@kubernetes/client-node";
import Type from "typebox";
import { describe, expect, expectTypeOf, it } from "vitest";
import { crdToYaml } from "./render.ts";
import {
  AGE_COLUMN,
  defineKind,
  object,
  optional,
  STATEWARD_CATEGORY,
  string,
  toClientNodeModel,
  type JsonSchemaProps,
  type ObjectOf,
  type SpecOf,
  type StatusOf,
} from "./index.ts";
import { WidgetKind } from "./widget.fixture.ts";

const manifest = WidgetKind.crdManifest();
const version = manifest.spec.versions[0];
const root = version?.schema.openAPIV3Schema;

/** Keys an apiextensions.k8s.io/v1 JSONSchemaProps may carry in a structural schema. */
const ALLOWED_KEYS = new Set([
  "type",
  "description",
  "title",
  "format",
  "default",
  "example",
  "enum",
  "nullable",
  "pattern",
  "minLength",
  "maxLength",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "items",
  "minItems",
  "maxItems",
  "properties",
  "required",
  "additionalProperties",
  "minProperties",
  "maxProperties",
  "x-kubernetes-int-or-string",
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-embedded-resource",
  "x-kubernetes-list-type",
  "x-kubernetes-list-map-keys",
  "x-kubernetes-map-type",
  "x-kubernetes-validations",
]);

/** Walks a schema like the API server's structural check does; returns every problem found. */
function structuralProblems(node: JsonSchemaProps, path: string, isProperty: boolean): string[] {
  const problems: string[] = [];
  for (const key of Reflect.ownKeys(node)) {
    if (typeof key === "symbol" || !ALLOWED_KEYS.has(key)) problems.push(`${path}: key ${String(key)}`);
  }
  const untyped = node["x-kubernetes-int-or-string"] === true || node["x-kubernetes-preserve-unknown-fields"] === true;
  if (node.type === undefined && !untyped) problems.push(`${path}: no type`);
  if (node["x-kubernetes-int-or-string"] === true && node.type !== undefined) problems.push(`${path}: int-or-string with a type`);
  if (node.properties !== undefined && node.additionalProperties !== undefined) problems.push(`${path}: properties and additionalProperties`);
  if (node.type === "array" && node.items === undefined) problems.push(`${path}: array without items`);
  if (isProperty && path !== ".metadata" && !node.description?.trim()) problems.push(`${path}: no description`);
  for (const [name, child] of Object.entries(node.properties ?? {})) problems.push(...structuralProblems(child, `${path}.${name}`, true));
  if (node.items) problems.push(...structuralProblems(node.items, `${path}[*]`, false));
  if (node.additionalProperties) problems.push(...structuralProblems(node.additionalProperties, `${path}.*`, false));
  return problems;
}

describe("defineKind", () => {
  it("names the CRD <plural>.<group>, one served and storage version with a status subresource", () => {
    expect(manifest.apiVersion).toBe("apiextensions.k8s.io/v1");
    expect(manifest.kind).toBe("CustomResourceDefinition");
    expect(manifest.metadata).toEqual({ name: "widgets.test.stateward.io" });
    expect(WidgetKind.crdName).toBe("widgets.test.stateward.io");
    expect(manifest.spec.group).toBe("test.stateward.io");
    expect(manifest.spec.scope).toBe("Namespaced");
    expect(manifest.spec.versions).toHaveLength(1);
    expect(version).toMatchObject({ name: "v1alpha1", served: true, storage: true, subresources: { status: {} } });
  });

  it("names the kind, always in the stateward category", () => {
    expect(manifest.spec.names).toEqual({
      kind: "Widget",
      listKind: "WidgetList",
      plural: "widgets",
      singular: "widget",
      shortNames: ["wdg"],
      categories: ["testing", STATEWARD_CATEGORY],
    });
    const minimal = defineKind({
      group: "x.stateward.io",
      version: "v1",
      kind: "Gadget",
      plural: "gadgets",
      scope: "Cluster",
      description: "A gadget.",
      spec: object({}, "Spec."),
      status: object({}, "Status."),
      categories: ["stateward"],
    });
    expect(minimal.crdManifest().spec.names).toEqual({ kind: "Gadget", listKind: "GadgetList", plural: "gadgets", singular: "gadget", categories: ["stateward"] });
    expect(minimal.resource.namespaced).toBe(false);
  });

  it("exposes what a REST client needs", () => {
    expect(WidgetKind.apiVersion).toBe("test.stateward.io/v1alpha1");
    expect(WidgetKind.resource).toEqual({
      group: "test.stateward.io",
      version: "v1alpha1",
      apiVersion: "test.stateward.io/v1alpha1",
      kind: "Widget",
      listKind: "WidgetList",
      plural: "widgets",
      namespaced: true,
    });
  });

  it("ends the printer columns with Age, unless given", () => {
    expect(version?.additionalPrinterColumns).toEqual([
      { name: "Phase", type: "string", jsonPath: ".status.phase" },
      { name: "Replicas", type: "integer", jsonPath: ".spec.replicas", description: "Desired replicas." },
      { name: "Image", type: "string", jsonPath: ".spec.image", priority: 1 },
      { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
    ]);
    expect(WidgetKind.printerColumns.at(-1)).toEqual(AGE_COLUMN);
    const own = defineKind({
      group: "x.stateward.io",
      version: "v1",
      kind: "Gadget",
      plural: "gadgets",
      scope: "Namespaced",
      description: "A gadget.",
      spec: object({}, "Spec."),
      status: object({}, "Status."),
      printerColumns: [{ name: "Created", type: "date", jsonPath: ".metadata.creationTimestamp" }],
    });
    expect(own.printerColumns.map((c) => c.name)).toEqual(["Created"]);
  });

  it("wraps spec and status in the kubebuilder root schema", () => {
    expect(root?.type).toBe("object");
    expect(root?.description).toBe("A Widget exercises every field builder of core/crd.");
    expect(Object.keys(root?.properties ?? {})).toEqual(["apiVersion", "kind", "metadata", "spec", "status"]);
    expect(root?.properties?.metadata).toEqual({ type: "object" });
    expect(root?.properties?.apiVersion?.type).toBe("string");
    expect(root?.properties?.kind?.type).toBe("string");
    expect(root?.required).toEqual(["spec"]);
    expect(root?.["x-kubernetes-validations"]).toEqual([{ rule: "self.metadata.name.size() <= 40", message: "name must be at most 40 characters" }]);
  });

  it("renders a structural schema: typed nodes, described fields, nothing TypeBox-only", () => {
    if (root === undefined) throw new Error("no schema");
    expect(structuralProblems(root, "", false)).toEqual([]);
    expect(JSON.stringify(manifest)).not.toMatch(/"~|anyOf|oneOf|allOf|\$ref|patternProperties|uniqueItems/);
  });

  it("renders every builder of the spec", () => {
    const spec = root?.properties?.spec;
    const p = spec?.properties ?? {};
    expect(spec?.required).toEqual(["image", "mode", "reclaimPolicy", "replicas", "storage", "ports"]);
    expect(p.mode).toEqual({ type: "string", description: "How the widget runs.", enum: ["Active", "Passive"], default: "Active" });
    expect(p.reclaimPolicy).toMatchObject({ type: "string", enum: ["Delete", "Retain"], default: "Delete" });
    expect(p.replicas).toMatchObject({ type: "integer", minimum: 0, maximum: 9, default: 1 });
    expect(p.storage).toMatchObject({ "x-kubernetes-int-or-string": true, default: "1Gi" });
    expect(p.storage).not.toHaveProperty("type");
    expect(p.labels).toMatchObject({ type: "object", additionalProperties: { type: "string" } });
    expect(p.ports).toMatchObject({ type: "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], maxItems: 8 });
    expect(p.ports?.items?.properties?.protocol).toMatchObject({ enum: ["TCP", "UDP"], default: "TCP" });
    expect(p.tags).toMatchObject({ "x-kubernetes-list-type": "set", default: [] });
    expect(p.backup?.properties?.retention?.properties?.keep).toMatchObject({ type: "integer", default: 7 });
    expect(p.backup?.["x-kubernetes-validations"]).toEqual([
      { rule: "!has(self.retention) || self.retention.keep <= 100", message: "keep at most 100 backups", fieldPath: ".retention.keep" },
    ]);
    expect(p.config).toEqual({ type: "object", description: "Free-form configuration passed to the workload.", "x-kubernetes-preserve-unknown-fields": true });
    expect(spec?.["x-kubernetes-validations"]).toHaveLength(2);
  });

  it("hands out fresh copies: callers cannot corrupt the definition", () => {
    const a = WidgetKind.crdManifest();
    a.spec.names.categories.push("oops");
    expect(WidgetKind.crdManifest().spec.names.categories).toEqual(["testing", "stateward"]);
    expect(WidgetKind.crd()).toEqual(WidgetKind.crdManifest());
    expect(WidgetKind.crd()).not.toBe(WidgetKind.crd());
  });

  it("refuses names the API server would refuse", () => {
    const base = {
      group: "x.stateward.io",
      version: "v1",
      kind: "Gadget",
      plural: "gadgets",
      scope: "Namespaced" as const,
      description: "A gadget.",
      spec: object({}, "Spec."),
      status: object({}, "Status."),
    };
    expect(() => defineKind({ ...base, group: "local" })).toThrow(/at least one dot/);
    expect(() => defineKind({ ...base, kind: "gadget" })).toThrow(/UpperCamelCase/);
    expect(() => defineKind({ ...base, plural: "Gadgets" })).toThrow(/plural "Gadgets"/);
    expect(() => defineKind({ ...base, shortNames: ["g_d"] })).toThrow(/shortName/);
    expect(() => defineKind({ ...base, description: "" })).toThrow(/description/);
    expect(() => defineKind({ ...base, printerColumns: [{ name: "A", type: "string", jsonPath: "spec.a" }] })).toThrow(/jsonPath/);
    expect(() => defineKind({ ...base, spec: object({ bad: string("") }, "Spec.") })).toThrow(/description/);
    const untyped = object({ ports: Type.Array(object({ name: Type.String() }, "Port."), { description: "Ports." }) }, "Spec.");
    expect(() => defineKind({ ...base, spec: untyped })).toThrow("Gadget.spec.ports[*].name: every field needs a description");
  });
});

describe("client-node interop", () => {
  it("crd() is the wire form; toClientNodeModel is what client-node's own loader makes of it", () => {
    const crd = WidgetKind.crd();
    const model = toClientNodeModel(crd);
    const loaded = loadYaml<V1CustomResourceDefinition>(crdToYaml(WidgetKind));
    expect(model).toEqual(JSON.parse(JSON.stringify(loaded)));
    // The renamed keys, for the record: client-node's serialiser writes them back as wire keys.
    const spec = model.spec.versions[0]?.schema?.openAPIV3Schema?.properties?.spec;
    expect(spec?.x_kubernetes_validations).toHaveLength(2);
    expect(spec?.properties?.reclaimPolicy?._default).toBe("Delete");
    expect(spec?.properties?.reclaimPolicy?._enum).toEqual(["Delete", "Retain"]);
    expect(spec?.properties?.storage?.x_kubernetes_int_or_string).toBe(true);
    // ...but not below `items`/`additionalProperties`, which client-node types as `any`.
    expect(spec?.properties?.ports?.items).toMatchObject({ properties: { protocol: { default: "TCP" } } });
  });
});

describe("static types", () => {
  type Widget = ObjectOf<typeof WidgetKind>;
  type Spec = Widget["spec"];
  type OptionalKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? K : never }[keyof T];

  it("type the object from the schema", () => {
    expectTypeOf<Widget["apiVersion"]>().toEqualTypeOf<"test.stateward.io/v1alpha1">();
    expectTypeOf<Widget["kind"]>().toEqualTypeOf<"Widget">();
    expectTypeOf<Widget["metadata"]["name"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Widget["metadata"]["creationTimestamp"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Spec>().toEqualTypeOf<SpecOf<typeof WidgetKind>>();
    expectTypeOf<NonNullable<Widget["status"]>>().toEqualTypeOf<StatusOf<typeof WidgetKind>>();
    expectTypeOf<OptionalKeys<Widget>>().toEqualTypeOf<"status">();
  });

  it("type enums as literal unions, quantities as string | number, optional fields as optional", () => {
    expectTypeOf<Spec["reclaimPolicy"]>().toEqualTypeOf<"Delete" | "Retain">();
    expectTypeOf<Spec["mode"]>().toEqualTypeOf<"Active" | "Passive">();
    expectTypeOf<Spec["image"]>().toEqualTypeOf<string>();
    expectTypeOf<Spec["replicas"]>().toEqualTypeOf<number>();
    expectTypeOf<Spec["storage"]>().toEqualTypeOf<string | number>();
    expectTypeOf<Spec["labels"]>().toEqualTypeOf<Record<string, string> | undefined>();
    expectTypeOf<Spec["ports"]>().toEqualTypeOf<{ name: string; port: number; protocol?: "TCP" | "UDP" }[]>();
    expectTypeOf<Spec["config"]>().toEqualTypeOf<Record<string, unknown> | undefined>();
    expectTypeOf<NonNullable<Spec["backup"]>>().toEqualTypeOf<{ schedule: string; retention?: { keep: number; since?: string } }>();
    expectTypeOf<OptionalKeys<Spec>>().toEqualTypeOf<
      "ratio" | "paused" | "maxUnavailable" | "labels" | "extraPorts" | "tags" | "backup" | "config"
    >();
    expectTypeOf<NonNullable<Widget["status"]>["phase"]>().toEqualTypeOf<"Pending" | "Running" | "Failed" | undefined>();
  });

  it("reject objects that do not match", () => {
    const w: Widget = {
      apiVersion: "test.stateward.io/v1alpha1",
      kind: "Widget",
      metadata: { name: "w" },
      spec: { image: "nginx", mode: "Active", reclaimPolicy: "Retain", replicas: 1, storage: "1Gi", ports: [{ name: "http", port: 80 }] },
    };
    expect(w.spec.reclaimPolicy).toBe("Retain");
    // @ts-expect-error not one of the enum values
    const bad: Spec["reclaimPolicy"] = "Keep";
    expect(bad).toBe("Keep");
    const o = object({ a: optional(string("A.")) }, "O.");
    expectTypeOf(o.properties.a).not.toBeAny();
  });
});
