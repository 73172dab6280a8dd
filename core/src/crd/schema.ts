// Field builders for CRD schemas: thin helpers over TypeBox that give each
// field its static TypeScript type and a Kubernetes *structural* OpenAPI v3
// schema at the same time, and `toJsonSchema`, which turns a TypeBox schema
// into the plain JSON an apiextensions.k8s.io/v1 JSONSchemaProps accepts.
//
// Rules the builders follow (and `toJsonSchema` enforces, so hand-written
// TypeBox types that break them are refused instead of yielding a CRD the API
// server rejects or, worse, silently prunes):
//   - every field carries a description (`kubectl explain` shows it);
//   - every node has a `type`, except int-or-string and preserve-unknown nodes;
//   - no `$ref`, `anyOf`/`oneOf`/`allOf`/`not`, `patternProperties`, `const`,
//     `uniqueItems`, and never `additionalProperties` beside `properties`.
//
// One file of ~700 lines on purpose: the builders and `toJsonSchema` enforce
// these rules with the same checks (defaults, validation rules, patterns,
// JSON values), so each rule is written once, here.
import Type from "typebox";
import type { Static, TArray, TBoolean, TInteger, TNumber, TObject, TOptional, TProperties, TSchema, TString, TUnsafe } from "typebox";

/** A JSON value, as it appears in `default`, `enum` and `example`. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** The reasons an `x-kubernetes-validations` rule may report (apiextensions FieldValueErrorReason). */
export type ValidationReason = "FieldValueInvalid" | "FieldValueForbidden" | "FieldValueRequired" | "FieldValueDuplicate";

/** A CEL validation rule, rendered into `x-kubernetes-validations`. */
export interface ValidationRule {
  /** The CEL expression; `self` is the value of the field the rule sits on. */
  rule: string;
  /** A fixed message shown when the rule fails (one line). */
  message?: string;
  /** A CEL expression evaluating to the message; takes precedence over `message`. */
  messageExpression?: string;
  reason?: ValidationReason;
  /** Where the error is reported, relative to the field, e.g. `.spec.replicas`. */
  fieldPath?: string;
  /** Lets a transition rule (using `oldSelf`) also run when there is no old value. */
  optionalOldSelf?: boolean;
}

/**
 * A node of an apiextensions.k8s.io/v1 `openAPIV3Schema`, as it is written in
 * YAML/JSON (wire keys: `default`, `enum`, `x-kubernetes-*`). This is the
 * subset the builders produce and `toJsonSchema` lets through.
 */
export interface JsonSchemaProps {
  type?: "object" | "array" | "string" | "integer" | "number" | "boolean";
  description?: string;
  title?: string;
  format?: string;
  default?: Json;
  example?: Json;
  enum?: Json[];
  nullable?: boolean;
  // strings
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  // numbers
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  multipleOf?: number;
  // arrays
  items?: JsonSchemaProps;
  minItems?: number;
  maxItems?: number;
  // objects
  properties?: Record<string, JsonSchemaProps>;
  required?: string[];
  additionalProperties?: JsonSchemaProps;
  minProperties?: number;
  maxProperties?: number;
  // Kubernetes extensions
  "x-kubernetes-int-or-string"?: true;
  "x-kubernetes-preserve-unknown-fields"?: true;
  "x-kubernetes-embedded-resource"?: boolean;
  "x-kubernetes-list-type"?: ListType;
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-map-type"?: MapType;
  "x-kubernetes-validations"?: ValidationRule[];
}

/** How server-side apply merges a list: replace whole (`atomic`), as a set of scalars, or as a map keyed by item fields. */
export type ListType = "atomic" | "set" | "map";
/** How server-side apply merges an object: field by field (`granular`) or replace whole (`atomic`). */
export type MapType = "granular" | "atomic";

/** String formats the API server knows (apiextensions `supportedFormats`; `date-time` is accepted as `datetime`). */
export type StringFormat =
  | "bsonobjectid"
  | "uri"
  | "email"
  | "hostname"
  | "ipv4"
  | "ipv6"
  | "cidr"
  | "mac"
  | "uuid"
  | "uuid3"
  | "uuid4"
  | "uuid5"
  | "isbn"
  | "isbn10"
  | "isbn13"
  | "creditcard"
  | "ssn"
  | "hexcolor"
  | "rgbcolor"
  | "byte"
  | "password"
  | "date"
  | "duration"
  | "datetime"
  | "date-time";

/** Options every builder accepts. */
export interface FieldOptions<T> {
  /** Applied by the API server when the field is absent (structural defaulting). */
  default?: T;
  /** CEL rules, rendered as `x-kubernetes-validations`. */
  validations?: readonly ValidationRule[];
}

export interface StringOptions<T extends string = string> extends FieldOptions<T> {
  /** An RE2 regular expression (the API server's dialect: no lookaround, no backreferences). */
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  format?: StringFormat;
}

export interface IntegerOptions extends FieldOptions<number> {
  minimum?: number;
  maximum?: number;
  multipleOf?: number;
  format?: "int32" | "int64";
}

export interface NumberOptions extends FieldOptions<number> {
  minimum?: number;
  maximum?: number;
  multipleOf?: number;
  format?: "float" | "double";
}

/** The names of an array item's fields, for `listMapKeys` (none unless the items are objects). */
export type ItemKey<T extends TSchema> =
  Static<T> extends readonly unknown[] ? never : Static<T> extends Record<string, unknown> ? Extract<keyof Static<T>, string> : never;

export type ArrayOptions<T extends TSchema> = FieldOptions<Static<T>[]> & {
  minItems?: number;
  maxItems?: number;
} & (
    | { listType?: "atomic" | "set"; listMapKeys?: undefined }
    | {
        /** A list of objects merged by key; the key fields must be scalar and required (or defaulted). */
        listType: "map";
        listMapKeys: readonly [ItemKey<T>, ...ItemKey<T>[]];
      }
  );

export interface ObjectOptions<P extends TProperties> extends FieldOptions<Partial<Static<TObject<P>>>> {
  mapType?: MapType;
}

export interface MapOptions<V extends TSchema> extends FieldOptions<Record<string, Static<V>>> {
  minProperties?: number;
  maxProperties?: number;
  mapType?: MapType;
}

export interface IntOrStringOptions extends FieldOptions<string | number> {
  /** Applies to string values only. */
  pattern?: string;
}

/** A schema was written that the API server would reject, or that this module refuses to emit. */
export class CrdSchemaError extends Error {
  /** Where in the schema, e.g. `.spec.ports[*].name`. */
  readonly path: string;
  constructor(path: string, message: string) {
    super(`${path || "<root>"}: ${message}`);
    this.name = "CrdSchemaError";
    this.path = path;
  }
}

/**
 * The pattern Kubernetes puts on `resource.Quantity` fields (as controller-gen
 * does): an optional sign, a decimal number, then a binary suffix (Ki..Ei), a
 * decimal suffix (n, u, m, k, M..E) or a decimal exponent.
 */
export const QUANTITY_PATTERN =
  "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$";

// ---------------------------------------------------------------------------
// Builders

/** A string; with `enum` the static type is the union of the given literals. */
export function string<const E extends readonly [string, ...string[]]>(
  description: string,
  opts: StringOptions<E[number]> & { enum: E },
): TUnsafe<E[number]>;
export function string(description: string, opts?: StringOptions & { enum?: undefined }): TString;
export function string(
  description: string,
  opts: StringOptions & { enum?: readonly string[] } = {},
): TString | TUnsafe<string> {
  const node = stringNode(description, opts, opts.enum);
  return opts.enum === undefined ? Type.String(node) : Type.Unsafe<string>({ type: "string", ...node });
}

/** A string restricted to the given values, e.g. `stringEnum(["Delete", "Retain"], "…", { default: "Delete" })`. */
export function stringEnum<const E extends readonly [string, ...string[]]>(
  values: E,
  description: string,
  opts: StringOptions<E[number]> = {},
): TUnsafe<E[number]> {
  return Type.Unsafe<E[number]>({ type: "string", ...stringNode(description, opts, values) });
}

export function integer(description: string, opts: IntegerOptions = {}): TInteger {
  const node = numericNode(description, opts, "integer");
  return Type.Integer(node);
}

export function number(description: string, opts: NumberOptions = {}): TNumber {
  const node = numericNode(description, opts, "number");
  return Type.Number(node);
}

export function boolean(description: string, opts: FieldOptions<boolean> = {}): TBoolean {
  const node = common(description, opts);
  if (opts.default !== undefined && typeof opts.default !== "boolean") fail(label(description), "default must be a boolean");
  return Type.Boolean(node);
}

/** A list of `items`. `listType: "map"` with `listMapKeys` makes server-side apply merge items by key. */
export function array<T extends TSchema>(items: T, description: string, opts: NoInfer<ArrayOptions<T>> = {}): TArray<T> {
  const at = label(description);
  const node = common(description, opts);
  assign(node, { minItems: count(opts.minItems, "minItems", at), maxItems: count(opts.maxItems, "maxItems", at) });
  checkRange(opts.minItems, opts.maxItems, "minItems", "maxItems", at);
  if (opts.listType !== undefined) node["x-kubernetes-list-type"] = opts.listType;
  if (opts.listMapKeys !== undefined) node["x-kubernetes-list-map-keys"] = [...opts.listMapKeys];
  if (opts.default !== undefined && !Array.isArray(opts.default)) fail(at, "default must be an array");
  // Check the list semantics now, against the item schema as it will be emitted.
  checkList(node, toJsonSchema(items, `${at}[*]`), at);
  return Type.Array(items, node);
}

/**
 * An object with the given fields. Fields are required unless wrapped in
 * `optional(...)`, exactly as in TypeBox.
 */
export function object<P extends TProperties>(properties: P, description: string, opts: NoInfer<ObjectOptions<P>> = {}): TObject<P> {
  const node = common(description, opts);
  if (opts.mapType !== undefined) node["x-kubernetes-map-type"] = opts.mapType;
  if (opts.default !== undefined && !isPlainObject(opts.default)) fail(label(description), "default must be an object");
  return Type.Object(properties, node);
}

/** A string-keyed map (`additionalProperties`), e.g. labels. Static type `Record<string, Static<V>>`. */
export function map<V extends TSchema>(values: V, description: string, opts: NoInfer<MapOptions<V>> = {}): TUnsafe<Record<string, Static<V>>> {
  const at = label(description);
  const node = common(description, opts);
  assign(node, {
    minProperties: count(opts.minProperties, "minProperties", at),
    maxProperties: count(opts.maxProperties, "maxProperties", at),
  });
  checkRange(opts.minProperties, opts.maxProperties, "minProperties", "maxProperties", at);
  if (opts.mapType !== undefined) node["x-kubernetes-map-type"] = opts.mapType;
  if (opts.default !== undefined && !isPlainObject(opts.default)) fail(at, "default must be an object");
  return Type.Unsafe<Record<string, Static<V>>>({ type: "object", ...node, additionalProperties: values });
}

/** A `resource.Quantity`: `"500m"`, `"1Gi"`, `2`. Int-or-string with the Kubernetes quantity pattern. */
export function quantity(description: string, opts: FieldOptions<string | number> = {}): TUnsafe<string | number> {
  return intOrString(description, { ...opts, pattern: QUANTITY_PATTERN });
}

/** An `IntOrString` (e.g. a port number or name, `"25%"`). No `type`: `x-kubernetes-int-or-string: true`. */
export function intOrString(description: string, opts: IntOrStringOptions = {}): TUnsafe<string | number> {
  const at = label(description);
  const node = common(description, opts);
  node["x-kubernetes-int-or-string"] = true;
  if (opts.pattern !== undefined) node.pattern = regex(opts.pattern, at);
  const d = opts.default;
  if (d !== undefined) {
    if (typeof d === "number") {
      if (!Number.isInteger(d)) fail(at, `default ${d} is neither an integer nor a string`);
    } else if (typeof d !== "string") {
      fail(at, "default must be an integer or a string");
    } else if (opts.pattern !== undefined && !new RegExp(opts.pattern).test(d)) {
      fail(at, `default ${JSON.stringify(d)} does not match the pattern`);
    }
  }
  return Type.Unsafe<string | number>(node);
}

/** An object whose content the API server keeps as is (`x-kubernetes-preserve-unknown-fields: true`). */
export function preserveUnknown(description: string, opts: FieldOptions<Record<string, Json>> = {}): TUnsafe<Record<string, unknown>> {
  const node = common(description, opts);
  if (opts.default !== undefined && !isPlainObject(opts.default)) fail(label(description), "default must be an object");
  return Type.Unsafe<Record<string, unknown>>({ type: "object", ...node, "x-kubernetes-preserve-unknown-fields": true });
}

/** Marks an object field optional (absent from `required`, `?` in the static type). */
export function optional<T extends TSchema>(schema: T): TOptional<T> {
  return Type.Optional(schema) as TOptional<T>;
}

// ---------------------------------------------------------------------------
// TypeBox schema -> apiextensions JSONSchemaProps

/** Keys copied as they are (after a JSON check); everything else is handled, stripped or refused below. */
const PASSTHROUGH = new Set([
  "type",
  "description",
  "title",
  "format",
  "default",
  "example",
  "enum",
  "nullable",
  "minLength",
  "maxLength",
  "minimum",
  "maximum",
  "multipleOf",
  "minItems",
  "maxItems",
  "minProperties",
  "maxProperties",
  "x-kubernetes-int-or-string",
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-embedded-resource",
  "x-kubernetes-list-type",
  "x-kubernetes-list-map-keys",
  "x-kubernetes-map-type",
]);

/** JSON Schema keywords the API server refuses (or that make a schema non-structural), with what to write instead. */
const REFUSED: Record<string, string> = {
  $ref: "references are not supported; inline the schema",
  $id: "not supported in a CRD schema",
  id: "not supported in a CRD schema",
  $schema: "not supported in a CRD schema",
  $defs: "definitions are not supported; inline the schema",
  definitions: "definitions are not supported; inline the schema",
  anyOf: "unions are not structural; use stringEnum(), intOrString() or a CEL rule",
  oneOf: "unions are not structural; use stringEnum(), intOrString() or a CEL rule",
  allOf: "not emitted by these builders; use a CEL rule",
  not: "not emitted by these builders; use a CEL rule",
  const: "use stringEnum([value])",
  patternProperties: "not supported; use map() (additionalProperties)",
  propertyNames: "not supported; use a CEL rule on the map",
  uniqueItems: "forbidden (quadratic); use listType: \"set\" or \"map\"",
  additionalItems: "not supported",
  prefixItems: "tuples are not supported",
  dependencies: "not supported",
  dependentRequired: "not supported; use a CEL rule",
  dependentSchemas: "not supported; use a CEL rule",
  if: "not supported; use a CEL rule",
  then: "not supported; use a CEL rule",
  else: "not supported; use a CEL rule",
  unevaluatedProperties: "not supported",
  unevaluatedItems: "not supported",
  contains: "not supported; use a CEL rule",
};

const TYPES = new Set(["object", "array", "string", "integer", "number", "boolean"]);

/** Keywords that only make sense on some types (the int-or-string node counts as both string and integer). */
const KEYWORD_TYPES: Record<string, readonly string[]> = {
  properties: ["object"],
  additionalProperties: ["object"],
  required: ["object"],
  minProperties: ["object"],
  maxProperties: ["object"],
  "x-kubernetes-map-type": ["object"],
  "x-kubernetes-embedded-resource": ["object"],
  items: ["array"],
  minItems: ["array"],
  maxItems: ["array"],
  "x-kubernetes-list-type": ["array"],
  "x-kubernetes-list-map-keys": ["array"],
  pattern: ["string", "int-or-string"],
  minLength: ["string", "int-or-string"],
  maxLength: ["string", "int-or-string"],
  minimum: ["integer", "number", "int-or-string"],
  maximum: ["integer", "number", "int-or-string"],
  exclusiveMinimum: ["integer", "number", "int-or-string"],
  exclusiveMaximum: ["integer", "number", "int-or-string"],
  multipleOf: ["integer", "number", "int-or-string"],
};

/**
 * Converts a TypeBox schema (from the builders, or hand-written) into plain
 * JSON for a CRD's `openAPIV3Schema`, checking that it is structural.
 *
 * TypeBox 1.x marks its schemas with non-enumerable string keys (`~kind` on
 * every node, `~optional`, `~readonly`, `~unsafe` on modified ones) and may
 * keep a `RegExp` as `pattern`; only enumerable keys are read here, `~`-keys
 * and symbol keys are dropped, and every node is copied, so the result shares
 * nothing with the input (no YAML anchors, no hidden keys, no prototypes).
 *
 * @param path where the schema sits, for error messages (e.g. `.spec`).
 * @throws CrdSchemaError naming the offending path.
 */
export function toJsonSchema(schema: TSchema, path = ""): JsonSchemaProps {
  return convert(schema, path);
}

function convert(node: unknown, path: string): JsonSchemaProps {
  if (!isPlainObject(node)) fail(path, "a schema must be a plain object");
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(node)) {
    if (key.startsWith("~")) continue; // TypeBox bookkeeping, should one ever be enumerable
    const value = node[key];
    if (value === undefined) continue;
    const refused = REFUSED[key];
    if (refused !== undefined) fail(path, `"${key}": ${refused}`);
    switch (key) {
      case "properties": {
        if (!isPlainObject(value)) fail(path, "properties must be an object");
        const props: Record<string, JsonSchemaProps> = {};
        for (const name of Object.keys(value)) {
          const child = convert(value[name], `${path}.${name}`);
          if (typeof child.description !== "string" || child.description.trim() === "") {
            fail(`${path}.${name}`, "every field needs a description (kubectl explain shows it)");
          }
          props[name] = child;
        }
        out.properties = props;
        break;
      }
      case "items":
        if (Array.isArray(value)) fail(path, "items must be a single schema, not a tuple");
        out.items = convert(value, `${path}[*]`);
        break;
      case "additionalProperties":
        if (typeof value === "boolean") fail(path, "additionalProperties must be a schema; write map(values, ...) or preserveUnknown(...)");
        out.additionalProperties = convert(value, `${path}.*`);
        break;
      case "required": {
        if (!Array.isArray(value) || !value.every((k) => typeof k === "string")) fail(path, "required must be a list of field names");
        if (value.length > 0) out.required = [...value];
        break;
      }
      case "pattern":
        out.pattern = regex(value, path);
        break;
      case "exclusiveMinimum":
      case "exclusiveMaximum":
        if (typeof value !== "boolean") {
          fail(path, `${key} must be a boolean in a CRD schema (OpenAPI v3.0 / draft 4); use minimum/maximum`);
        }
        out[key] = value;
        break;
      case "x-kubernetes-validations":
        if (!Array.isArray(value)) fail(path, "x-kubernetes-validations must be a list");
        out[key] = value.map((r, i) => validationRule(r, `${path}[x-kubernetes-validations][${i}]`));
        break;
      default:
        if (!PASSTHROUGH.has(key)) fail(path, `"${key}" is not a field of an apiextensions JSONSchemaProps`);
        out[key] = toJson(value, `${path}.${key}`);
    }
  }
  const result = out as JsonSchemaProps;
  checkStructural(result, path);
  return result;
}

function checkStructural(s: JsonSchemaProps, path: string): void {
  const intOrString = s["x-kubernetes-int-or-string"];
  const preserve = s["x-kubernetes-preserve-unknown-fields"];
  if (intOrString !== undefined && intOrString !== true) fail(path, "x-kubernetes-int-or-string must be true or absent");
  if (preserve !== undefined && preserve !== true) fail(path, "x-kubernetes-preserve-unknown-fields must be true or absent");
  if (s.type === undefined) {
    if (intOrString !== true && preserve !== true) {
      fail(path, "every node needs a type (a union or an untyped schema is not structural; use intOrString() or preserveUnknown())");
    }
  } else if (!TYPES.has(s.type)) {
    fail(path, `type ${JSON.stringify(s.type)} is not one of ${[...TYPES].join(", ")} (use nullable instead of "null")`);
  } else if (intOrString === true) {
    fail(path, "an x-kubernetes-int-or-string node must not have a type");
  }
  const kind = intOrString === true ? "int-or-string" : (s.type ?? "any");
  for (const [keyword, types] of Object.entries(KEYWORD_TYPES)) {
    if (keyword in s && !types.includes(kind)) fail(path, `${keyword} does not apply to a node of type ${kind}`);
  }
  if (s.properties !== undefined && s.additionalProperties !== undefined) {
    fail(path, "properties and additionalProperties are mutually exclusive");
  }
  if (s.type === "array" && s.items === undefined) fail(path, "an array needs an items schema");
  for (const name of s.required ?? []) {
    if (s.properties?.[name] === undefined) fail(path, `required field ${JSON.stringify(name)} is not among the properties`);
  }
  if (s.type === "array" && s.items !== undefined) checkList(s, s.items, path);
  if (s.type === "string" && s.enum !== undefined && !s.enum.every((v) => typeof v === "string")) {
    fail(path, "a string enum may only hold strings");
  }
  if (s.default !== undefined) checkScalarDefault(s, s.default, path);
}

/** The list-type rules the API server applies (apiextensions validation.go). */
function checkList(s: { "x-kubernetes-list-type"?: unknown; "x-kubernetes-list-map-keys"?: unknown }, items: JsonSchemaProps, path: string): void {
  const listType = s["x-kubernetes-list-type"];
  const keys = s["x-kubernetes-list-map-keys"];
  if (listType !== undefined && listType !== "atomic" && listType !== "set" && listType !== "map") {
    fail(path, `x-kubernetes-list-type ${JSON.stringify(listType)} is not atomic, set or map`);
  }
  if (keys !== undefined && listType !== "map") fail(path, "listMapKeys needs listType: \"map\"");
  if (listType === "set") {
    const atomicObject = items.type === "object" && items["x-kubernetes-map-type"] === "atomic";
    const atomicArray = items.type === "array" && (items["x-kubernetes-list-type"] ?? "atomic") === "atomic";
    if ((items.type === "object" && !atomicObject) || (items.type === "array" && !atomicArray)) {
      fail(path, "the items of a listType \"set\" must be scalars (or atomic objects/lists)");
    }
  }
  if (listType === "map") {
    if (!Array.isArray(keys) || keys.length === 0) fail(path, "listType \"map\" needs listMapKeys");
    if (items.type !== "object" || items.properties === undefined) fail(path, "the items of a listType \"map\" must be objects with properties");
    const seen = new Set<unknown>();
    for (const key of keys as unknown[]) {
      if (typeof key !== "string") fail(path, "listMapKeys must be field names");
      if (seen.has(key)) fail(path, `listMapKeys lists ${JSON.stringify(key)} twice`);
      seen.add(key);
      const field = items.properties[key];
      if (field === undefined) fail(path, `list map key ${JSON.stringify(key)} is not a field of the items`);
      if (field.type === "object" || field.type === "array" || field["x-kubernetes-preserve-unknown-fields"] === true) {
        fail(path, `list map key ${JSON.stringify(key)} must be a scalar field`);
      }
      if (!(items.required ?? []).includes(key) && field.default === undefined) {
        fail(path, `list map key ${JSON.stringify(key)} must be required or have a default`);
      }
    }
  }
}

/** Catches a default the API server would refuse, for scalars (objects are defaulted recursively by the server). */
function checkScalarDefault(s: JsonSchemaProps, d: Json, path: string): void {
  const where = `${path}.default`;
  if (s.enum !== undefined && !s.enum.some((v) => JSON.stringify(v) === JSON.stringify(d))) {
    fail(where, `${JSON.stringify(d)} is not one of the enum values`);
  }
  switch (s.type) {
    case "string":
      if (typeof d !== "string") fail(where, "must be a string");
      if (s.minLength !== undefined && [...d].length < s.minLength) fail(where, `shorter than minLength ${s.minLength}`);
      if (s.maxLength !== undefined && [...d].length > s.maxLength) fail(where, `longer than maxLength ${s.maxLength}`);
      if (s.pattern !== undefined && !new RegExp(s.pattern).test(d)) fail(where, `${JSON.stringify(d)} does not match the pattern`);
      break;
    case "integer":
    case "number":
      if (typeof d !== "number" || (s.type === "integer" && !Number.isInteger(d))) fail(where, `must be ${s.type === "integer" ? "an integer" : "a number"}`);
      if (s.minimum !== undefined && d < s.minimum) fail(where, `${d} is below the minimum ${s.minimum}`);
      if (s.maximum !== undefined && d > s.maximum) fail(where, `${d} is above the maximum ${s.maximum}`);
      break;
    case "boolean":
      if (typeof d !== "boolean") fail(where, "must be a boolean");
      break;
    case "array":
      if (!Array.isArray(d)) fail(where, "must be an array");
      break;
    case "object":
      if (d === null || typeof d !== "object" || Array.isArray(d)) fail(where, "must be an object");
      break;
  }
}

function validationRule(r: unknown, path: string): ValidationRule {
  if (!isPlainObject(r)) fail(path, "a validation rule must be an object");
  const { rule, message, messageExpression, reason, fieldPath, optionalOldSelf, ...rest } = r;
  const extra = Object.keys(rest);
  if (extra.length > 0) fail(path, `unknown key(s) ${extra.join(", ")}`);
  if (typeof rule !== "string" || rule.trim() === "") fail(path, "rule must be a non-empty CEL expression");
  const out: ValidationRule = { rule };
  if (message !== undefined) {
    if (typeof message !== "string" || message.trim() === "") fail(path, "message must be non-empty if given");
    if (/[\r\n]/.test(message.trim())) fail(path, "message must not contain line breaks");
    out.message = message;
  } else if (/[\r\n]/.test(rule.trim())) {
    fail(path, "a rule with line breaks needs a message");
  }
  if (messageExpression !== undefined) {
    if (typeof messageExpression !== "string" || messageExpression.trim() === "") fail(path, "messageExpression must be non-empty if given");
    out.messageExpression = messageExpression;
  }
  if (reason !== undefined) {
    const reasons: readonly unknown[] = ["FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"];
    if (!reasons.includes(reason)) fail(path, `reason ${JSON.stringify(reason)} is not one of ${reasons.join(", ")}`);
    out.reason = reason as ValidationReason;
  }
  if (fieldPath !== undefined) {
    if (typeof fieldPath !== "string" || !fieldPath.startsWith(".")) fail(path, "fieldPath must be a path starting with \".\"");
    out.fieldPath = fieldPath;
  }
  if (optionalOldSelf !== undefined) {
    if (typeof optionalOldSelf !== "boolean") fail(path, "optionalOldSelf must be a boolean");
    out.optionalOldSelf = optionalOldSelf;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Helpers

/** How builder errors name a field: by the start of its description (a builder does not know its path). */
function label(description: string): string {
  const d = typeof description === "string" ? description.trim() : "";
  return d === "" ? "<field without description>" : `field "${d.length > 40 ? `${d.slice(0, 40)}…` : d}"`;
}

function common(description: string, opts: FieldOptions<unknown>): Record<string, unknown> {
  const at = label(description);
  if (typeof description !== "string" || description.trim() === "") {
    fail(at, "every field needs a non-empty description (kubectl explain shows it)");
  }
  const node: Record<string, unknown> = { description };
  if (opts.default !== undefined) node.default = toJson(opts.default, `${at}.default`);
  if (opts.validations !== undefined && opts.validations.length > 0) {
    node["x-kubernetes-validations"] = opts.validations.map((r, i) => validationRule(r, `${at}[x-kubernetes-validations][${i}]`));
  }
  return node;
}

function stringNode(description: string, opts: StringOptions, values: readonly string[] | undefined): Record<string, unknown> {
  const at = label(description);
  const node = common(description, opts);
  assign(node, {
    pattern: opts.pattern === undefined ? undefined : regex(opts.pattern, at),
    minLength: count(opts.minLength, "minLength", at),
    maxLength: count(opts.maxLength, "maxLength", at),
    format: opts.format,
  });
  checkRange(opts.minLength, opts.maxLength, "minLength", "maxLength", at);
  if (values !== undefined) {
    if (values.length === 0) fail(at, "an enum needs at least one value");
    if (new Set(values).size !== values.length) fail(at, "enum values must be unique");
    node.enum = [...values];
  }
  if (node.default !== undefined) checkScalarDefault({ ...(node as JsonSchemaProps), type: "string" }, node.default as Json, at);
  return node;
}

function numericNode(description: string, opts: IntegerOptions | NumberOptions, type: "integer" | "number"): Record<string, unknown> {
  const at = label(description);
  const node = common(description, opts);
  for (const key of ["minimum", "maximum", "multipleOf"] as const) {
    const v = opts[key];
    if (v !== undefined && (typeof v !== "number" || !Number.isFinite(v))) fail(at, `${key} must be a finite number`);
  }
  if (opts.multipleOf !== undefined && opts.multipleOf <= 0) fail(at, "multipleOf must be positive");
  checkRange(opts.minimum, opts.maximum, "minimum", "maximum", at);
  assign(node, { minimum: opts.minimum, maximum: opts.maximum, multipleOf: opts.multipleOf, format: opts.format });
  if (node.default !== undefined) checkScalarDefault({ ...(node as JsonSchemaProps), type }, node.default as Json, at);
  return node;
}

function assign(node: Record<string, unknown>, values: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(values)) if (v !== undefined) node[k] = v;
}

function count(v: number | undefined, name: string, at: string): number | undefined {
  if (v !== undefined && (!Number.isInteger(v) || v < 0)) fail(at, `${name} must be a non-negative integer`);
  return v;
}

function checkRange(min: number | undefined, max: number | undefined, minName: string, maxName: string, at: string): void {
  if (min !== undefined && max !== undefined && min > max) fail(at, `${minName} ${min} is greater than ${maxName} ${max}`);
}

/** A pattern must be a string that compiles, without the lookaround and backreferences RE2 (the API server's regexp) lacks. */
function regex(pattern: unknown, path: string): string {
  if (typeof pattern !== "string") fail(path, "pattern must be a string (a RegExp object does not serialise)");
  try {
    new RegExp(pattern);
  } catch (e) {
    fail(path, `pattern ${JSON.stringify(pattern)} is not a valid regular expression: ${(e as Error).message}`);
  }
  if (/\(\?<?[=!]/.test(pattern) || /\\[1-9]/.test(pattern)) {
    fail(path, `pattern ${JSON.stringify(pattern)} uses lookaround or a backreference, which RE2 (the API server) does not support`);
  }
  return pattern;
}

/** A deep copy that is guaranteed to be JSON (no undefined, functions, class instances, NaN). */
function toJson(value: unknown, path: string): Json {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) fail(path, `${value} is not a JSON number`);
    return value;
  }
  if (Array.isArray(value)) return value.map((v, i) => toJson(v, `${path}[${i}]`));
  if (isPlainObject(value)) {
    const out: { [key: string]: Json } = {};
    for (const key of Object.keys(value)) {
      const v = value[key];
      if (v !== undefined) out[key] = toJson(v, `${path}.${key}`);
    }
    return out;
  }
  return fail(path, `a ${typeof value} is not a JSON value`);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function fail(path: string, message: string): never {
  throw new CrdSchemaError(path, message);
}
