// CRDs as code: a kind's schema written once in TypeScript yields its static
// type and its CustomResourceDefinition.
export {
  array,
  boolean,
  CrdSchemaError,
  integer,
  intOrString,
  map,
  number,
  object,
  optional,
  preserveUnknown,
  QUANTITY_PATTERN,
  quantity,
  string,
  stringEnum,
  toJsonSchema,
} from "./schema.ts";
export type {
  ArrayOptions,
  FieldOptions,
  IntegerOptions,
  IntOrStringOptions,
  ItemKey,
  Json,
  JsonSchemaProps,
  ListType,
  MapOptions,
  MapType,
  NumberOptions,
  ObjectOptions,
  StringFormat,
  StringOptions,
  ValidationReason,
  ValidationRule,
} from "./schema.ts";
export { AGE_COLUMN, defineKind, STATEWARD_CATEGORY, toClientNodeModel } from "./define.ts";
export type {
  CrdManifest,
  CustomObject,
  CustomObjectList,
  CustomObjectMeta,
  KindDefinition,
  KindOptions,
  ListOf,
  ObjectOf,
  PrinterColumn,
  PrinterColumnType,
  ResourceInfo,
  ScaleSubresource,
  Scope,
  SpecOf,
  StatusOf,
} from "./define.ts";
// The YAML rendering (render.ts) is its own entry, "@stateward/core/crd-yaml": the manager
// never writes YAML, and the YAML library would otherwise be loaded at every start.
