// CRD YAML as `make crds` writes it into crds/.
import { stringify } from "yaml";
import type { CrdManifest } from "./define.ts";

/** Anything with a wire-form CRD: a `KindDefinition`, or the manager's `CustomKind`. */
export interface HasCrd {
  crdManifest(): CrdManifest;
}

/** The first line of every generated CRD file. */
export const CRD_HEADER = "# Generated from code by `make crds` — do not edit.";

/**
 * The kind's CRD as one YAML document (no `---`), after the header comment.
 *
 * Deterministic: mapping keys are sorted (as controller-gen's output is), no
 * anchors/aliases, no line folding. Written as YAML 1.1 so that strings a 1.1
 * reader would take for something else (`yes`, `on`, `y`, `0755`, `1:20`) are
 * quoted; kubectl's YAML reader is 1.1-flavoured.
 */
export function crdToYaml(def: HasCrd): string {
  const body = stringify(def.crdManifest(), {
    version: "1.1",
    sortMapEntries: true,
    aliasDuplicateObjects: false,
    indentSeq: false,
    lineWidth: 0,
  });
  return `${CRD_HEADER}\n${body}`;
}

/** `<group>_<plural>.yaml`, as kubebuilder names CRD files. */
export function crdFileName(def: HasCrd): string {
  const { group, names } = def.crdManifest().spec;
  return `${group}_${names.plural}.yaml`;
}

/** The files `make crds` writes, sorted by name; refuses two kinds with the same file. */
export function crdFiles(defs: readonly HasCrd[]): { fileName: string; content: string }[] {
  const files = new Map<string, string>();
  for (const def of defs) {
    const fileName = crdFileName(def);
    if (files.has(fileName)) throw new Error(`two kinds render to ${fileName} (same group and plural)`);
    files.set(fileName, crdToYaml(def));
  }
  return [...files.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([fileName, content]) => ({ fileName, content }));
}
