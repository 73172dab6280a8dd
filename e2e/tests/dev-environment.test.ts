// `make dev-up` / `make dev-down` as a developer uses them: up, kubectl works,
// down leaves no process behind, up again works. Runs the same entry point as
// the Makefile (e2e/harness/dev.ts) in a folder of its own, so a developer's
// running environment is never touched.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot, tools } from "../harness/index.ts";

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), "stateward-dev-"));
// KWOK only: the real node's start and stop path (the same code) is tested by tests/real-node/.
const env = { ...process.env, STATEWARD_DEV_DIR: dir, STATEWARD_REAL_NODE: "0" };
const dev = (cmd: string) => run(process.execPath, [join(repoRoot, "e2e", "harness", "dev.ts"), cmd], { env, cwd: repoRoot });

function recordedPids(): number[] {
  const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8")) as { processes: { pid: number }[] };
  return state.processes.map((p) => p.pid);
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("dev-up / dev-down", () => {
  afterAll(async () => {
    await dev("down").catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it("comes up, answers kubectl, goes down without leftovers, and comes up again", async () => {
    for (let round = 1; round <= 2; round++) {
      const up = await dev("up");
      expect(up.stdout).toMatch(/Up in/);
      const nodes = await run(tools.kubectl(), ["--kubeconfig", join(dir, "kubeconfig"), "get", "nodes", "-o", "name"]);
      expect(nodes.stdout.trim().split("\n")).toHaveLength(3);
      // The env file exports what the README promises.
      const envFile = readFileSync(join(dir, "env"), "utf8");
      for (const v of ["KUBECONFIG", "MYSQL_HOST", "MYSQL_PORT", "MYSQL_ROOT_PASSWORD", "S3_ENDPOINT", "S3_REGION",
        "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "S3_BUCKET", "PATH"]) {
        expect(envFile).toMatch(new RegExp(`^export ${v}=`, "m"));
      }
      // A second `up` is a no-op.
      expect((await dev("up")).stdout).toMatch(/already up/);
      const pids = recordedPids();
      expect(pids.length).toBeGreaterThanOrEqual(6);
      await dev("down");
      expect(pids.filter(alive)).toEqual([]);
    }
  });
});
