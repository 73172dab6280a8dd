// Kubernetes resource quantities ("10Gi", "500M"), as far as sizes need them (volumes, scratch space).
const BINARY_SUFFIX: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL_SUFFIX: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

/** Compares two Kubernetes quantities (precise enough for volume sizes): negative, 0 or positive. */
export function compareQuantity(a: string, b: string): number {
  return quantityValue(a) - quantityValue(b);
}

/** A quantity's value (bytes for a size: "4Gi" → 4294967296); NaN when it is not one. */
export function quantityValue(q: string): number {
  const m = /^([+-]?[0-9.]+)(e[+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$/i.exec(q.trim());
  if (!m) return Number.NaN;
  const n = Number(m[1]);
  const suffix = m[2] ?? "";
  if (suffix in BINARY_SUFFIX) return n * (BINARY_SUFFIX[suffix] ?? 1);
  if (/^e/i.test(suffix)) return n * 10 ** Number(suffix.slice(1));
  return n * (DECIMAL_SUFFIX[suffix] ?? 1);
}
