import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { build, type Plugin } from "rolldown";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinsChunk, builtinsOnUse, lazyRequire } from "./bundle-plugins.ts";

const run = promisify(execFile);

// mysql2 bundled as the manager's build bundles it, into a folder of its own (no node_modules
// to fall back on), then run: what it needs from the lazily served files must still be there.
const entry = "\0test-entry";
const entryModule: Plugin = {
  name: "test-entry",
  resolveId: (source) => (source === entry ? entry : null),
  load: (id) =>
    id === entry
      ? [
          `import mysql from "mysql2";`,
          `import iconv from "iconv-lite";`,
          // mysql2 decodes with iconv-lite what Buffer has no decoder for; the same package, as bundled with it.
          `export const decode = (bytes, encoding) => iconv.decode(bytes, encoding);`,
          `export const awsCertificates = () => new mysql.ConnectionConfig({ ssl: "Amazon RDS" }).ssl.ca;`,
        ].join("\n")
      : null,
};

describe("lazyRequire: what mysql2 keeps for rare cases, out of the loaded source", () => {
  let dir: string;
  let bundle: { decode(bytes: Buffer, encoding: string): string; awsCertificates(): string[] };
  let source: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "stateward-lazy-"));
    await build({
      input: entry,
      cwd: join(import.meta.dirname, ".."),
      platform: "node",
      logLevel: "silent",
      output: { dir, format: "esm", entryFileNames: "entry.mjs", chunkFileNames: "[name].mjs" },
      plugins: [entryModule, lazyRequire],
    });
    source = readdirSync(dir)
      .filter((f) => f.endsWith(".mjs"))
      .map((f) => readFileSync(join(dir, f), "utf8"))
      .join("\n");
    bundle = (await import(pathToFileURL(join(dir, "entry.mjs")).href)) as typeof bundle;
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("leaves the certificates and the double-byte tables out of the bundle's source", () => {
    expect(source).not.toContain("BEGIN CERTIFICATE");
    // A run of Shift JIS's table as the JSON file writes it (its first row of kanji).
    const shiftJis = readFileSync(join(dir, "lazy", "iconv-lite", "shiftjis.json"), "utf8");
    const row = /"[^"\\]{40,}"/.exec(shiftJis)?.[0];
    expect(row).toBeDefined();
    expect(source).not.toContain(row!.slice(1, 41));
  });

  it("still decodes the double-byte character sets, from the tables read on first use", () => {
    // The bytes as Python's codecs write them.
    const text = "日本語のテキスト";
    expect(bundle.decode(Buffer.from("93fa967b8cea82cc8365834c83588367", "hex"), "Shift_JIS")).toBe(text);
    expect(bundle.decode(Buffer.from("c6fccbdcb8eca4cea5c6a5ada5b9a5c8", "hex"), "EUC-JP")).toBe(text);
    expect(bundle.decode(Buffer.from("c8d5b1bed55ab5c4", "hex"), "GBK")).toBe("日本語的");
    expect(bundle.decode(Buffer.from("a4e9a5bbbb79", "hex"), "Big5")).toBe("日本語");
    expect(bundle.decode(Buffer.from("c7d1b1b9beee", "hex"), "EUC-KR")).toBe("한국어");
    // CESU-8, which decodes every server greeting, is not a table: it works before any is read.
    expect(bundle.decode(Buffer.from("MariaDB"), "cesu8")).toBe("MariaDB");
  });

  it("still has mysql2's Amazon RDS certificates, from the package read on first use", () => {
    const ca = bundle.awsCertificates();
    expect(ca.length).toBeGreaterThan(10);
    expect(ca.every((pem) => pem.startsWith("-----BEGIN CERTIFICATE-----"))).toBe(true);
  });
});

// Node's http module has getters (WebSocket, CloseEvent, MessageEvent) that load Node's own undici;
// an ES module import of node:http runs them. The bundle, run in a process of its own, says what it
// got and whether that copy of undici was loaded.
const httpEntry = "\0test-http-entry";
const httpUser: Plugin = {
  name: "test-http-user",
  resolveId: (source) => (source === httpEntry || source === "\0test-cjs" ? source : null),
  load: (id) => {
    if (id === "\0test-cjs") return { code: `module.exports = require("http");`, moduleType: "js" };
    if (id !== httpEntry) return null;
    return [
      `import http, { STATUS_CODES, createServer } from "node:http";`,
      `import * as https from "https";`,
      `import required from "\\0test-cjs";`,
      `console.log(JSON.stringify({`,
      `  notFound: STATUS_CODES[404],`,
      `  createServer: typeof createServer,`,
      `  httpsAgent: typeof https.Agent,`,
      `  same: http === process.getBuiltinModule("node:http") && required === http,`,
      `  nodeUndici: process.moduleLoadList.includes("NativeModule internal/deps/undici/undici"),`,
      `}));`,
    ].join("\n");
  },
};

async function bundleAndRun(plugins: Plugin[]): Promise<{ notFound: string; createServer: string; httpsAgent: string; same: boolean; nodeUndici: boolean }> {
  const dir = mkdtempSync(join(tmpdir(), "stateward-builtins-"));
  try {
    await build({
      input: httpEntry,
      platform: "node",
      logLevel: "silent",
      output: { dir, format: "esm", entryFileNames: "entry.mjs", chunkFileNames: "[name].mjs", codeSplitting: { groups: [builtinsChunk] } },
      plugins: [httpUser, ...plugins],
    });
    const { stdout } = await run(process.execPath, [join(dir, "entry.mjs")]);
    return JSON.parse(stdout) as Awaited<ReturnType<typeof bundleAndRun>>;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("builtinsOnUse: Node's built-in modules as require reads them", () => {
  it("gives the importing code what an import would, without loading Node's own undici", async () => {
    expect(await bundleAndRun([builtinsOnUse])).toEqual({ notFound: "Not Found", createServer: "function", httpsAgent: "function", same: true, nodeUndici: false });
  }, 60_000);

  it("is needed: the same bundle with plain imports of the built-ins loads it", async () => {
    expect((await bundleAndRun([])).nodeUndici).toBe(true);
  }, 60_000);
});
