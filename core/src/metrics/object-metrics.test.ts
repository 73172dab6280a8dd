import { describe, expect, it } from "vitest";
import { Metrics } from "./index.ts";

async function scrape(m: Metrics): Promise<string> {
  return (await m.exposition()).body;
}

describe("Metrics.objects", () => {
  it("labels each series with the object's namespace and name, under stateward_<kind>_", async () => {
    const m = new Metrics({ defaultMetrics: false });
    const kind = m.objects("widget");
    const lag = kind.gauge("lag_seconds", "Lag.", ["member"]);
    const failures = kind.counter("failures_total", "Failures.", ["reason"]);
    const took = kind.histogram("duration_seconds", "Duration.", [1, 10]);
    lag.set({ namespace: "a", name: "w1" }, 3, { member: "w1-0" });
    failures.inc({ namespace: "a", name: "w1" }, 0, { reason: "Broken" });
    failures.inc({ namespace: "a", name: "w1" }, 1, { reason: "Broken" });
    took.init({ namespace: "b", name: "w2" });
    took.observe({ namespace: "a", name: "w1" }, 5);

    const body = await scrape(m);
    expect(body).toContain('stateward_widget_lag_seconds{namespace="a",name="w1",member="w1-0"} 3');
    expect(body).toContain('stateward_widget_failures_total{namespace="a",name="w1",reason="Broken"} 1');
    expect(body).toContain('stateward_widget_duration_seconds_bucket{le="10",namespace="a",name="w1"} 1');
    expect(body).toContain('stateward_widget_duration_seconds_count{namespace="b",name="w2"} 0');
  });

  it("forgets every series of a deleted object and keeps the others'", async () => {
    const m = new Metrics({ defaultMetrics: false });
    const kind = m.objects("widget");
    const lag = kind.gauge("lag_seconds", "Lag.", ["member"]);
    const failures = kind.counter("failures_total", "Failures.");
    for (const name of ["w1", "w2"]) {
      lag.set({ namespace: "a", name }, 1, { member: `${name}-0` });
      lag.set({ namespace: "a", name }, 2, { member: `${name}-1` });
      failures.inc({ namespace: "a", name });
    }
    kind.forget({ namespace: "a", name: "w1" });
    const body = await scrape(m);
    expect(body).not.toContain('name="w1"');
    expect(body).toContain('stateward_widget_lag_seconds{namespace="a",name="w2",member="w2-1"} 2');
    expect(body).toContain('stateward_widget_failures_total{namespace="a",name="w2"} 1');

    lag.clear({ namespace: "a", name: "w2" });
    expect(await scrape(m)).not.toContain("stateward_widget_lag_seconds{");
  });

  it("gives the same metric for the same name and refuses a different type or labels under it", () => {
    const m = new Metrics({ defaultMetrics: false });
    expect(m.objects("widget")).toBe(m.objects("widget"));
    m.objects("widget").gauge("x", "X.", ["member"]);
    expect(() => m.objects("widget").gauge("x", "X.", ["member"])).not.toThrow();
    expect(() => m.objects("widget").counter("x", "X.")).toThrow(/registered already as a gauge/);
    expect(() => m.objects("Widget")).toThrow(/lower-case/);
  });

  it("reads stateward_manager_ready from the readiness check at each scrape", async () => {
    const m = new Metrics({ defaultMetrics: false });
    expect(await scrape(m)).toContain("stateward_manager_ready 0");
    let ready = true;
    m.readiness(() => ready);
    expect(await scrape(m)).toContain("stateward_manager_ready 1");
    ready = false;
    expect(await scrape(m)).toContain("stateward_manager_ready 0");
  });
});
