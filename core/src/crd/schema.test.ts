import Type, { type Static } from "typebox";
import { describe, expect, expectTypeOf, it } from "vitest";
import {
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
} from "./index.ts";

describe("field builders", () => {
  it("emit the structural schema of each field, description first-class", () => {
    expect(toJsonSchema(string("A name.", { pattern: "^[a-z]+$", minLength: 1, maxLength: 63, format: "hostname" }))).toEqual({
      type: "string",
      description: "A name.",
      pattern: "^[a-z]+$",
      minLength: 1,
      maxLength: 63,
      format: "hostname",
    });
    expect(toJsonSchema(integer("A count.", { minimum: 0, maximum: 10, default: 3, format: "int32" }))).toEqual({
      type: "integer",
      description: "A count.",
      minimum: 0,
      maximum: 10,
      default: 3,
      format: "int32",
    });
    expect(toJsonSchema(number("A ratio.", { minimum: 0, maximum: 1 }))).toEqual({ type: "number", description: "A ratio.", minimum: 0, maximum: 1 });
    expect(toJsonSchema(boolean("A flag.", { default: true }))).toEqual({ type: "boolean", description: "A flag.", default: true });
  });

  it("type a string enum as the union of its literals", () => {
    const policy = stringEnum(["Delete", "Retain"], "Reclaim policy.", { default: "Delete" });
    expectTypeOf<Static<typeof policy>>().toEqualTypeOf<"Delete" | "Retain">();
    expect(toJsonSchema(policy)).toEqual({ type: "string", description: "Reclaim policy.", enum: ["Delete", "Retain"], default: "Delete" });

    const mode = string("Mode.", { enum: ["A", "B"] });
    expectTypeOf<Static<typeof mode>>().toEqualTypeOf<"A" | "B">();
    expect(toJsonSchema(mode)).toEqual({ type: "string", description: "Mode.", enum: ["A", "B"] });

    expectTypeOf<Static<ReturnType<typeof string>>>().toEqualTypeOf<string>();
    expectTypeOf(string("Anything.")).toEqualTypeOf<Type.TString>();
  });

  it("render arrays with list semantics", () => {
    const item = object({ name: string("Key."), value: optional(string("Value.")) }, "An entry.");
    const list = array(item, "Entries.", { listType: "map", listMapKeys: ["name"], minItems: 1, maxItems: 5 });
    expectTypeOf<Static<typeof list>>().toEqualTypeOf<{ name: string; value?: string }[]>();
    expect(toJsonSchema(list)).toEqual({
      type: "array",
      description: "Entries.",
      minItems: 1,
      maxItems: 5,
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["name"],
      items: {
        type: "object",
        description: "An entry.",
        required: ["name"],
        properties: { name: { type: "string", description: "Key." }, value: { type: "string", description: "Value." } },
      },
    });
    expect(toJsonSchema(array(string("Tag."), "Tags.", { listType: "set" }))).toMatchObject({ "x-kubernetes-list-type": "set" });
  });

  it("render maps with additionalProperties, never patternProperties", () => {
    const labels = map(string("Value."), "Labels.", { maxProperties: 10 });
    expectTypeOf<Static<typeof labels>>().toEqualTypeOf<Record<string, string>>();
    expect(toJsonSchema(labels)).toEqual({
      type: "object",
      description: "Labels.",
      maxProperties: 10,
      additionalProperties: { type: "string", description: "Value." },
    });
  });

  it("render quantities and int-or-strings without a type", () => {
    const size = quantity("Size.", { default: "1Gi" });
    expectTypeOf<Static<typeof size>>().toEqualTypeOf<string | number>();
    expect(toJsonSchema(size)).toEqual({
      description: "Size.",
      default: "1Gi",
      pattern: QUANTITY_PATTERN,
      "x-kubernetes-int-or-string": true,
    });
    const re = new RegExp(QUANTITY_PATTERN);
    for (const ok of ["1Gi", "500m", "1.5", "2", "1e3", "+10Ki", ".5M"]) expect(re.test(ok), ok).toBe(true);
    for (const bad of ["1GB", "Gi", "1 Gi", "-", ""]) expect(re.test(bad), bad).toBe(false);
    expect(toJsonSchema(intOrString("Port.", { default: 8080 }))).toEqual({ description: "Port.", default: 8080, "x-kubernetes-int-or-string": true });
  });

  it("render preserve-unknown objects", () => {
    const raw = preserveUnknown("Anything.");
    expectTypeOf<Static<typeof raw>>().toEqualTypeOf<Record<string, unknown>>();
    expect(toJsonSchema(raw)).toEqual({ type: "object", description: "Anything.", "x-kubernetes-preserve-unknown-fields": true });
  });

  it("make fields optional the TypeBox way", () => {
    const o = object({ a: string("A."), b: optional(integer("B.")) }, "O.", { mapType: "atomic" });
    expectTypeOf<Static<typeof o>>().toEqualTypeOf<{ a: string; b?: number }>();
    expect(toJsonSchema(o)).toMatchObject({ required: ["a"], "x-kubernetes-map-type": "atomic" });
    expect(toJsonSchema(object({ a: optional(string("A.")) }, "O."))).not.toHaveProperty("required");
  });

  it("render CEL rules as x-kubernetes-validations on any builder", () => {
    const rules = [
      { rule: "self.size() > 0", message: "must not be empty", reason: "FieldValueRequired" as const },
      { rule: "self == oldSelf", messageExpression: "'immutable'", fieldPath: ".x" },
    ];
    for (const s of [string("S.", { validations: rules }), integer("I.", { validations: rules }), map(string("V."), "M.", { validations: rules })]) {
      expect(toJsonSchema(s)["x-kubernetes-validations"]).toEqual(rules);
    }
  });
});

describe("toJsonSchema", () => {
  it("strips what TypeBox 1.x adds: the non-enumerable ~kind / ~optional / ~unsafe keys", () => {
    const o = object({ a: optional(string("A.")), q: quantity("Q.") }, "O.");
    const a = o.properties.a;
    expect(Reflect.ownKeys(o)).toContain("~kind");
    expect(Reflect.ownKeys(a)).toEqual(expect.arrayContaining(["~kind", "~optional"]));
    expect(Reflect.ownKeys(o.properties.q)).toContain("~unsafe");

    const json = toJsonSchema(o);
    const keys: (string | symbol)[] = [];
    const walk = (v: unknown): void => {
      if (v === null || typeof v !== "object") return;
      expect([Object.prototype, Array.prototype]).toContain(Object.getPrototypeOf(v));
      keys.push(...Reflect.ownKeys(v).filter((k) => !Array.isArray(v) || k !== "length"));
      Object.values(v).forEach(walk);
    };
    walk(json);
    expect(keys.filter((k) => typeof k === "symbol" || k.startsWith("~"))).toEqual([]);
    expect(JSON.parse(JSON.stringify(json))).toEqual(json);
  });

  it("copies: the result shares no object with the input", () => {
    const rules = [{ rule: "true" }];
    const s = string("S.", { validations: rules });
    const json = toJsonSchema(s);
    expect(json["x-kubernetes-validations"]).not.toBe(rules);
    const shared = string("Shared.");
    const o = toJsonSchema(object({ a: shared, b: shared }, "O."));
    expect(o.properties?.a).not.toBe(o.properties?.b);
  });

  it("refuses non-structural TypeBox types with the path of the problem", () => {
    const cases: [ReturnType<typeof object>, RegExp][] = [
      [object({ u: Type.Union([Type.Literal("a"), Type.Literal("b")], { description: "U." }) }, "O."), /\.u: "anyOf": unions are not structural/],
      [object({ r: Type.Record(Type.String(), Type.String(), { description: "R." }) }, "O."), /\.r: "patternProperties"/],
      [object({ c: Type.Literal("x", { description: "C." }) }, "O."), /\.c: "const"/],
      [object({ a: Type.Any({ description: "A." }) }, "O."), /\.a: every node needs a type/],
      [object({ n: Type.String() }, "O."), /\.n: every field needs a description/],
      [object({ p: Type.String({ description: "P.", pattern: /x/ }) }, "O."), /\.p: pattern must be a string/],
      [object({ e: Type.Integer({ description: "E.", exclusiveMinimum: 0 }) }, "O."), /\.e: exclusiveMinimum must be a boolean/],
      [object({ x: Type.Array(Type.String(), { description: "X.", uniqueItems: true }) }, "O."), /\.x: "uniqueItems": forbidden/],
      [object({ o: Type.Object({}, { description: "O.", additionalProperties: false }) }, "O."), /\.o: additionalProperties must be a schema/],
      [object({ z: Type.Null({ description: "Z." }) }, "O."), /\.z: type "null"/],
    ];
    for (const [schema, message] of cases) {
      expect(() => toJsonSchema(schema, ".spec")).toThrow(message);
    }
    expect(() => toJsonSchema(object({ n: Type.String() }, "O."), ".spec")).toThrow(CrdSchemaError);
    expect(() =>
      toJsonSchema(Type.Object({ a: Type.String({ description: "A." }) }, { description: "O.", additionalProperties: Type.String() }), ".spec"),
    ).toThrow(/mutually exclusive/);
  });

  it("accepts hand-written TypeBox types that are structural", () => {
    const o = Type.Object({ a: Type.String({ description: "A." }), b: Type.Optional(Type.Boolean({ description: "B." })) }, { description: "O." });
    expect(toJsonSchema(o)).toEqual({
      type: "object",
      description: "O.",
      required: ["a"],
      properties: { a: { type: "string", description: "A." }, b: { type: "boolean", description: "B." } },
    });
  });
});

describe("builders refuse what the API server would", () => {
  it("a missing description", () => {
    expect(() => string("")).toThrow(/non-empty description/);
    expect(() => object({}, "  ")).toThrow(/non-empty description/);
  });

  it("defaults that do not fit the field", () => {
    expect(() => stringEnum(["A", "B"], "E.", { default: "C" as "A" })).toThrow(/"C" is not one of the enum values/);
    expect(() => integer("I.", { minimum: 1, default: 0 })).toThrow(/below the minimum/);
    expect(() => integer("I.", { default: 1.5 })).toThrow(/must be an integer/);
    expect(() => string("S.", { pattern: "^a+$", default: "b" })).toThrow(/does not match the pattern/);
    expect(() => quantity("Q.", { default: "1GB" })).toThrow(/does not match the pattern/);
    expect(() => integer("I.", { minimum: 5, maximum: 1 })).toThrow(/minimum 5 is greater than maximum 1/);
  });

  it("list types that do not fit the items", () => {
    const item = object({ name: string("N."), nested: object({}, "X."), opt: optional(string("O.")) }, "I.");
    expect(() => array(item, "L.", { listType: "map", listMapKeys: ["nested"] })).toThrow(/must be a scalar field/);
    expect(() => array(item, "L.", { listType: "map", listMapKeys: ["opt"] })).toThrow(/must be required or have a default/);
    expect(() => array(item, "L.", { listType: "map", listMapKeys: ["name", "name"] })).toThrow(/twice/);
    expect(() => array(item, "L.", { listType: "set" })).toThrow(/must be scalars/);
    expect(() => array(string("S."), "L.", { listType: "map", listMapKeys: [] as unknown as [never] })).toThrow(/needs listMapKeys/);
    const defaulted = object({ key: optional(string("K.", { default: "a" })) }, "I.");
    expect(() => array(defaulted, "L.", { listType: "map", listMapKeys: ["key"] })).not.toThrow();
    expect(() => array(object({ a: string("A.") }, "I.", { mapType: "atomic" }), "L.", { listType: "set" })).not.toThrow();
  });

  it("patterns RE2 cannot run, and malformed CEL rules", () => {
    expect(() => string("S.", { pattern: "^(?!x)" })).toThrow(/RE2/);
    expect(() => string("S.", { pattern: "(" })).toThrow(/not a valid regular expression/);
    expect(() => string("S.", { validations: [{ rule: " " }] })).toThrow(/rule must be a non-empty CEL expression/);
    expect(() => string("S.", { validations: [{ rule: "a ||\nb" }] })).toThrow(/needs a message/);
    expect(() => string("S.", { validations: [{ rule: "true", message: "two\nlines" }] })).toThrow(/line breaks/);
  });

  it("typos in list map keys, at compile time", () => {
    const item = object({ name: string("N.") }, "I.");
    // @ts-expect-error "nmae" is not a field of the items
    expect(() => array(item, "L.", { listType: "map", listMapKeys: ["nmae"] })).toThrow(/not a field of the items/);
    // @ts-expect-error listMapKeys needs listType "map"
    expect(() => array(item, "L.", { listMapKeys: ["name"] })).toThrow(/needs listType/);
  });
});
