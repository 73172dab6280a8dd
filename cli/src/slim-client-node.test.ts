import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { configIndexExports, slimIndexSource } from "./slim-client-node.ts";

const require = createRequire(import.meta.url);
const clientNodeDist = dirname(require.resolve("@kubernetes/client-node"));

describe("client-node without its generated API client", () => {
  it("gives config.js every name it imports from the generated index", () => {
    const source = readFileSync(join(clientNodeDist, "config.js"), "utf8");
    const imports = [...source.matchAll(/import\s*\{([^}]*)\}\s*from\s*['"]\.\/gen\/index\.js['"]/g)].flatMap((m) =>
      m[1]!.split(",").map((s) => s.trim()).filter(Boolean),
    );
    expect(imports.length).toBeGreaterThan(0);
    expect(Object.keys(configIndexExports).sort()).toEqual([...imports].sort());
  });

  it("re-exports each name from the generated module that defines it", async () => {
    for (const [name, from] of Object.entries(configIndexExports)) {
      const mod = (await import(join(clientNodeDist, "gen", from))) as Record<string, unknown>;
      expect(typeof mod[name], `${name} in gen/${from}`).toBe("function");
    }
    expect(slimIndexSource({ a: "./x.js" })).toBe('export { a } from "./x.js";');
  });

  it("loads a working KubeConfig and RequestContext without loading a generated model", () => {
    // A process of its own: the hook must be registered before client-node is first imported.
    const script = `
      import { registerHooks } from "node:module";
      import { registerSlimClientNode } from ${JSON.stringify(join(import.meta.dirname, "slim-client-node.ts"))};
      const loaded = [];
      registerSlimClientNode();
      registerHooks({ resolve(s, c, next) { const r = next(s, c); loaded.push(r.url); return r; } });
      const { KubeConfig } = await import("@kubernetes/client-node/dist/config.js");
      const { RequestContext } = await import("@kubernetes/client-node/dist/gen/http/http.js");
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: "c", server: "https://127.0.0.1:6443", skipTLSVerify: false }],
        users: [{ name: "u", token: "t0ken" }],
        contexts: [{ name: "x", cluster: "c", user: "u" }],
        currentContext: "x",
      });
      const ctx = new RequestContext(kc.getCurrentCluster().server + "/api", "GET");
      await kc.applySecurityAuthentication(ctx);
      console.log(JSON.stringify({ auth: ctx.getHeaders().Authorization, models: loaded.filter((u) => u.includes("/gen/models/") || u.includes("/gen/apis/")).length }));
    `;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: import.meta.dirname, encoding: "utf8" });
    expect(JSON.parse(out)).toEqual({ auth: "Bearer t0ken", models: 0 });
  });
});
