import { afterEach, describe, expect, it } from "vitest";
import { ProbeServer } from "./index.ts";
import type { BoundAddress, ProbeServerOptions } from "./index.ts";

const running: ProbeServer[] = [];

afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop()));
});

async function startProbes(
  setup: (s: ProbeServer) => void,
  options?: ProbeServerOptions,
): Promise<{ server: ProbeServer; base: string }> {
  const server = new ProbeServer(options);
  setup(server);
  running.push(server);
  const bound = (await server.start("127.0.0.1:0")) as BoundAddress;
  return { server, base: `http://127.0.0.1:${bound.port}` };
}

async function get(url: string, init?: RequestInit): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(url, init);
  return { status: res.status, text: await res.text(), headers: res.headers };
}

describe("ProbeServer", () => {
  it("answers /readyz 500 naming the failing check, and 200 once it passes", async () => {
    let synced = false;
    const { base } = await startProbes((s) => {
      s.addReadyCheck("informer-sync", () => {
        if (!synced) throw new Error("caches not synced: mysqlusers");
      });
      s.addReadyCheck("leader", () => Promise.resolve());
    });

    const failing = await get(`${base}/readyz`);
    expect(failing.status).toBe(500);
    expect(failing.text).toBe("[-]informer-sync failed: caches not synced: mysqlusers\n[+]leader ok\nreadyz check failed\n");
    expect(failing.headers.get("content-type")).toBe("text/plain; charset=utf-8");

    synced = true;
    const passing = await get(`${base}/readyz`);
    expect(passing.status).toBe(200);
    expect(passing.text).toBe("ok");
  });

  it("keeps liveness and readiness checks apart", async () => {
    const { base } = await startProbes((s) => {
      s.addHealthCheck("ping", () => {});
      s.addReadyCheck("informer-sync", () => Promise.reject(new Error("not yet")));
    });
    expect((await get(`${base}/healthz`)).status).toBe(200);
    expect((await get(`${base}/readyz`)).status).toBe(500);
  });

  it("lists every check with ?verbose, like kube-apiserver", async () => {
    const { base } = await startProbes((s) => {
      s.addHealthCheck("deadlock", () => {});
      s.addHealthCheck("cache", async () => {});
    });
    const res = await get(`${base}/healthz?verbose`);
    expect(res.status).toBe(200);
    expect(res.text).toBe("[+]cache ok\n[+]deadlock ok\nhealthz check passed\n");
  });

  it("skips checks named in ?exclude", async () => {
    const { base } = await startProbes((s) => {
      s.addReadyCheck("leader", () => {});
      s.addReadyCheck("mysql", () => {
        throw new Error("connection refused");
      });
    });
    const res = await get(`${base}/readyz?exclude=mysql&verbose`);
    expect(res.status).toBe(200);
    expect(res.text).toBe("[+]leader ok\n[+]mysql excluded: ok\nreadyz check passed\n");
  });

  it("runs one check at /readyz/<name> and answers 404 for unknown names and paths", async () => {
    const { base } = await startProbes((s) => {
      s.addReadyCheck("leader", () => {});
      s.addReadyCheck("informer-sync", () => {
        throw new Error("caches not synced");
      });
    });
    expect(await get(`${base}/readyz/leader`)).toMatchObject({ status: 200, text: "ok" });
    expect(await get(`${base}/readyz/informer-sync`)).toMatchObject({
      status: 500,
      text: "[-]informer-sync failed: caches not synced\nreadyz check failed\n",
    });
    expect((await get(`${base}/readyz/nope`)).status).toBe(404);
    expect((await get(`${base}/healthz/leader`)).status).toBe(404);
    expect((await get(`${base}/`)).status).toBe(404);
    expect((await get(`${base}/metrics`)).status).toBe(404);
    expect((await get(`${base}/readyzz`)).status).toBe(404);
    expect((await get(`${base}/readyz`, { method: "POST" })).status).toBe(405);
  });

  it("passes with the implicit ping check when nothing is registered", async () => {
    const { base } = await startProbes(() => {});
    expect(await get(`${base}/healthz`)).toMatchObject({ status: 200, text: "ok" });
    expect((await get(`${base}/readyz?verbose`)).text).toBe("[+]ping ok\nreadyz check passed\n");
  });

  it("fails a check that takes longer than the timeout", async () => {
    const { base } = await startProbes(
      (s) => {
        s.addReadyCheck("slow", () => new Promise<void>(() => {}));
        s.addReadyCheck("fast", () => {});
      },
      { checkTimeoutMs: 50 },
    );
    const started = Date.now();
    const res = await get(`${base}/readyz`);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(res.status).toBe(500);
    expect(res.text).toBe("[+]fast ok\n[-]slow failed: timed out after 50 ms\nreadyz check failed\n");
  });

  it("keeps a multi-line error message on its own line", async () => {
    const { base } = await startProbes((s) => {
      s.addHealthCheck("db", () => {
        throw new Error("first\n[+]forged ok");
      });
    });
    expect((await get(`${base}/healthz`)).text).toBe("[-]db failed: first [+]forged ok\nhealthz check failed\n");
  });

  it("refuses duplicate and non-URL-safe check names", () => {
    const s = new ProbeServer();
    s.addReadyCheck("leader", () => {});
    expect(() => s.addReadyCheck("leader", () => {})).toThrow(/readyz check "leader" already exists/);
    expect(() => s.addHealthCheck("a/b", () => {})).toThrow(/invalid healthz check name/);
    expect(() => s.addHealthCheck("", () => {})).toThrow(/invalid healthz check name/);
    // The same name may be both a liveness and a readiness check.
    s.addHealthCheck("leader", () => {});
  });
});
