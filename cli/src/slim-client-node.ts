// Loads @kubernetes/client-node's KubeConfig without the generated API client.
//
// The manager uses KubeConfig (kubeconfig files, in-cluster config, client
// certificates, tokens, exec and OIDC plugins) and RequestContext, and makes its
// requests itself (core's KubeClient). But client-node's config.js imports two
// names from its generated client's index, and that index loads every API
// group and model: about 0.7 s of CPU, 40 MiB of RSS and 15 MiB of live heap
// at every start, for nothing (docs/performance.md). This module hook gives
// config.js, and only config.js, an index with just those two names, from the
// generated client's own modules. Any other import of client-node is untouched.
//
// Registered by main.ts before anything imports client-node. Should a new
// client-node import another name there, linking config.js fails at start
// with "does not provide an export named …" (and slim-client-node.test.ts
// fails first): add the name to `configIndexExports`.
import { registerHooks } from "node:module";

/** What client-node's dist/config.js imports from "./gen/index.js", and from which generated module. */
export const configIndexExports: Readonly<Record<string, string>> = {
  createConfiguration: "./configuration.js",
  ServerConfiguration: "./servers.js",
};

const configModule = "/@kubernetes/client-node/dist/config.js";
const slimIndex = "/@kubernetes/client-node/dist/gen/stateward-config-index.js";

/** The source of the slim index: re-exports of `configIndexExports`. */
export function slimIndexSource(exports: Readonly<Record<string, string>> = configIndexExports): string {
  return Object.entries(exports)
    .map(([name, from]) => `export { ${name} } from ${JSON.stringify(from)};`)
    .join("\n");
}

let registered = false;

export function registerSlimClientNode(): void {
  if (registered) return;
  registered = true;
  registerHooks({
    resolve(specifier, context, next) {
      if (specifier === "./gen/index.js" && context.parentURL?.endsWith(configModule)) {
        return { url: new URL("./gen/stateward-config-index.js", context.parentURL).href, format: "module", shortCircuit: true };
      }
      return next(specifier, context);
    },
    load(url, context, next) {
      if (url.endsWith(slimIndex)) return { format: "module", source: slimIndexSource(), shortCircuit: true };
      return next(url, context);
    },
  });
}
