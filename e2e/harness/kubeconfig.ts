import { writeFileSync } from "node:fs";
import { stringify } from "yaml";

export interface KubeconfigOptions {
  server: string;
  caPem: string;
  user: { name: string; certPem?: string; keyPem?: string; token?: string };
  contextName?: string;
}

/** Writes a self-contained kubeconfig (certificates embedded) with mode 0600. */
export function writeKubeconfig(path: string, opts: KubeconfigOptions): void {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const context = opts.contextName ?? "stateward";
  const user: Record<string, string> = {};
  if (opts.user.certPem) user["client-certificate-data"] = b64(opts.user.certPem);
  if (opts.user.keyPem) user["client-key-data"] = b64(opts.user.keyPem);
  if (opts.user.token) user.token = opts.user.token;
  const doc = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: context, cluster: { server: opts.server, "certificate-authority-data": b64(opts.caPem) } }],
    users: [{ name: opts.user.name, user }],
    contexts: [{ name: context, context: { cluster: context, user: opts.user.name, namespace: "default" } }],
    "current-context": context,
  };
  writeFileSync(path, stringify(doc), { mode: 0o600 });
}
