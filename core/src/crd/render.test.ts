import { parse, parseDocument, visit } from "yaml";
import { describe, expect, it } from "vitest";
import { defineKind, object, stringEnum } from "./index.ts";
import { CRD_HEADER, crdFileName, crdFiles, crdToYaml } from "./render.ts";
import { WidgetKind } from "./widget.fixture.ts";

const text = crdToYaml(WidgetKind);

describe("crdToYaml", () => {
  it("starts with the generated-code header and is one document without ---", () => {
    expect(text.split("\n")[0]).toBe("# Generated from code by `make crds` — do not edit.");
    expect(text.startsWith(`${CRD_HEADER}\n`)).toBe(true);
    expect(text).not.toMatch(/^---/m);
    expect(text).not.toMatch(/^%YAML/m);
    expect(text.endsWith("\n")).toBe(true);
  });

  it("round-trips through yaml.parse to the same object", () => {
    expect(parse(text)).toEqual(WidgetKind.crdManifest());
    expect(parse(text, { version: "1.1" })).toEqual(WidgetKind.crdManifest());
  });

  it("is stable: sorted keys, same output every time", () => {
    expect(crdToYaml(WidgetKind)).toBe(text);
    const lines = text.split("\n");
    expect(lines.slice(1, 5)).toEqual(["apiVersion: apiextensions.k8s.io/v1", "kind: CustomResourceDefinition", "metadata:", "  name: widgets.test.stateward.io"]);
    const doc = parseDocument(text);
    visit(doc, {
      Map(_, map) {
        const keys = map.items.map((pair) => String(pair.key));
        expect(keys).toEqual([...keys].sort());
      },
    });
  });

  it("writes no anchors or aliases, even for a schema used twice", () => {
    let aliases = 0;
    visit(parseDocument(text), {
      Alias() {
        aliases++;
      },
    });
    expect(aliases).toBe(0);
    expect(text).not.toMatch(/&a\d|\*a\d/);
  });

  it("quotes strings a YAML 1.1 reader (kubectl) would take for booleans or numbers", () => {
    const kind = defineKind({
      group: "x.stateward.io",
      version: "v1",
      kind: "Switch",
      plural: "switches",
      scope: "Namespaced",
      description: "A switch.",
      spec: object({ state: stringEnum(["on", "off", "yes", "no", "y", "0755"], "State.", { default: "on" }) }, "Spec."),
      status: object({}, "Status."),
    });
    const yaml = crdToYaml(kind);
    for (const v of ["on", "off", "yes", "no", "y", "0755"]) expect(yaml).toContain(`- "${v}"`);
    expect(yaml).toContain('default: "on"');
    expect(parse(yaml, { version: "1.1" })).toEqual(kind.crdManifest());
  });
});

describe("crdFileName / crdFiles", () => {
  it("names files <group>_<plural>.yaml", () => {
    expect(crdFileName(WidgetKind)).toBe("test.stateward.io_widgets.yaml");
  });

  it("lists files sorted by name and refuses duplicates", () => {
    const other = defineKind({
      group: "a.stateward.io",
      version: "v1",
      kind: "Gadget",
      plural: "gadgets",
      scope: "Cluster",
      description: "A gadget.",
      spec: object({}, "Spec."),
      status: object({}, "Status."),
    });
    expect(crdFiles([WidgetKind, other])).toEqual([
      { fileName: "a.stateward.io_gadgets.yaml", content: crdToYaml(other) },
      { fileName: "test.stateward.io_widgets.yaml", content: text },
    ]);
    expect(() => crdFiles([WidgetKind, WidgetKind])).toThrow(/test.stateward.io_widgets.yaml/);
  });
});
