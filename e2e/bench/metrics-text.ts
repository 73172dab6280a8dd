// Reading numbers out of a Prometheus text exposition (what the manager's
// /metrics serves), as a scraper would: the benchmark measures the manager
// through its public metrics, not through its internals.

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/**
 * The sum of every sample of metric `name` whose labels include all of
 * `labels` (e.g. controller_runtime_reconcile_total over all results of one
 * controller). 0 when there is none, as for a counter not yet created.
 */
export function sampleSum(exposition: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of exposition.split("\n")) {
    if (line.startsWith("#")) continue;
    const m = sampleLine.exec(line);
    if (!m || m[1] !== name) continue;
    const got = new Map<string, string>();
    for (const [, key, value] of (m[2] ?? "").matchAll(labelPair)) if (key !== undefined && value !== undefined) got.set(key, value);
    if (Object.entries(labels).every(([k, v]) => got.get(k) === v)) sum += Number(m[3]);
  }
  return sum;
}
