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
