// Event filters for controller watches.
import type { InformerEvent } from "../cache/index.ts";
import type { KubeObject } from "../client/index.ts";

export type Predicate<T extends KubeObject = KubeObject> = (event: InformerEvent<T>) => boolean;

/**
 * Passes creates and deletes, and updates that changed metadata.generation
 * (i.e. the spec) or started a deletion — so an operator's own status writes
 * do not wake it up again.
 */
export const generationChanged: Predicate = (event) => {
  if (event.type !== "update") return true;
  return (
    event.obj.metadata.generation !== event.old.metadata.generation ||
    event.obj.metadata.deletionTimestamp !== event.old.metadata.deletionTimestamp
  );
};

/**
 * Passes updates whose labels or annotations changed (use with `or`), blind to the annotations
 * `ignored`: an operator's own bookkeeping (e.g. written with its finalizer) does not wake it
 * again, as its status writes do not.
 */
export function labelsOrAnnotationsChangedExcept(ignored: readonly string[]): Predicate {
  const others = (annotations: Record<string, string> | undefined) => JSON.stringify(Object.entries(annotations ?? {}).filter(([k]) => !ignored.includes(k)));
  return (event) => {
    if (event.type !== "update") return true;
    return (
      JSON.stringify(event.obj.metadata.labels ?? {}) !== JSON.stringify(event.old.metadata.labels ?? {}) ||
      others(event.obj.metadata.annotations) !== others(event.old.metadata.annotations)
    );
  };
}

/** Passes updates whose labels or annotations changed (use with `or`). */
export const labelsOrAnnotationsChanged: Predicate = labelsOrAnnotationsChangedExcept([]);

type Requirement = { key: string; op: "=" | "!=" | "exists" | "!exists"; value?: string };

/** Parses an equality-based label selector: `a=b,c!=d,e,!f`. */
export function parseLabelSelector(selector: string): Requirement[] {
  return selector
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((term): Requirement => {
      const ne = term.indexOf("!=");
      if (ne > 0) return { key: term.slice(0, ne).trim(), op: "!=", value: term.slice(ne + 2).trim() };
      const eq = term.indexOf("=");
      if (eq > 0) return { key: term.slice(0, eq).trim(), op: "=", value: term.slice(eq + 1).replace(/^=/, "").trim() };
      if (term.startsWith("!")) return { key: term.slice(1).trim(), op: "!exists" };
      return { key: term, op: "exists" };
    });
}

export function matchesLabels(selector: string, labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {};
  return parseLabelSelector(selector).every((r) => {
    switch (r.op) {
      case "=":
        return l[r.key] === r.value;
      case "!=":
        return l[r.key] !== r.value;
      case "exists":
        return r.key in l;
      case "!exists":
        return !(r.key in l);
    }
  });
}

/** Passes events of objects whose labels match the selector. */
export function labelSelector(selector: string): Predicate {
  return (event) => matchesLabels(selector, event.obj.metadata.labels);
}

export function and<T extends KubeObject>(...ps: Predicate<T>[]): Predicate<T> {
  return (e) => ps.every((p) => p(e));
}

export function or<T extends KubeObject>(...ps: Predicate<T>[]): Predicate<T> {
  return (e) => ps.some((p) => p(e));
}
