import { describe, expect, it } from "vitest";
import { Metrics } from "./index.ts";
import type { QueueMetrics } from "./index.ts";

// Most tests skip the default process metrics: they are not what is being
// tested and each registration starts its own event-loop and GC observers.
function metrics(): Metrics {
  return new Metrics({ defaultMetrics: false });
}

async function scrape(m: Metrics): Promise<string> {
  return (await m.exposition()).body;
}

describe("Metrics", () => {
  it("publishes reconcile counts and durations under controller-runtime's names", async () => {
    const m = metrics();
    const widget = m.controller("widget");
    widget.reconciled("success", 0.02);
    widget.reconciled("success", 0.3);
    widget.reconciled("requeue_after", 1.1);
    widget.reconciled("error", 0.004);
    widget.error();
    widget.error();
    widget.terminalError();
    widget.setMaxConcurrent(4);
    widget.activeWorkers(1);
    widget.activeWorkers(1);
    widget.activeWorkers(-1);

    const body = await scrape(m);
    expect(body).toContain('controller_runtime_reconcile_total{controller="widget",result="success"} 2');
    expect(body).toContain('controller_runtime_reconcile_total{controller="widget",result="requeue_after"} 1');
    expect(body).toContain('controller_runtime_reconcile_total{controller="widget",result="error"} 1');
    expect(body).toContain('controller_runtime_reconcile_errors_total{controller="widget"} 2');
    expect(body).toContain('controller_runtime_terminal_reconcile_errors_total{controller="widget"} 1');
    expect(body).toContain('controller_runtime_max_concurrent_reconciles{controller="widget"} 4');
    expect(body).toContain('controller_runtime_active_workers{controller="widget"} 1');
    expect(body).toContain("# TYPE controller_runtime_reconcile_time_seconds histogram");
    expect(body).toContain('controller_runtime_reconcile_time_seconds_bucket{le="0.005",controller="widget"} 1');
    expect(body).toContain('controller_runtime_reconcile_time_seconds_bucket{le="0.025",controller="widget"} 2');
    expect(body).toContain('controller_runtime_reconcile_time_seconds_bucket{le="60",controller="widget"} 4');
    expect(body).toContain('controller_runtime_reconcile_time_seconds_count{controller="widget"} 4');
  });

  it("uses controller-runtime's 40 reconcile-time buckets", async () => {
    const m = metrics();
    m.controller("widget").reconciled("success", 0.1);
    const les = [...(await scrape(m)).matchAll(/controller_runtime_reconcile_time_seconds_bucket\{le="([^"]+)"/g)].map(
      (match) => match[1],
    );
    expect(les).toEqual([
      "0.005", "0.01", "0.025", "0.05", "0.1", "0.15", "0.2", "0.25", "0.3", "0.35", "0.4", "0.45", "0.5", "0.6",
      "0.7", "0.8", "0.9", "1", "1.25", "1.5", "1.75", "2", "2.5", "3", "3.5", "4", "4.5", "5", "6", "7", "8", "9",
      "10", "15", "20", "25", "30", "40", "50", "60", "+Inf",
    ]);
  });

  it("shows a new controller's counters at zero before anything happens, so rate() sees the first error", async () => {
    const m = metrics();
    m.controller("widget");
    const body = await scrape(m);
    for (const result of ["success", "error", "requeue", "requeue_after"]) {
      expect(body).toContain(`controller_runtime_reconcile_total{controller="widget",result="${result}"} 0`);
    }
    expect(body).toContain('controller_runtime_reconcile_errors_total{controller="widget"} 0');
    expect(body).toContain('controller_runtime_terminal_reconcile_errors_total{controller="widget"} 0');
  });

  it("publishes work-queue metrics with name and controller labels", async () => {
    const m = metrics();
    const q: QueueMetrics = m.queueMetrics("widget");
    q.added();
    q.added();
    q.added();
    q.retried();
    q.depth(2);
    q.queueLatency(0.0005);
    q.workDuration(2);

    const body = await scrape(m);
    const labels = '{name="widget",controller="widget"}';
    expect(body).toContain(`workqueue_depth${labels} 2`);
    expect(body).toContain(`workqueue_adds_total${labels} 3`);
    expect(body).toContain(`workqueue_retries_total${labels} 1`);
    expect(body).toContain(`workqueue_queue_duration_seconds_count${labels} 1`);
    expect(body).toContain('workqueue_queue_duration_seconds_bucket{le="0.001",name="widget",controller="widget"} 1');
    expect(body).toContain('workqueue_queue_duration_seconds_bucket{le="0.0001",name="widget",controller="widget"} 0');
    expect(body).toContain(`workqueue_work_duration_seconds_sum${labels} 2`);
    const les = [...body.matchAll(/workqueue_work_duration_seconds_bucket\{le="([^"]+)"/g)].map((match) => match[1]);
    expect(les).toEqual(["1e-8", "1e-7", "0.000001", "0.00001", "0.0001", "0.001", "0.01", "0.1", "1", "10", "100", "1000", "+Inf"]);
  });

  it("reads the queue samplers at scrape time, and drops a sampler's series once it is unregistered", async () => {
    const m = metrics();
    let unfinished = 1.5;
    const unregister = m.registerQueueSampler("widget", () => ({
      unfinishedWorkSeconds: unfinished,
      longestRunningProcessorSeconds: unfinished / 2,
    }));
    m.registerQueueSampler("broken", () => {
      throw new Error("sampler failed");
    });

    let body = await scrape(m);
    expect(body).toContain('workqueue_unfinished_work_seconds{name="widget",controller="widget"} 1.5');
    expect(body).toContain('workqueue_longest_running_processor_seconds{name="widget",controller="widget"} 0.75');
    // A failing sampler costs its own series, not the scrape.
    expect(body).not.toContain('controller="broken"');

    unfinished = 4;
    body = await scrape(m);
    expect(body).toContain('workqueue_unfinished_work_seconds{name="widget",controller="widget"} 4');

    unregister();
    body = await scrape(m);
    expect(body).not.toContain('workqueue_unfinished_work_seconds{name="widget"');
    expect(body).not.toContain('workqueue_longest_running_processor_seconds{name="widget"');
  });

  it("publishes Kubernetes client requests and leader status", async () => {
    const m = metrics();
    m.restRequest("GET", "10.0.0.1:6443", 200, 0.03);
    m.restRequest("GET", "10.0.0.1:6443", 200, 0.2);
    m.restRequest("PATCH", "10.0.0.1:6443", "<error>", 1);
    m.leader("stateward-mysql", true);
    m.leader("stateward-backup", true);
    m.leader("stateward-backup", false);

    const body = await scrape(m);
    expect(body).toContain('rest_client_requests_total{code="200",method="GET",host="10.0.0.1:6443"} 2');
    expect(body).toContain('rest_client_requests_total{code="<error>",method="PATCH",host="10.0.0.1:6443"} 1');
    expect(body).toContain('rest_client_request_duration_seconds_count{verb="GET",host="10.0.0.1:6443"} 2');
    expect(body).toContain('rest_client_request_duration_seconds_bucket{le="0.1",verb="GET",host="10.0.0.1:6443"} 1');
    expect(body).toContain('leader_election_master_status{name="stateward-mysql"} 1');
    expect(body).toContain('leader_election_master_status{name="stateward-backup"} 0');
  });

  it("keeps two instances apart: neither sees the other's series and both can register the same names", async () => {
    const a = metrics();
    const b = metrics();
    a.controller("widget").reconciled("success", 0.1);
    b.controller("gadget").reconciled("error", 0.1);

    const bodyA = await scrape(a);
    const bodyB = await scrape(b);
    expect(bodyA).toContain('controller_runtime_reconcile_total{controller="widget",result="success"} 1');
    expect(bodyA).not.toContain("gadget");
    expect(bodyB).toContain('controller_runtime_reconcile_total{controller="gadget",result="error"} 1');
    expect(bodyB).not.toContain("widget");
  });

  it("registers Node process metrics by default and serves the Prometheus text format", async () => {
    const m = new Metrics();
    const { contentType, body } = await m.exposition();
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(body).toContain("# TYPE process_cpu_user_seconds_total counter");
    expect(body).toContain("nodejs_heap_size_used_bytes");
    expect(await scrape(metrics())).not.toContain("nodejs_heap_size_used_bytes");
  });
});
