// Prometheus metrics under controller-runtime's and client-go's names.
export { Metrics } from "./metrics.ts";
export type {
  ControllerMetrics,
  MetricsOptions,
  QueueMetrics,
  QueueSample,
  QueueSampler,
  ReconcileResult,
} from "./metrics.ts";
export { KindMetrics } from "./object-metrics.ts";
export type { ObjectCounter, ObjectGauge, ObjectHistogram, ObjectKey } from "./object-metrics.ts";
