// `make build`: the `stateward` command as the image runs it, in two steps.
//
// 1. Each package the command runs (core, the operators, mysql, cli) is
//    compiled from src/*.ts to dist/*.js next to its src/. Each package.json
//    exports dist/ under the condition "stateward-dist", so only `node
//    --conditions=stateward-dist` resolves @stateward/* to the compiled files.
//    The sources use only erasable TypeScript (tsconfig.base.json), so each file
//    is transpiled on its own: no type check here (`make typecheck` does that).
// 2. Rolldown bundles cli/dist/main.js and everything it imports (node_modules
//    included) into dist/stateward.js at the repository's root, with one chunk
//    per operator under dist/chunks/, loaded only when the operator is selected.
//    Bundled, unused code is left out (client-node's generated client, the
//    parts of its dependencies nothing calls) and comments and whitespace are
//    gone: the idle database-user manager holds 89.5 MiB instead of 99–102 MiB
//    and starts with half the CPU of the same code loaded file by file
//    (docs/performance.md, finding 12). Functions and classes keep their names (keepNames), so stack
//    traces name them as the sources do. dist/package.json says the files
//    are ES modules. The image ships dist/ alone, without node_modules.
//
// Development, tests and `make run` keep running the .ts sources: Node strips
// their types at load time, which costs the manager about 0.3 s of CPU and the
// type stripper's memory at every start (docs/performance.md). dist/ folders
// are git-ignored.
//
// Usage: node hack/build.ts
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { build } from "rolldown";
import { asciiComments, builtinsChunk, builtinsOnUse, lazyRequire, slimUndici } from "./bundle-plugins.ts";
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

const bundleDir = join(root, "dist");
rmSync(bundleDir, { recursive: true, force: true });
const bundled = await build({
  input: join(root, "cli", "dist", "main.js"),
  platform: "node",
  // @stateward/* as compiled in step 1; every other package as Node would load it.
  resolve: { conditionNames: ["stateward-dist", "node", "import", "default"] },
  logLevel: "warn",
  output: {
    dir: bundleDir,
    format: "esm",
    entryFileNames: "stateward.js",
    chunkFileNames: "chunks/[name]-[hash].js",
    // Dead code dropped, whitespace removed and local names shortened: V8 keeps every loaded
    // chunk's source in memory, and the database-user manager's start loads 0.3 MB less of it
    // (docs/performance.md, finding 15). keepNames keeps functions' and classes' own names, so
    // stack traces, `err.name` and log fields read as in the sources.
    minify: { mangle: true, compress: true },
    keepNames: true,
    // V8 keeps a module's whole source for as long as its functions may still be compiled: one
    // non-ASCII character makes it a two-byte string, twice the memory (the chunks hold a few, in
    // strings and in the license comments kept). ASCII sources saved 2.1 MiB of the idle
    // manager's heap (docs/performance.md, finding 13).
    charset: "ascii",
    codeSplitting: { groups: [builtinsChunk] },
  },
  plugins: [builtinsOnUse, slimUndici, lazyRequire, asciiComments],
});
// The image has no package.json above dist/: without this one Node would first try each file as
// CommonJS and fall back to ES module syntax detection, which cost ~10 MiB of RSS at start.
writeFileSync(join(bundleDir, "package.json"), `${JSON.stringify({ type: "module" })}\n`);
const chunks = bundled.output.filter((o) => o.type === "chunk");
const bytes = chunks.reduce((n, c) => n + Buffer.byteLength(c.code), 0);
process.stdout.write(`build: dist/stateward.js and ${chunks.length - 1} chunks, ${(bytes / 1048576).toFixed(1)} MiB\n`);
