import { Agent, request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { Metrics } from "../metrics/index.ts";
import { MetricsServer, ProbeServer, parseBindAddress } from "./index.ts";
import type { BoundAddress } from "./index.ts";

const running: Array<{ stop(): Promise<void> }> = [];

afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop()));
});

function track<T extends { stop(): Promise<void> }>(server: T): T {
  running.push(server);
  return server;
}

describe("parseBindAddress", () => {
  it("reads controller-runtime style addresses", () => {
    expect(parseBindAddress(":8081")).toEqual({ host: undefined, port: 8081 });
    expect(parseBindAddress("127.0.0.1:8081")).toEqual({ host: "127.0.0.1", port: 8081 });
    expect(parseBindAddress("localhost:0")).toEqual({ host: "localhost", port: 0 });
    expect(parseBindAddress("[::1]:9090")).toEqual({ host: "::1", port: 9090 });
    expect(parseBindAddress(":0")).toEqual({ host: undefined, port: 0 });
  });

  it('treats "0" and "" as disabled', () => {
    expect(parseBindAddress("0")).toBeUndefined();
    expect(parseBindAddress("")).toBeUndefined();
  });

  it("rejects addresses it cannot read, naming them", () => {
    expect(() => parseBindAddress("8081")).toThrow(/invalid bind address "8081"/);
    expect(() => parseBindAddress(":http")).toThrow(/port must be a number/);
    expect(() => parseBindAddress(":70000")).toThrow(/port must be a number/);
    expect(() => parseBindAddress("::1:8081")).toThrow(/IPv6 hosts in brackets/);
  });
});

describe("start and stop", () => {
  it('does not listen when the address is "0" or ""', async () => {
    expect(await track(new ProbeServer()).start("0")).toBeUndefined();
    expect(await track(new MetricsServer(() => Promise.resolve({ contentType: "text/plain", body: "" }))).start("")).toBeUndefined();
  });

  it('binds a free port for ":0" on every interface and for "127.0.0.1:0" on loopback', async () => {
    const all = (await track(new ProbeServer()).start(":0")) as BoundAddress;
    expect(all.port).toBeGreaterThan(0);
    expect(["::", "0.0.0.0"]).toContain(all.host);
    expect((await fetch(`http://127.0.0.1:${all.port}/healthz`)).status).toBe(200);

    const loopback = (await track(new ProbeServer()).start("127.0.0.1:0")) as BoundAddress;
    expect(loopback.host).toBe("127.0.0.1");
    expect(loopback.port).toBeGreaterThan(0);
    expect(loopback.port).not.toBe(all.port);
  });

  it("rejects when the port is taken, and refuses to start twice", async () => {
    const first = track(new ProbeServer());
    const { port } = (await first.start("127.0.0.1:0")) as BoundAddress;
    await expect(track(new ProbeServer()).start(`127.0.0.1:${port}`)).rejects.toThrow(
      new RegExp(`probe server cannot listen on "127.0.0.1:${port}": .*EADDRINUSE`),
    );
    await expect(first.start("127.0.0.1:0")).rejects.toThrow(/already started/);
  });

  it("stops quickly despite a keep-alive connection and frees the port", async () => {
    const server = new ProbeServer();
    const { port } = (await server.start("127.0.0.1:0")) as BoundAddress;
    // A pooled keep-alive connection, as the kubelet or a scraper holds.
    const agent = new Agent({ keepAlive: true });
    const status = await new Promise<number | undefined>((resolve, reject) => {
      request({ host: "127.0.0.1", port, path: "/healthz", agent }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode));
      })
        .on("error", reject)
        .end();
    });
    expect(status).toBe(200);

    const started = Date.now();
    await server.stop();
    expect(Date.now() - started).toBeLessThan(1_000);
    agent.destroy();

    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
    const again = track(new ProbeServer());
    expect(await again.start(`127.0.0.1:${port}`)).toEqual({ host: "127.0.0.1", port });
    // Stopping twice, or a server never started, is harmless.
    await server.stop();
    await new ProbeServer().stop();
  });
});

describe("MetricsServer", () => {
  it("serves /metrics from its source with the source's content type, 404 elsewhere", async () => {
    let scrapes = 0;
    const server = track(
      new MetricsServer(() => {
        scrapes++;
        return Promise.resolve({
          contentType: "text/plain; version=0.0.4; charset=utf-8",
          body: `# TYPE scrapes counter\nscrapes ${scrapes}\n`,
        });
      }),
    );
    const { port } = (await server.start("127.0.0.1:0")) as BoundAddress;

    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(await res.text()).toBe("# TYPE scrapes counter\nscrapes 1\n");
    expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${port}/metrics`, { method: "DELETE" })).status).toBe(405);
  });

  it("serves a Metrics instance's exposition", async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    metrics.controller("widget").reconciled("success", 0.1);
    const server = track(new MetricsServer(() => metrics.exposition()));
    const { port } = (await server.start("127.0.0.1:0")) as BoundAddress;
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await res.text()).toContain('controller_runtime_reconcile_total{controller="widget",result="success"} 1');
  });

  it("answers 500 when gathering fails", async () => {
    const server = track(new MetricsServer(() => Promise.reject(new Error("collector broke"))));
    const { port } = (await server.start("127.0.0.1:0")) as BoundAddress;
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(res.status).toBe(500);
    expect(await res.text()).toBe("error gathering metrics: collector broke\n");
  });
});
