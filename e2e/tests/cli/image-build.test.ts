// The image's build of the `stateward` command (`make build`: dist/stateward.js and its
// chunks, hack/build.ts) run as the image runs it: alone in a folder, with no node_modules,
// no package.json and no sources beside dist/ — the Dockerfile copies dist/ and nothing else.
// A module the bundler left out, a file read at run time or an operator's chunk that does not
// load fails here, not in a user's pod. (The memory-limit test runs the same build through
// 1,000 DatabaseUsers and a 1 GiB backup.)
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freePort } from "../../harness/ports.ts";
import { repoRoot } from "../../harness/index.ts";
import { imageCommand } from "../../support/image-command.ts";
import { deleteNamespace, freshNamespace, testClient } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import { stateward, type Run } from "./run.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);

let alone: string;

// Without syntax detection, a build whose files Node would not load as ES modules at once fails
// here; with it they load after a failed CommonJS attempt, at ~10 MiB more RSS.
const asModulesOnly = { ...process.env, NODE_OPTIONS: "--no-experimental-detect-module" };

/** The image's command line with `args`, run in a folder that holds only a copy of dist/. */
function run(args: string[]): Promise<Run> {
  const image = imageCommand(args);
  return new Promise((resolve) => {
    execFile(image.command, image.args, { cwd: alone, env: { ...asModulesOnly, ...image.env }, maxBuffer: 16 << 20, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr }));
  });
}

beforeAll(() => {
  imageCommand([]); // builds dist/ once for this process
  alone = mkdtempSync(join(tmpdir(), "sw-image-build-"));
  cpSync(join(repoRoot, "dist"), join(alone, "dist"), { recursive: true });
}, 180_000);

afterAll(() => {
  if (alone) rmSync(alone, { recursive: true, force: true });
});

describe("the image's build, alone in a folder", () => {
  it("is ASCII throughout, so V8 holds each chunk's source at one byte per character", () => {
    const files = readdirSync(join(alone, "dist"), { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".js"));
    const nonAscii = files.filter((f) => readFileSync(join(alone, "dist", f)).some((byte) => byte > 0x7f));
    expect(nonAscii).toEqual([]);
  });

  it("keeps undici's fetch out of the start: a chunk of its own, imported only when called, and loadable", async () => {
    const dist = join(alone, "dist");
    const files = readdirSync(dist, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".js"));
    const code = new Map(files.map((f) => [f, readFileSync(join(dist, f), "utf8")]));
    // undici's fetch rejects with this message; client-node's generated HTTP library imports fetch.
    const fetchChunks = files.filter((f) => code.get(f)!.includes("fetch failed"));
    expect(fetchChunks).toHaveLength(1);
    const fetchChunk = join(dist, fetchChunks[0]!);
    const name = fetchChunks[0]!.split("/").pop()!;
    // Chunk names are [\w-]+.js; a static import reads `from"./name.js"`, a lazy one `import(\`./name.js\`)`.
    const staticImport = new RegExp(`from\\s*["'\`]\\.(/chunks)?/${name.replaceAll(".", "\\.")}`);
    expect(files.filter((f) => staticImport.test(code.get(f)!))).toEqual([]);
    const loaded = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, ["--input-type=module", "-e", `const m = await import(${JSON.stringify(fetchChunk)}); if (!Object.keys(m).length) process.exit(3);`], { cwd: alone, env: asModulesOnly, stdio: "inherit" });
      child.on("exit", resolve);
    });
    expect(loaded).toBe(0);
  });

  it("holds its entry point and no copy of node_modules", () => {
    const files = readdirSync(join(alone, "dist"), { recursive: true, encoding: "utf8" });
    expect(files).toContain("stateward.js");
    expect(files.filter((f) => f.includes("node_modules"))).toEqual([]);
  });

  it("prints the same CRDs as the sources: every operator's chunk loads", async () => {
    // The sources' output, by the helper the other CLI tests use.
    const [image, sources] = await Promise.all([run(["crds"]), stateward(env.kubeconfig, "crds")]);
    expect(image.stderr).toBe("");
    expect(image.code).toBe(0);
    expect(image.stdout).toContain("kind: MySQLCluster");
    expect(sources.code).toBe(0);
    expect(image.stdout).toBe(sources.stdout);
  });

  it("knows its version without a package.json beside it", async () => {
    const r = await run(["version", "--client"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^stateward \d+\.\d+\.\d+ \(API stateward\.io\/v1alpha1; Node v24\./);
  });

  /**
   * Starts the image's manager with `args` (node options in `nodeArgs` first), waits for
   * /readyz, stops it with SIGTERM and returns its exit and log.
   */
  async function runManagerUntilReady(args: string[], nodeArgs: string[] = []): Promise<{ exit: number | string; log: string }> {
    const ns = await freshNamespace(client, "image-build");
    const port = await freePort();
    const image = imageCommand(["run", "--kubeconfig", env.kubeconfig, "--namespaces", ns, "--metrics-addr", "0", "--health-addr", `127.0.0.1:${port}`, ...args]);
    let log = "";
    const manager: ChildProcess = spawn(image.command, [...nodeArgs, ...image.args], { cwd: alone, env: { ...asModulesOnly, ...image.env }, stdio: ["ignore", "pipe", "pipe"] });
    manager.stdout?.on("data", (d: Buffer) => (log += d.toString()));
    manager.stderr?.on("data", (d: Buffer) => (log += d.toString()));
    const exited = new Promise<number | string>((resolve) => manager.once("exit", (code, signal) => resolve(signal ?? code ?? -1)));
    try {
      await waitFor("the bundled manager's /readyz", async () => {
        if (manager.exitCode !== null) throw new Error(`the manager exited (${manager.exitCode}):\n${log}`);
        const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
        return res?.ok ? true : undefined;
      }, 60_000, 250);
      manager.kill("SIGTERM");
      return { exit: await exited, log };
    } finally {
      if (manager.exitCode === null && manager.signalCode === null) manager.kill("SIGKILL");
      await deleteNamespace(client, ns);
    }
  }

  it("runs a manager with every operator until /readyz answers, and stops cleanly on SIGTERM", async () => {
    const { exit, log } = await runManagerUntilReady([]);
    expect(exit, log).toBe(0);
    expect(log).not.toMatch(/Cannot find (module|package)|ERR_MODULE_NOT_FOUND/);
  }, 120_000);

  // V8 keeps the source of every chunk a process loads: what the manager never calls stays unloaded.
  it("starts a database-user manager without loading the YAML library, undici's fetch or Node's own undici", async () => {
    const chunkDir = join(alone, "dist", "chunks");
    const chunks = readdirSync(chunkDir).filter((f) => f.endsWith(".js"));
    const code = new Map(chunks.map((f) => [f, readFileSync(join(chunkDir, f), "utf8")]));
    // An option name of the yaml library's stringify; the message undici's fetch rejects with.
    const yaml = chunks.filter((f) => code.get(f)!.includes("aliasDuplicateObjects"));
    const fetchChunks = chunks.filter((f) => code.get(f)!.includes("fetch failed"));
    expect(yaml.length).toBeGreaterThan(0);
    expect(fetchChunks).toHaveLength(1);
    // A module hook, outside dist/, that writes down each chunk the manager loads, and at exit
    // the built-in modules Node loaded for it.
    const loadedList = join(alone, "loaded-chunks.txt");
    const builtinList = join(alone, "loaded-builtins.txt");
    const hook = join(alone, "record-loads.mjs");
    writeFileSync(hook, [
      `import { appendFileSync, writeFileSync } from "node:fs";`,
      `import { registerHooks } from "node:module";`,
      `registerHooks({ load(url, context, next) {`,
      `  if (url.includes("/chunks/")) appendFileSync(${JSON.stringify(loadedList)}, url.split("/").pop() + "\\n");`,
      `  return next(url, context);`,
      `} });`,
      `process.on("exit", () => writeFileSync(${JSON.stringify(builtinList)}, process.moduleLoadList.join("\\n")));`,
    ].join("\n"));
    const { exit, log } = await runManagerUntilReady(["--operators", "database-user"], ["--import", hook]);
    expect(exit, log).toBe(0);
    const loaded = readFileSync(loadedList, "utf8").split("\n").filter(Boolean);
    expect(loaded.length).toBeGreaterThan(1);
    expect(loaded.filter((f) => yaml.includes(f) || fetchChunks.includes(f))).toEqual([]);
    // Node's fetch and WebSocket, loaded by an ES module import of node:http (hack/bundle-plugins.ts, builtinsOnUse).
    const builtins = readFileSync(builtinList, "utf8").split("\n");
    expect(builtins.length).toBeGreaterThan(100);
    expect(builtins.filter((m) => m.includes("undici"))).toEqual([]);
  }, 120_000);
});
