// Prints one closing line over the Vitest JSON reports of `make test`:
//   tests: N passed, N failed, N skipped
// Usage: node hack/test-summary.ts report.json...
import { existsSync, readFileSync } from "node:fs";

interface VitestJsonReport {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
}

let passed = 0;
let failed = 0;
let skipped = 0;
for (const file of process.argv.slice(2)) {
  if (!existsSync(file)) {
    console.error(`test-summary: missing report ${file}`);
    process.exitCode = 1;
    continue;
  }
  const r = JSON.parse(readFileSync(file, "utf8")) as VitestJsonReport;
  passed += r.numPassedTests;
  failed += r.numFailedTests;
  skipped += r.numPendingTests + r.numTodoTests;
}
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
if (failed > 0 || passed === 0) process.exitCode = 1;
