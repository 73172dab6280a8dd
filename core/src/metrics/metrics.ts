import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { KindMetrics } from "./object-metrics.ts";

// Metric names, help texts, labels and buckets follow controller-runtime
// (pkg/internal/controller/metrics, pkg/metrics/workqueue.go) and client-go
// (rest_client_*, leader_election_*), so the dashboards and alerts written
// for Go operators work unchanged against Stateward operators.
//
// Labels are only the ones listed here: never an object's name, namespace or
// anything read from a Secret. These series are per controller and must stay
// few whatever the cluster holds, and label values are readable by anyone who
// can scrape. Questions about one object (which cluster lags, which schedule
// has no fresh backup) are answered by the per-object metrics of
// object-metrics.ts (`Metrics.objects`), which carry namespace and name,
// bounded by the number of objects and removed with them.

/** How a reconcile ended, as controller-runtime's `result` label spells it. */
export type ReconcileResult = "success" | "error" | "requeue" | "requeue_after";

const reconcileResults: readonly ReconcileResult[] = ["success", "error", "requeue", "requeue_after"];

/** controller-runtime's buckets for controller_runtime_reconcile_time_seconds. */
const reconcileTimeBuckets = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75,
  2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];

// controller-runtime uses prometheus.ExponentialBuckets(10e-9, 10, 12). Written
// out as literals because multiplying 1e-8 by 10 in floating point gives
// bucket bounds such as 1.0000000000000001e-7 in the `le` label.
const workqueueBuckets = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000];

// client-go's (k8s.io/component-base) buckets for rest_client_request_duration_seconds.
const restLatencyBuckets = [0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0];

/**
 * What the work queue reports. The queue calls it; `Metrics.queueMetrics`
 * hands out an implementation bound to one controller's queue.
 */
export interface QueueMetrics {
  /** Sets workqueue_depth to the number of items waiting. */
  depth(n: number): void;
  /** Counts one add in workqueue_adds_total. */
  added(): void;
  /** Counts one rate-limited re-add in workqueue_retries_total. */
  retried(): void;
  /** Observes how long an item waited before a worker took it (workqueue_queue_duration_seconds). */
  queueLatency(seconds: number): void;
  /** Observes how long a worker held an item (workqueue_work_duration_seconds). */
  workDuration(seconds: number): void;
}

/** What a queue sampler returns at each scrape. */
export interface QueueSample {
  /** Seconds of in-progress work not yet observed by work_duration, summed over workers. */
  unfinishedWorkSeconds: number;
  /** Seconds the longest-running worker has held its current item; 0 when idle. */
  longestRunningProcessorSeconds: number;
}

/** Read at scrape time, so the values are current rather than as of the last queue event. */
export type QueueSampler = () => QueueSample;

/** Per-controller recorder handed out by `Metrics.controller`. */
export interface ControllerMetrics {
  /**
   * Records one finished reconcile: counts it under `result` in
   * controller_runtime_reconcile_total and observes its duration in
   * controller_runtime_reconcile_time_seconds. Call it for every reconcile,
   * failed ones included (result "error"), as controller-runtime does.
   */
  reconciled(result: ReconcileResult, seconds: number): void;
  /**
   * Counts one failed reconcile in controller_runtime_reconcile_errors_total.
   * controller-runtime counts terminal errors here too, so a terminal error
   * calls both `error()` and `terminalError()`.
   */
  error(): void;
  /** Counts one terminal (not retried) error in controller_runtime_terminal_reconcile_errors_total. */
  terminalError(): void;
  /** Sets controller_runtime_max_concurrent_reconciles. */
  setMaxConcurrent(n: number): void;
  /** Adds `delta` (+1 when a worker starts a reconcile, -1 when it ends) to controller_runtime_active_workers. */
  activeWorkers(delta: number): void;
}

export interface MetricsOptions {
  /**
   * Register prom-client's default Node process metrics (CPU, memory, event
   * loop lag, GC, handles) on this instance's registry. Default: true. Tests
   * that create many instances may turn it off, since each registration starts
   * its own event-loop and GC observers.
   */
  defaultMetrics?: boolean;
}

// Label names as types: prom-client then rejects a label not in this list at compile time.
type ControllerLabel = "controller";
type QueueLabel = "name" | "controller";

/**
 * The metrics of one manager, on a registry of its own. Never the global
 * prom-client registry: several managers (one per test, say) can live in one
 * process without their series mixing or their names colliding.
 */
export class Metrics {
  /**
   * The registry everything here is registered on; operators may register
   * their own metrics on it so they are served from the same /metrics.
   */
  readonly registry: Registry;

  readonly #reconcileTotal: Counter<ControllerLabel | "result">;
  readonly #reconcileErrors: Counter<ControllerLabel>;
  readonly #terminalErrors: Counter<ControllerLabel>;
  readonly #reconcileTime: Histogram<ControllerLabel>;
  readonly #maxConcurrent: Gauge<ControllerLabel>;
  readonly #activeWorkers: Gauge<ControllerLabel>;

  readonly #queueDepth: Gauge<QueueLabel>;
  readonly #queueAdds: Counter<QueueLabel>;
  readonly #queueRetries: Counter<QueueLabel>;
  readonly #queueLatency: Histogram<QueueLabel>;
  readonly #workDuration: Histogram<QueueLabel>;
  readonly #samplers = new Map<string, QueueSampler>();

  readonly #restRequests: Counter<"code" | "method" | "host">;
  readonly #restLatency: Histogram<"verb" | "host">;

  readonly #leader: Gauge<"name">;
  readonly #kinds = new Map<string, KindMetrics>();
  #ready: () => boolean = () => false;

  constructor(options: MetricsOptions = {}) {
    const registry = new Registry();
    this.registry = registry;
    const registers = [registry];
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });

    this.#reconcileTotal = new Counter({
      name: "controller_runtime_reconcile_total",
      help: "Total number of reconciliations per controller",
      labelNames: ["controller", "result"],
      registers,
    });
    this.#reconcileErrors = new Counter({
      name: "controller_runtime_reconcile_errors_total",
      help: "Total number of reconciliation errors per controller",
      labelNames: ["controller"],
      registers,
    });
    this.#terminalErrors = new Counter({
      name: "controller_runtime_terminal_reconcile_errors_total",
      help: "Total number of terminal reconciliation errors per controller",
      labelNames: ["controller"],
      registers,
    });
    this.#reconcileTime = new Histogram({
      name: "controller_runtime_reconcile_time_seconds",
      help: "Length of time per reconciliation per controller",
      labelNames: ["controller"],
      buckets: reconcileTimeBuckets,
      registers,
    });
    this.#maxConcurrent = new Gauge({
      name: "controller_runtime_max_concurrent_reconciles",
      help: "Maximum number of concurrent reconciles per controller",
      labelNames: ["controller"],
      registers,
    });
    this.#activeWorkers = new Gauge({
      name: "controller_runtime_active_workers",
      help: "Number of currently used workers per controller",
      labelNames: ["controller"],
      registers,
    });

    const queueLabels: QueueLabel[] = ["name", "controller"];
    this.#queueDepth = new Gauge({
      name: "workqueue_depth",
      help: "Current depth of workqueue",
      labelNames: queueLabels,
      registers,
    });
    this.#queueAdds = new Counter({
      name: "workqueue_adds_total",
      help: "Total number of adds handled by workqueue",
      labelNames: queueLabels,
      registers,
    });
    this.#queueRetries = new Counter({
      name: "workqueue_retries_total",
      help: "Total number of retries handled by workqueue",
      labelNames: queueLabels,
      registers,
    });
    this.#queueLatency = new Histogram({
      name: "workqueue_queue_duration_seconds",
      help: "How long in seconds an item stays in workqueue before being requested",
      labelNames: queueLabels,
      buckets: workqueueBuckets,
      registers,
    });
    this.#workDuration = new Histogram({
      name: "workqueue_work_duration_seconds",
      help: "How long in seconds processing an item from workqueue takes.",
      labelNames: queueLabels,
      buckets: workqueueBuckets,
      registers,
    });
    // Both gauges are filled from the samplers when scraped: the values grow
    // continuously while a worker is stuck, which no queue event would report.
    // Each scrape starts from empty so an unregistered (or failing) sampler's
    // series disappears instead of freezing at its last value.
    const samplers = this.#samplers;
    new Gauge({
      name: "workqueue_unfinished_work_seconds",
      help:
        "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. " +
        "Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
      labelNames: queueLabels,
      registers,
      collect() {
        this.reset();
        for (const [controller, sample] of readSamples(samplers)) {
          this.set(queueLabelValues(controller), sample.unfinishedWorkSeconds);
        }
      },
    });
    new Gauge({
      name: "workqueue_longest_running_processor_seconds",
      help: "How many seconds has the longest running processor for workqueue been running.",
      labelNames: queueLabels,
      registers,
      collect() {
        this.reset();
        for (const [controller, sample] of readSamples(samplers)) {
          this.set(queueLabelValues(controller), sample.longestRunningProcessorSeconds);
        }
      },
    });

    this.#restRequests = new Counter({
      name: "rest_client_requests_total",
      help: "Number of HTTP requests, partitioned by status code, method, and host.",
      labelNames: ["code", "method", "host"],
      registers,
    });
    this.#restLatency = new Histogram({
      name: "rest_client_request_duration_seconds",
      help: "Request latency in seconds. Broken down by verb, and host.",
      labelNames: ["verb", "host"],
      buckets: restLatencyBuckets,
      registers,
    });

    this.#leader = new Gauge({
      name: "leader_election_master_status",
      help:
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. " +
        "'name' is the string used to identify the lease. Please make sure to group by name.",
      labelNames: ["name"],
      registers,
    });

    // Read at scrape time, from the same check /readyz answers with: an alert
    // on it fires while the process runs but does not serve (caches not synced).
    const ready = () => this.#ready();
    new Gauge({
      name: "stateward_manager_ready",
      help: "1 while the manager is ready (its /readyz checks pass), 0 otherwise.",
      registers,
      collect() {
        this.set(ready() ? 1 : 0);
      },
    });
  }

  /**
   * The per-object metrics of one kind (`stateward_<kind>_<metric>`, labelled
   * with each object's namespace and name); see object-metrics.ts for why
   * these, unlike the metrics above, name objects.
   */
  objects(kind: string): KindMetrics {
    let kindMetrics = this.#kinds.get(kind);
    if (!kindMetrics) this.#kinds.set(kind, (kindMetrics = new KindMetrics(kind, this.registry)));
    return kindMetrics;
  }

  /** Sets what stateward_manager_ready reads at each scrape (the manager passes its readiness check). */
  readiness(check: () => boolean): void {
    this.#ready = check;
  }

  /**
   * The recorder for one controller. Like controller-runtime's initMetrics, it
   * creates the controller's counters at zero right away, so `rate()` and
   * `increase()` see the first error rather than starting from it.
   */
  controller(name: string): ControllerMetrics {
    const labels = { controller: name };
    for (const result of reconcileResults) this.#reconcileTotal.inc({ controller: name, result }, 0);
    this.#reconcileErrors.inc(labels, 0);
    this.#terminalErrors.inc(labels, 0);
    this.#activeWorkers.inc(labels, 0);

    const reconcileTotal = this.#reconcileTotal;
    const reconcileTime = this.#reconcileTime;
    const reconcileErrors = this.#reconcileErrors;
    const terminalErrors = this.#terminalErrors;
    const maxConcurrent = this.#maxConcurrent;
    const activeWorkers = this.#activeWorkers;
    return {
      reconciled(result, seconds) {
        reconcileTotal.inc({ controller: name, result });
        reconcileTime.observe(labels, seconds);
      },
      error() {
        reconcileErrors.inc(labels);
      },
      terminalError() {
        terminalErrors.inc(labels);
      },
      setMaxConcurrent(n) {
        maxConcurrent.set(labels, n);
      },
      activeWorkers(delta) {
        activeWorkers.inc(labels, delta);
      },
    };
  }

  /**
   * The queue recorder for one controller's queue. controller-runtime names
   * each queue after its controller, so both labels carry the controller name.
   */
  queueMetrics(controllerName: string): QueueMetrics {
    const labels = queueLabelValues(controllerName);
    // Present from the start, as client-go's queue creates its series eagerly.
    this.#queueDepth.set(labels, 0);
    this.#queueAdds.inc(labels, 0);
    this.#queueRetries.inc(labels, 0);

    const depth = this.#queueDepth;
    const adds = this.#queueAdds;
    const retries = this.#queueRetries;
    const latency = this.#queueLatency;
    const work = this.#workDuration;
    return {
      depth(n) {
        depth.set(labels, n);
      },
      added() {
        adds.inc(labels);
      },
      retried() {
        retries.inc(labels);
      },
      queueLatency(seconds) {
        latency.observe(labels, seconds);
      },
      workDuration(seconds) {
        work.observe(labels, seconds);
      },
    };
  }

  /**
   * Registers the function read at each scrape for
   * workqueue_unfinished_work_seconds and
   * workqueue_longest_running_processor_seconds of one controller's queue.
   * A second registration for the same controller replaces the first.
   * Returns a function that unregisters it, for when the controller stops;
   * its series are gone from the next scrape on.
   */
  registerQueueSampler(controllerName: string, sampler: QueueSampler): () => void {
    this.#samplers.set(controllerName, sampler);
    return () => {
      // Only its own registration: a replacement stays registered.
      if (this.#samplers.get(controllerName) === sampler) this.#samplers.delete(controllerName);
    };
  }

  /**
   * Records one request to the Kubernetes API server. `code` is the HTTP
   * status, or "<error>" when no response arrived (client-go's spelling);
   * `host` is the server's host:port, never a URL with a path or credentials.
   * `method` fills both `method` and `verb`, which client-go also sets from
   * the HTTP method.
   */
  restRequest(method: string, host: string, code: number | string, seconds: number): void {
    this.#restRequests.inc({ code: String(code), method, host });
    this.#restLatency.observe({ verb: method, host }, seconds);
  }

  /** Sets leader_election_master_status for the lease `name`: 1 while leading, 0 otherwise. */
  leader(name: string, isLeader: boolean): void {
    this.#leader.set({ name }, isLeader ? 1 : 0);
  }

  /** The Prometheus text exposition of every metric on this registry, for GET /metrics. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

function queueLabelValues(controllerName: string): Record<QueueLabel, string> {
  return { name: controllerName, controller: controllerName };
}

/**
 * Calls every sampler once. A sampler that throws is skipped for this scrape
 * rather than failing the whole exposition: one broken queue must not hide
 * every other metric.
 */
function readSamples(samplers: ReadonlyMap<string, QueueSampler>): Array<[string, QueueSample]> {
  const out: Array<[string, QueueSample]> = [];
  for (const [controller, sampler] of samplers) {
    try {
      out.push([controller, sampler()]);
    } catch {
      // Skipped; see above.
    }
  }
  return out;
}
