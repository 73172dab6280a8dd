// Vitest global setup of the integration project: one real environment for
// the whole run, under .stateward/test/run-<pid>, stopped (by pid) when the
// run ends. Each run has its own folder so that two runs on one machine
// (two developers' terminals, helpers) never stop each other's servers;
// leftovers of runs whose process died are stopped first.
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { repoRoot, startEnvironment, stopRecorded, type EnvironmentInfo } from "./harness/index.ts";

declare module "vitest" {
  export interface ProvidedContext {
    environment: EnvironmentInfo;
  }
}

const testRoot = join(repoRoot, ".stateward", "test");

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function stopAbandonedRuns(): Promise<void> {
  if (!existsSync(testRoot)) return;
  for (const entry of readdirSync(testRoot)) {
    const m = /^run-(\d+)$/.exec(entry);
    if (!m || alive(Number(m[1]))) continue;
    await stopRecorded(join(testRoot, entry));
    rmSync(join(testRoot, entry), { recursive: true, force: true });
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  await stopAbandonedRuns();
  const dir = join(testRoot, `run-${process.pid}`);
  const env = await startEnvironment({ dir, detached: false });
  project.provide("environment", env.info);
  return async () => {
    await env.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
