// defineKind: one declaration of a custom kind yields its TypeScript type
// (`ObjectOf<typeof XKind>`), what a REST client needs to address it, and its
// CustomResourceDefinition.
import type { V1CustomResourceDefinition, V1JSONSchemaProps, V1ListMeta, V1ManagedFieldsEntry, V1ObjectMeta } from "@kubernetes/client-node";
import type { Static, TObject } from "typebox";
import { CrdSchemaError, toJsonSchema, type Json, type JsonSchemaProps, type ValidationRule } from "./schema.ts";

/** Every Stateward kind is in this category, so `kubectl get stateward` lists them all. */
export const STATEWARD_CATEGORY = "stateward";

export type Scope = "Namespaced" | "Cluster";

export type PrinterColumnType = "string" | "integer" | "number" | "boolean" | "date";

/** An `additionalPrinterColumns` entry: a column of `kubectl get`. */
export interface PrinterColumn {
  name: string;
  type: PrinterColumnType;
  /** A simple JSONPath into the object, e.g. `.status.phase`. */
  jsonPath: string;
  description?: string;
  /** 0 (default) shows in `kubectl get`; greater values only with `-o wide`. */
  priority?: number;
  format?: "int32" | "int64" | "float" | "double" | "byte" | "date" | "date-time" | "password";
}

/** The `Age` column every kind ends with, as kubectl shows for built-in kinds. */
export const AGE_COLUMN: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };

export interface KindOptions<Group extends string, Version extends string, Kind extends string, Spec extends TObject, Status extends TObject> {
  /** API group, a DNS subdomain with at least one dot, e.g. `stateward.io`. */
  group: Group;
  /** e.g. `v1alpha1`. */
  version: Version;
  /** UpperCamelCase, e.g. `DatabaseUser`. */
  kind: Kind;
  /** Lower-case plural used in URLs and `kubectl get`, e.g. `databaseusers`. */
  plural: string;
  /** Defaults to the lower-cased kind. */
  singular?: string;
  shortNames?: readonly string[];
  /** Extra categories; `stateward` is always added. */
  categories?: readonly string[];
  scope: Scope;
  /** The desired state, built with `object(...)`. */
  spec: Spec;
  /** The observed state, built with `object(...)`; served through the status subresource. */
  status: Status;
  /** `kubectl get` columns; an `Age` column is appended unless one is given. */
  printerColumns?: readonly PrinterColumn[];
  /** What the kind is; the top-level text of `kubectl explain <kind>`. */
  description: string;
  /** CEL rules on the whole object (`self.spec`, `self.metadata.name`, …). */
  validations?: readonly ValidationRule[];
  /** The `scale` subresource, so `kubectl scale` and autoscalers work on the kind. */
  scale?: ScaleSubresource;
}

/** JSON paths of the `scale` subresource (see the CRD documentation). */
export interface ScaleSubresource {
  /** e.g. `.spec.replicas` */
  specReplicasPath: string;
  /** e.g. `.status.replicas` */
  statusReplicasPath: string;
  /** e.g. `.status.selector`: a string label selector, needed by the HorizontalPodAutoscaler. */
  labelSelectorPath?: string;
}

/**
 * What a REST client needs to address the kind. Structurally a
 * `ResourceType` of the client (`apiVersion`, `kind`, `plural`, `namespaced`),
 * so it can be passed to its `resourcePath`; the REST path of the collection
 * is `/apis/<group>/<version>[/namespaces/<ns>]/<plural>`.
 */
export interface ResourceInfo {
  readonly group: string;
  readonly version: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly listKind: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

/**
 * client-node's `V1ObjectMeta` as it is on the wire: the client-node model
 * types timestamps as `Date` (its deserialiser converts them), but an object
 * read as JSON carries RFC 3339 strings.
 */
export type CustomObjectMeta = Omit<V1ObjectMeta, "creationTimestamp" | "deletionTimestamp" | "managedFields"> & {
  creationTimestamp?: string;
  deletionTimestamp?: string;
  managedFields?: (Omit<V1ManagedFieldsEntry, "time"> & { time?: string })[];
};

/** A custom object as stored and served: what `ObjectOf<typeof XKind>` resolves to. */
export interface CustomObject<Spec, Status, Kind extends string = string, ApiVersion extends string = string> {
  apiVersion: ApiVersion;
  kind: Kind;
  metadata: CustomObjectMeta;
  spec: Spec;
  status?: Status;
}

/** A list response (`<Kind>List`). */
export interface CustomObjectList<Item> {
  apiVersion: string;
  kind: string;
  metadata: V1ListMeta;
  items: Item[];
}

/** The `CustomResourceDefinition` in its wire form (exactly what `crdToYaml` writes and the API server reads). */
export interface CrdManifest {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: { name: string };
  spec: {
    group: string;
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
      shortNames?: string[];
      categories: string[];
    };
    scope: Scope;
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      schema: { openAPIV3Schema: JsonSchemaProps };
      subresources: { status: Record<string, never>; scale?: ScaleSubresource };
      additionalPrinterColumns: PrinterColumn[];
    }[];
  };
}

export interface KindDefinition<
  Spec extends TObject = TObject,
  Status extends TObject = TObject,
  Kind extends string = string,
  ApiVersion extends string = string,
> {
  readonly group: string;
  readonly version: string;
  /** `<group>/<version>`. */
  readonly apiVersion: ApiVersion;
  readonly kind: Kind;
  /** `<Kind>List`. */
  readonly listKind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames: readonly string[];
  /** The given categories plus `stateward`. */
  readonly categories: readonly string[];
  readonly scope: Scope;
  readonly description: string;
  /** The TypeBox schemas: `Static<typeof XKind.spec>` is the spec type. */
  readonly spec: Spec;
  readonly status: Status;
  /** The printer columns as rendered, `Age` included. */
  readonly printerColumns: readonly PrinterColumn[];
  readonly resource: ResourceInfo;
  /** `<plural>.<group>`, the CRD's object name. */
  readonly crdName: string;
  /**
   * The CRD, a fresh copy on each call, in wire form: schema nodes carry
   * `default`, `enum` and `x-kubernetes-*` keys exactly as the API server
   * reads them, so it can be `JSON.stringify`-ed, applied with the core
   * client or written as YAML.
   *
   * Typed as client-node's `V1CustomResourceDefinition`, whose schema model
   * names those keys `_default`, `_enum`, `x_kubernetes_*` (TypeScript cannot
   * see the wire keys). Do not hand it to client-node's typed APIs
   * (`ApiextensionsV1Api`, `KubernetesObjectApi`): their serialiser would drop
   * the wire keys silently. Convert with `toClientNodeModel` first.
   */
  crd(): V1CustomResourceDefinition;
  /** The same wire-form CRD as `crd()`, with a precise type (`JsonSchemaProps` schema). */
  crdManifest(): CrdManifest;
}

/** `ObjectOf<typeof WidgetKind>`: the TypeScript type of a Widget object. */
export type ObjectOf<D> =
  D extends KindDefinition<infer Spec extends TObject, infer Status extends TObject, infer Kind extends string, infer ApiVersion extends string>
    ? CustomObject<Static<Spec>, Static<Status>, Kind, ApiVersion>
    : never;
export type SpecOf<D> = ObjectOf<D>["spec"];
export type StatusOf<D> = NonNullable<ObjectOf<D>["status"]>;
export type ListOf<D> = CustomObjectList<ObjectOf<D>>;

const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;

/**
 * Declares a custom kind.
 *
 * @throws CrdSchemaError when a name is not what the API server accepts, or
 * the schema is not structural (checked eagerly, so a bad kind fails at import).
 */
export function defineKind<
  const Group extends string,
  const Version extends string,
  const Kind extends string,
  Spec extends TObject,
  Status extends TObject,
>(options: KindOptions<Group, Version, Kind, Spec, Status>): KindDefinition<Spec, Status, Kind, `${Group}/${Version}`> {
  const { group, version, kind, plural, scope, spec, status, description } = options;
  const singular = options.singular ?? kind.toLowerCase();
  const shortNames = [...(options.shortNames ?? [])];
  const categories = unique([...(options.categories ?? []), STATEWARD_CATEGORY]);
  const apiVersion = `${group}/${version}` as const;
  const listKind = `${kind}List`;
  const crdName = `${plural}.${group}`;

  const where = `kind ${kind || "<unnamed>"}`;
  if (!DNS1123_SUBDOMAIN.test(group) || !group.includes(".") || group.length > 253) {
    fail(where, `group ${JSON.stringify(group)} must be a lower-case DNS subdomain with at least one dot`);
  }
  if (!DNS1035_LABEL.test(version) || version.length > 63) fail(where, `version ${JSON.stringify(version)} must be a DNS label, e.g. v1alpha1`);
  if (!KIND.test(kind)) fail(where, `kind ${JSON.stringify(kind)} must be UpperCamelCase`);
  const labels = [
    { what: "plural", name: plural },
    { what: "singular", name: singular },
    ...shortNames.map((name) => ({ what: "shortName", name })),
    ...categories.map((name) => ({ what: "category", name })),
  ];
  for (const { what, name } of labels) {
    if (typeof name !== "string" || !DNS1035_LABEL.test(name) || name.length > 63) fail(where, `${what} ${JSON.stringify(name)} must be a lower-case DNS label`);
  }
  if (unique(shortNames).length !== shortNames.length) fail(where, "shortNames repeat a name");
  if (crdName.length > 253) fail(where, `CRD name ${crdName} is longer than 253 characters`);
  if (scope !== "Namespaced" && scope !== "Cluster") fail(where, `scope ${JSON.stringify(scope)} must be Namespaced or Cluster`);
  if (typeof description !== "string" || description.trim() === "") fail(where, "a kind needs a description (kubectl explain shows it)");

  const printerColumns = withAge(options.printerColumns ?? [], where);

  // Rendered once, eagerly: a schema error surfaces where the kind is declared.
  const openAPIV3Schema: JsonSchemaProps = toJsonSchema(
    {
      type: "object",
      description,
      properties: {
        apiVersion: { type: "string", description: API_VERSION_DESCRIPTION },
        kind: { type: "string", description: KIND_DESCRIPTION },
        // Replaced by ObjectMeta in the published OpenAPI; a CRD may only restrict name/generateName here.
        metadata: { type: "object", description: "Standard object metadata." },
        spec,
        status,
      },
      required: ["spec"],
      ...(options.validations !== undefined && options.validations.length > 0 ? { "x-kubernetes-validations": options.validations } : {}),
    },
    kind, // errors read "Widget.spec.ports[*].name: …"
  );
  for (const part of ["spec", "status"] as const) {
    if (openAPIV3Schema.properties?.[part]?.type !== "object") fail(`${kind}.${part}`, `${part} must be an object(...)`);
  }
  // Exactly `metadata: {type: object}` as kubebuilder emits it.
  const props = openAPIV3Schema.properties;
  if (props !== undefined) props.metadata = { type: "object" };

  const manifest: CrdManifest = {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: crdName },
    spec: {
      group,
      names: {
        kind,
        listKind,
        plural,
        singular,
        ...(shortNames.length > 0 ? { shortNames } : {}),
        categories,
      },
      scope,
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          schema: { openAPIV3Schema },
          subresources: options.scale ? { status: {}, scale: { ...options.scale } } : { status: {} },
          additionalPrinterColumns: printerColumns,
        },
      ],
    },
  };
  const frozen = JSON.stringify(manifest);

  return {
    group,
    version,
    apiVersion,
    kind,
    listKind,
    plural,
    singular,
    shortNames: Object.freeze(shortNames),
    categories: Object.freeze(categories),
    scope,
    description,
    spec,
    status,
    printerColumns: Object.freeze(printerColumns.map((c) => Object.freeze({ ...c }))),
    resource: Object.freeze({ group, version, apiVersion, kind, listKind, plural, namespaced: scope === "Namespaced" }),
    crdName,
    crd: (): V1CustomResourceDefinition => JSON.parse(frozen) as CrdManifest,
    crdManifest: () => JSON.parse(frozen) as CrdManifest,
  };
}

const API_VERSION_DESCRIPTION =
  "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESCRIPTION =
  "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

function withAge(columns: readonly PrinterColumn[], where: string): PrinterColumn[] {
  const out: PrinterColumn[] = [];
  const names = new Set<string>();
  for (const c of columns) {
    if (typeof c.name !== "string" || c.name.trim() === "") fail(where, "a printer column needs a name");
    if (names.has(c.name)) fail(where, `printer column ${JSON.stringify(c.name)} is given twice`);
    names.add(c.name);
    if (!["string", "integer", "number", "boolean", "date"].includes(c.type)) fail(where, `printer column ${c.name}: unknown type ${JSON.stringify(c.type)}`);
    if (typeof c.jsonPath !== "string" || !c.jsonPath.startsWith(".")) fail(where, `printer column ${c.name}: jsonPath must start with "."`);
    if (c.priority !== undefined && (!Number.isInteger(c.priority) || c.priority < 0)) fail(where, `printer column ${c.name}: priority must be a non-negative integer`);
    const column: PrinterColumn = { name: c.name, type: c.type, jsonPath: c.jsonPath };
    if (c.description !== undefined) column.description = c.description;
    if (c.priority !== undefined) column.priority = c.priority;
    if (c.format !== undefined) column.format = c.format;
    out.push(column);
  }
  if (!out.some((c) => c.name === AGE_COLUMN.name || c.jsonPath === AGE_COLUMN.jsonPath)) out.push({ ...AGE_COLUMN });
  return out;
}

/**
 * A wire-form CRD (`crd()`) -> the `@kubernetes/client-node` model its typed
 * APIs (`ApiextensionsV1Api`, `KubernetesObjectApi`) expect. The models
 * rename keys of schema nodes (`default` -> `_default`, `enum` -> `_enum`,
 * `$ref` -> `ref`, `$schema` -> `schema`, `x-kubernetes-a-b` ->
 * `x_kubernetes_a_b`) and recurse only where a field is typed as a schema
 * (`properties`, `allOf`, `not`, …); `items` and `additionalProperties` are
 * typed `any` and passed through as they are, so below them the wire form
 * stays — exactly what client-node's own `loadYaml` produces (the tests
 * check this). The result must not be `JSON.stringify`-ed.
 */
export function toClientNodeModel(crd: V1CustomResourceDefinition): V1CustomResourceDefinition {
  const copy = JSON.parse(JSON.stringify(crd)) as V1CustomResourceDefinition;
  for (const version of copy.spec.versions) {
    const schema = version.schema?.openAPIV3Schema;
    if (schema !== undefined) version.schema = { openAPIV3Schema: schemaToModel(schema as JsonSchemaProps) };
  }
  return copy;
}

const MODEL_KEYS: Record<string, string> = { default: "_default", enum: "_enum", $ref: "ref", $schema: "schema" };
const MODEL_SCHEMA_MAPS = new Set(["properties", "patternProperties", "definitions"]);
const MODEL_SCHEMA_LISTS = new Set(["allOf", "anyOf", "oneOf"]);

function schemaToModel(schema: JsonSchemaProps): V1JSONSchemaProps {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema) as [string, Json | JsonSchemaProps][]) {
    const name = MODEL_KEYS[key] ?? (key.startsWith("x-kubernetes-") ? key.replaceAll("-", "_") : key);
    if (MODEL_SCHEMA_MAPS.has(key)) {
      out[name] = Object.fromEntries(Object.entries(value as Record<string, JsonSchemaProps>).map(([k, v]) => [k, schemaToModel(v)]));
    } else if (MODEL_SCHEMA_LISTS.has(key)) {
      out[name] = (value as JsonSchemaProps[]).map(schemaToModel);
    } else if (key === "not") {
      out[name] = schemaToModel(value as JsonSchemaProps);
    } else {
      out[name] = value;
    }
  }
  return out;
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}

function fail(path: string, message: string): never {
  throw new CrdSchemaError(path, message);
}
