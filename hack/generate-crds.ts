// `make crds`: writes crds/<group>_<plural>.yaml for every kind of every
// operator the `stateward` command ships, from the schemas in code.
// `--check` (part of `make test`) fails when the committed files are stale.
//
// Usage: node hack/generate-crds.ts [--check]
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { uniqueKinds } from "@stateward/core";
import { crdFiles } from "@stateward/core/crd-yaml";
import { selectOperators } from "@stateward/cli";

const dir = resolve(import.meta.dirname, "..", "crds");
const check = process.argv.includes("--check");
const files = crdFiles(uniqueKinds((await selectOperators()).flatMap((m) => m.kinds)));
const wanted = new Set(files.map((f) => f.fileName));
const problems: string[] = [];

mkdirSync(dir, { recursive: true });
for (const { fileName, content } of files) {
  const path = join(dir, fileName);
  const current = existsSync(path) ? readFileSync(path, "utf8") : undefined;
  if (current === content) continue;
  if (check) problems.push(current === undefined ? `missing ${fileName}` : `stale ${fileName}`);
  else writeFileSync(path, content);
}
for (const existing of readdirSync(dir).filter((f) => f.endsWith(".yaml"))) {
  if (wanted.has(existing)) continue;
  if (check) problems.push(`unexpected ${existing} (no kind generates it)`);
  else rmSync(join(dir, existing));
}
if (problems.length) {
  console.error(`crds/ is out of date with the schemas in code: ${problems.join(", ")}.\nRun \`make crds\` and commit the result.`);
  process.exit(1);
}
console.log(check ? `crds/ is up to date (${files.length} CRDs).` : `crds/: ${files.length} CRDs written.`);
