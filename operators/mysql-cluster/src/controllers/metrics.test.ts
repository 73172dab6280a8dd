import { Metrics } from "@stateward/core";
import { describe, expect, it } from "vitest";
import type { MySQLCluster, MySQLClusterStatus } from "../api.ts";
import { ClusterMetrics } from "./metrics.ts";

function cluster(status: MySQLClusterStatus): MySQLCluster {
  return { apiVersion: "stateward.io/v1alpha1", kind: "MySQLCluster", metadata: { namespace: "ns", name: "c" }, spec: { storage: { size: "1Gi" } }, status };
}

const available = (status: "True" | "False", at: string) => [{ type: "Available", status, reason: "R", message: "m", lastTransitionTime: at }];
const replica = { name: "c-1", role: "replica" as const, ready: true, ioThread: true, sqlThread: false, lagSeconds: 4 };
const failover = { from: "c-0", to: "c-1", detectedAt: "2026-01-01T00:00:10Z", promotedAt: "2026-01-01T00:00:12Z" };

async function scrape(m: Metrics): Promise<string> {
  return (await m.exposition()).body;
}

describe("ClusterMetrics", () => {
  it("exports the writable primary, each replica's lag and threads, and drops a member that left", async () => {
    const m = new Metrics({ defaultMetrics: false });
    const metrics = new ClusterMetrics(m);
    metrics.observe(cluster({ currentPrimary: "c-0", conditions: available("True", "2026-01-01T00:00:00Z"), members: [{ name: "c-0", role: "primary", ready: true }, replica] }));
    let body = await scrape(m);
    expect(body).toContain('stateward_mysqlcluster_writable_primary{namespace="ns",name="c"} 1');
    expect(body).toContain('stateward_mysqlcluster_max_lag_seconds{namespace="ns",name="c"} 30');
    expect(body).toContain('stateward_mysqlcluster_replication_lag_seconds{namespace="ns",name="c",member="c-1"} 4');
    expect(body).toContain('stateward_mysqlcluster_replication_thread_running{namespace="ns",name="c",member="c-1",thread="sql"} 0');
    expect(body).toContain('stateward_mysqlcluster_failovers_total{namespace="ns",name="c"} 0');

    metrics.observe(cluster({ currentPrimary: "c-0", conditions: available("True", "2026-01-01T00:00:00Z"), members: [{ name: "c-0", role: "primary", ready: true }] }));
    body = await scrape(m);
    expect(body).not.toContain('member="c-1"');

    metrics.forget("ns", "c");
    expect(await scrape(m)).not.toContain('name="c"');
  });

  it("counts a failover once, and its time to writable from detection to Available turning True after the promotion", async () => {
    const m = new Metrics({ defaultMetrics: false });
    const metrics = new ClusterMetrics(m);
    metrics.observe(cluster({ currentPrimary: "c-0", conditions: available("False", "2026-01-01T00:00:05Z") }));
    // Promoted; Available still False from before.
    metrics.observe(cluster({ currentPrimary: "c-1", lastFailover: failover, conditions: available("False", "2026-01-01T00:00:05Z") }));
    metrics.observe(cluster({ currentPrimary: "c-1", lastFailover: failover, conditions: available("False", "2026-01-01T00:00:05Z") }));
    let body = await scrape(m);
    expect(body).toContain('stateward_mysqlcluster_failovers_total{namespace="ns",name="c"} 1');
    expect(body).toContain('stateward_mysqlcluster_primary_changes_total{namespace="ns",name="c"} 1');
    expect(body).toContain('stateward_mysqlcluster_failover_time_to_writable_seconds_count{namespace="ns",name="c"} 0');

    metrics.observe(cluster({ currentPrimary: "c-1", lastFailover: failover, conditions: available("True", "2026-01-01T00:00:17Z") }));
    metrics.observe(cluster({ currentPrimary: "c-1", lastFailover: failover, conditions: available("True", "2026-01-01T00:00:17Z") }));
    body = await scrape(m);
    expect(body).toContain('stateward_mysqlcluster_failover_time_to_writable_seconds_count{namespace="ns",name="c"} 1');
    expect(body).toContain('stateward_mysqlcluster_failover_time_to_writable_seconds_sum{namespace="ns",name="c"} 7');
    expect(body).toContain('stateward_mysqlcluster_failovers_total{namespace="ns",name="c"} 1');
  });

  it("does not count a failover that happened before this manager first saw the cluster", async () => {
    const m = new Metrics({ defaultMetrics: false });
    new ClusterMetrics(m).observe(cluster({ currentPrimary: "c-1", lastFailover: failover, conditions: available("True", "2026-01-01T00:00:17Z") }));
    const body = await scrape(m);
    expect(body).toContain('stateward_mysqlcluster_failovers_total{namespace="ns",name="c"} 0');
    expect(body).toContain('stateward_mysqlcluster_failover_time_to_writable_seconds_count{namespace="ns",name="c"} 0');
  });
});
