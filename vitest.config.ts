import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      {
        // Pure logic, beside the code it tests. No servers, no network.
        test: {
          name: "unit",
          include: ["core/**/*.test.ts", "operators/**/*.test.ts", "cli/**/*.test.ts", "e2e/harness/**/*.test.ts", "e2e/bench/**/*.test.ts", "hack/**/*.test.ts"],
          environment: "node",
        },
      },
      {
        // Against the real environment that e2e/global-setup.ts starts once
        // for the whole run: control plane, MariaDB, S3.
        test: {
          name: "integration",
          include: ["e2e/tests/**/*.test.ts"],
          environment: "node",
          globalSetup: ["e2e/global-setup.ts"],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // Suites share one control plane; one file at a time keeps the
          // 2-core machines from timing out under load.
          fileParallelism: false,
        },
      },
    ],
  },
});
