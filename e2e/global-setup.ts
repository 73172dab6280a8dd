// Vitest global setup of the integration project: one real environment for
// the whole run, under .stateward/test/run-<pid>, stopped (by pid) when the
// run ends. Each run has its own folder so that two runs on one machine
// (two developers' terminals, helpers) never stop each other's servers;
// leftovers of runs whose process died are stopped first (a real node they
// ran included: the host is put back as it was).
import { rmSync } from "node:fs";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { repoRoot, startEnvironment, stopAbandonedRuns, stopStrayServers, type EnvironmentInfo } from "./harness/index.ts";

declare module "vitest" {
  export interface ProvidedContext {
    environment: EnvironmentInfo;
  }
}

const testRoot = join(repoRoot, ".stateward", "test");

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  await stopAbandonedRuns(testRoot);
  const dir = join(testRoot, `run-${process.pid}`);
  // The real node is started by the suites that need it (useRealNode), where the machine can run one.
  const env = await startEnvironment({ dir, detached: false, realNode: "on-demand" });
  project.provide("environment", env.info);
  return async () => {
    await env.stop();
    await stopStrayServers(dir);
    rmSync(dir, { recursive: true, force: true });
  };
}
