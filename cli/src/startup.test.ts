// What a manager of one operator loads at start. Every module costs start-up CPU and
// resident memory for the process's life (docs/performance.md, finding 2): a
// `run --operators database-user` manager must not load the AWS SDK, the other
// operators, nor client-node's generated API client, whichever subcommands the CLI has.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

// Each case starts a process that strips the types of the CLI and its imports: seconds on a loaded machine.
const main = join(import.meta.dirname, "main.ts");

/** The module URLs a `stateward ARGS` process resolves, and what it printed. */
function loadedBy(args: string[]): { urls: string[]; stdout: string } {
  const dir = mkdtempSync(join(tmpdir(), "stateward-startup-"));
  const hook = join(dir, "hook.mjs");
  const out = join(dir, "loaded.txt");
  writeFileSync(
    hook,
    `import { registerHooks } from "node:module";
     import { appendFileSync } from "node:fs";
     registerHooks({ resolve(s, c, next) { const r = next(s, c); appendFileSync(${JSON.stringify(out)}, r.url + "\\n"); return r; } });`,
  );
  const stdout = execFileSync(process.execPath, ["--import", hook, main, ...args], { encoding: "utf8" });
  const urls = readFileSync(out, "utf8").split("\n").filter(Boolean);
  return { urls, stdout };
}

const heavy = (urls: string[]) => ({
  awsSdk: urls.filter((u) => u.includes("/@aws-sdk/")).length,
  clientNodeIndex: urls.filter((u) => u.endsWith("/@kubernetes/client-node/dist/index.js")).length,
  generatedClient: urls.filter((u) => /\/client-node\/dist\/gen\/(models|apis)\//.test(u)).length,
  otherOperators: urls.filter((u) => /\/operators\/(mysql-backup|mysql-cluster)\//.test(u)).length,
});

describe("what the manager of one operator loads", () => {
  it("crds --operators database-user (the modules of run --operators database-user) loads nothing of the others", () => {
    const { urls, stdout } = loadedBy(["crds", "--operators", "database-user"]);
    expect(stdout).toContain("kind: CustomResourceDefinition");
    expect(urls.some((u) => u.includes("/operators/database-user/"))).toBe(true);
    expect(heavy(urls)).toEqual({ awsSdk: 0, clientNodeIndex: 0, generatedClient: 0, otherOperators: 0 });
  }, 60_000);

  it("loads a subcommand's modules only when it is used", () => {
    const { urls, stdout } = loadedBy(["help", "backup"]);
    expect(stdout).toContain("stateward backup");
    expect(urls.some((u) => u.includes("/operators/mysql-backup/"))).toBe(true);
  }, 60_000);
});
