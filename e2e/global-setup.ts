// Vitest global setup of the integration project: one real environment for
// the whole run, under .stateward/test, stopped (by pid) when the run ends.
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { repoRoot, startEnvironment, type EnvironmentInfo } from "./harness/index.ts";

declare module "vitest" {
  export interface ProvidedContext {
    environment: EnvironmentInfo;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const env = await startEnvironment({ dir: join(repoRoot, ".stateward", "test"), detached: false });
  project.provide("environment", env.info);
  return () => env.stop();
}
