import { Counter, Gauge, Histogram, type Registry } from "prom-client";

// Per-object metrics of one kind: every series carries the object's
// `namespace` and `name` (plus the metric's own labels), so an alert can say
// which MySQLCluster lags or which schedule has no fresh backup.
//
// Why object names are labels here when the controller-runtime metrics in
// metrics.ts forbid them: those series exist per controller and must stay
// few whatever the cluster holds; these exist per object *because* the
// question is about one object. The count is bounded by the number of objects
// the manager watches (times a handful of members or reasons), and each
// object's series are removed when it is deleted (`forget`), so a cluster that
// churns objects does not grow the registry. Label values are a namespace, a
// name, a pod name or a fixed reason/thread word: never anything read from a
// Secret, a spec string or a server message, since anyone who can scrape can
// read them.

/** The object a series belongs to: its namespace and name (a metadata is one). */
export interface ObjectKey {
  namespace?: string;
  name?: string;
}

/** A gauge with one series per object (and per value of its own labels). */
export interface ObjectGauge<L extends string = never> {
  set(obj: ObjectKey, value: number, labels?: Record<L, string>): void;
  /** Drops the object's series of this metric only (members that left, a value no longer known). */
  clear(obj: ObjectKey): void;
}

/** A counter with one series per object; `inc(obj, 0)` makes it visible at zero so `increase()` sees the first event. */
export interface ObjectCounter<L extends string = never> {
  inc(obj: ObjectKey, by?: number, labels?: Record<L, string>): void;
}

/** A histogram with one set of buckets per object. */
export interface ObjectHistogram {
  observe(obj: ObjectKey, value: number): void;
  /** Makes the object's series visible with no observation yet (count 0), as the counters' `inc(obj, 0)`; it resets one that has observations. */
  init(obj: ObjectKey): void;
}

type Metric = Gauge<string> | Counter<string> | Histogram<string>;

/**
 * The metrics of one kind, named `stateward_<kind>_<metric>`. Got from
 * `Metrics.objects(kind)`; asking twice for a kind (or a metric) gives the same
 * one, so two controllers of a kind can share its metrics.
 */
export class KindMetrics {
  readonly kind: string;
  readonly #registry: Registry;
  readonly #metrics = new Map<string, { metric: Metric; type: string; labels: readonly string[] }>();
  /** Label sets each object has a series under, per metric: what `forget` removes (prom-client removes by exact labels only). */
  readonly #series = new Map<string, Map<Metric, Map<string, Record<string, string>>>>();

  constructor(kind: string, registry: Registry) {
    if (!/^[a-z][a-z0-9_]*$/.test(kind)) throw new Error(`metric kind "${kind}" must be lower-case letters, digits and _`);
    this.kind = kind;
    this.#registry = registry;
  }

  gauge<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): ObjectGauge<L> {
    const metric = this.#metric(name, help, "gauge", labelNames, (opts) => new Gauge(opts)) as Gauge<string>;
    return {
      set: (obj, value, labels) => metric.set(this.#track(metric, obj, labels), value),
      clear: (obj) => this.#clear(metric, keyOf(obj)),
    };
  }

  counter<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): ObjectCounter<L> {
    const metric = this.#metric(name, help, "counter", labelNames, (opts) => new Counter(opts)) as Counter<string>;
    return { inc: (obj, by = 1, labels) => metric.inc(this.#track(metric, obj, labels), by) };
  }

  histogram(name: string, help: string, buckets: number[]): ObjectHistogram {
    const metric = this.#metric(name, help, "histogram", [], (opts) => new Histogram({ ...opts, buckets })) as Histogram<string>;
    return {
      observe: (obj, value) => metric.observe(this.#track(metric, obj, undefined), value),
      init: (obj) => metric.zero(this.#track(metric, obj, undefined)),
    };
  }

  /** Removes every series of the object from every metric of this kind: call it when the object is deleted. */
  forget(obj: ObjectKey): void {
    const key = keyOf(obj);
    for (const metric of [...(this.#series.get(key)?.keys() ?? [])]) this.#clear(metric, key);
    this.#series.delete(key);
  }

  #metric(
    name: string,
    help: string,
    type: string,
    labelNames: readonly string[],
    create: (opts: { name: string; help: string; labelNames: string[]; registers: Registry[] }) => Metric,
  ): Metric {
    const full = `stateward_${this.kind}_${name}`;
    const existing = this.#metrics.get(full);
    if (existing) {
      if (existing.type !== type || existing.labels.join() !== labelNames.join()) {
        throw new Error(`metric ${full} is registered already as a ${existing.type} with labels [${existing.labels.join(", ")}]`);
      }
      return existing.metric;
    }
    const metric = create({ name: full, help, labelNames: ["namespace", "name", ...labelNames], registers: [this.#registry] });
    this.#metrics.set(full, { metric, type, labels: labelNames });
    return metric;
  }

  /** The series labels for `obj`, remembered so that `forget` and `clear` can remove them. */
  #track(metric: Metric, obj: ObjectKey, labels: Record<string, string> | undefined): Record<string, string> {
    const key = keyOf(obj);
    const all = { namespace: obj.namespace ?? "", name: obj.name ?? "", ...labels };
    let perMetric = this.#series.get(key);
    if (!perMetric) this.#series.set(key, (perMetric = new Map<Metric, Map<string, Record<string, string>>>()));
    let sets = perMetric.get(metric);
    if (!sets) perMetric.set(metric, (sets = new Map<string, Record<string, string>>()));
    sets.set(JSON.stringify(all), all);
    return all;
  }

  #clear(metric: Metric, key: string): void {
    const perMetric = this.#series.get(key);
    for (const labels of perMetric?.get(metric)?.values() ?? []) metric.remove(labels);
    perMetric?.delete(metric);
  }
}

function keyOf(obj: ObjectKey): string {
  return `${obj.namespace ?? ""}/${obj.name ?? ""}`;
}
