// `make build`: compiles the packages the `stateward` command runs (core, the
// operators, mysql, cli) from src/*.ts to dist/*.js next to each package's
// src/, for `stateward run` in the image. Development, tests and `make run`
// keep running the .ts sources: Node strips their types at load time, which
// costs the manager about 0.3 s of CPU and the type stripper's memory at every
// start (docs/performance.md). Each package.json exports dist/ under the
// condition "stateward-dist", so only `node --conditions=stateward-dist`
// resolves @stateward/* to the compiled files. dist/ is git-ignored.
//
// The sources use only erasable TypeScript (tsconfig.base.json), so each file
// is transpiled on its own: no type check here (`make typecheck` does that).
//
// Usage: node hack/build.ts
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const root = resolve(import.meta.dirname, "..");
const packages = ["core", "operators/mysql", "operators/database-user", "operators/mysql-backup", "operators/mysql-cluster", "cli"];

const compilerOptions: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2024,
  // ES modules as written (every package is "type": "module"); NodeNext would need each package.json to decide.
  module: ts.ModuleKind.ES2022,
  verbatimModuleSyntax: true,
  // `./x.ts` in an import becomes `./x.js`.
  rewriteRelativeImportExtensions: true,
  sourceMap: false,
  removeComments: false,
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

let files = 0;
for (const pkg of packages) {
  const src = join(root, pkg, "src");
  const out = join(root, pkg, "dist");
  rmSync(out, { recursive: true, force: true });
  for (const file of sources(src)) {
    const { outputText, diagnostics } = ts.transpileModule(readFileSync(file, "utf8"), { compilerOptions, fileName: file, reportDiagnostics: true });
    if (diagnostics?.length) {
      throw new Error(`${relative(root, file)}: ${ts.flattenDiagnosticMessageText(diagnostics[0]!.messageText, "\n")}`);
    }
    const target = join(out, relative(src, file)).replace(/\.ts$/, ".js");
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
    files++;
  }
}
process.stdout.write(`build: ${files} files compiled into ${packages.map((p) => `${p}/dist`).join(", ")}\n`);
