// The metrics the chart's alerting rules and Grafana dashboard may use, with the labels
// each is exported under (the scrape adds job and instance). hack/monitoring-check.ts
// refuses a query naming any other metric; e2e/tests/monitoring checks that a real
// manager exports every one of them, under exactly these labels.

export interface ExportedMetric {
  name: string;
  /** Label names of its series; a histogram's are those of _sum and _count (_bucket adds le). */
  labels: string[];
  histogram?: boolean;
}

const objectMetric = (name: string, ...labels: string[]): ExportedMetric => ({ name, labels: ["namespace", "name", ...labels] });

export const exportedMetrics: ExportedMetric[] = [
  objectMetric("stateward_mysqlbackupschedule_last_success_timestamp_seconds"),
  objectMetric("stateward_mysqlbackupschedule_last_success_size_bytes"),
  objectMetric("stateward_mysqlbackupschedule_interval_seconds"),
  objectMetric("stateward_mysqlbackupschedule_created_timestamp_seconds"),
  objectMetric("stateward_mysqlbackup_duration_seconds"),
  objectMetric("stateward_mysqlbackup_throughput_bytes_per_second"),
  objectMetric("stateward_mysqlrestore_duration_seconds"),
  objectMetric("stateward_mysqlrestore_throughput_bytes_per_second"),
  objectMetric("stateward_mysqlcluster_writable_primary"),
  objectMetric("stateward_mysqlcluster_max_lag_seconds"),
  objectMetric("stateward_mysqlcluster_replication_lag_seconds", "member"),
  objectMetric("stateward_mysqlcluster_replication_thread_running", "member", "thread"),
  objectMetric("stateward_mysqlcluster_primary_changes_total"),
  objectMetric("stateward_mysqlcluster_failovers_total"),
  { ...objectMetric("stateward_mysqlcluster_failover_time_to_writable_seconds"), histogram: true },
  objectMetric("stateward_databaseuser_failures_total", "reason"),
  { name: "stateward_manager_ready", labels: [] },
  { name: "controller_runtime_reconcile_errors_total", labels: ["controller"] },
];

/** The series names a metric is exported under (a histogram's _bucket, _sum and _count). */
export function seriesNames(m: ExportedMetric): string[] {
  return m.histogram ? [`${m.name}_bucket`, `${m.name}_sum`, `${m.name}_count`] : [m.name];
}

/** Series every Prometheus scrape has without the target exporting them. */
export const scrapeSeries = ["up"];

// PromQL words that are not metric names.
const KEYWORDS = new Set([
  "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values", "group",
  "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset",
  "time", "rate", "irate", "increase", "delta", "idelta", "deriv", "histogram_quantile", "max_over_time", "min_over_time",
  "avg_over_time", "sum_over_time", "count_over_time", "last_over_time", "absent", "absent_over_time", "label_values",
  "clamp_min", "clamp_max", "vector", "scalar", "abs", "changes", "resets", "timestamp",
]);

/**
 * The metric names a PromQL expression reads: what is left once strings, label matchers,
 * ranges, the label lists of by/on/without/ignoring/group_* and numbers are taken out.
 * Grafana's $variables are taken out too.
 */
export function metricsIn(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, " ")
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ")
    .replace(/\$\w+/g, " ");
  const words = stripped.match(/[A-Za-z_:][A-Za-z0-9_:]*/g) ?? [];
  return [...new Set(words.filter((w) => !KEYWORDS.has(w) && !/^(e|inf|nan)$/i.test(w)))];
}
