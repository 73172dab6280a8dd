// `stateward version`: this command's version and, from the cluster, the
// Kubernetes version, which Stateward CRDs are installed (and at which API
// versions), and the managers the Helm chart deployed with their versions.
import { parseArgs } from "node:util";
import { builtin, isForbidden, isNotFound, resourceType, type KubeClient, type KubeObject } from "@stateward/core";
import { allKinds } from "../operators.ts";
import { CommandError, EXIT, cliVersion, connect, connectionOptions, commandErrorMessage, outputFormat, outputOption } from "./common.ts";
import { render } from "./render.ts";

export const versionUsage = `Usage:
  stateward version [--client] [-o json|yaml] [--kubeconfig PATH] [--context NAME]

Prints this command's version and, unless --client: the cluster's Kubernetes version, the
Stateward CRDs installed there (and the API versions they serve), and the Stateward
managers the Helm chart deployed (Deployments labelled app.kubernetes.io/part-of=stateward,
app.kubernetes.io/component=manager), with their version and image.

Exit status: 0 printed; 2 usage error; 4 the cluster could not be reached (the client part
is printed).
`;

const deployment = resourceType("apps/v1", "Deployment", "deployments");
const MANAGER_SELECTOR = "app.kubernetes.io/part-of=stateward,app.kubernetes.io/component=manager";

interface ManagerInfo {
  namespace: string;
  name: string;
  version?: string;
  image?: string;
  ready: string;
}

interface VersionInfo {
  client: { version: string; apiVersions: string[]; node: string };
  server?: {
    kubernetes: string;
    crds: { name: string; installed: boolean; versions: string[] }[];
    /** Undefined when this identity may not list Deployments. */
    managers?: ManagerInfo[];
  };
}

type Crd = KubeObject & { spec: { versions: { name: string; served: boolean }[] } };
type Deployment = KubeObject & {
  spec?: { replicas?: number; template?: { spec?: { containers?: { image?: string }[] } } };
  status?: { readyReplicas?: number };
};

async function serverInfo(client: KubeClient): Promise<NonNullable<VersionInfo["server"]>> {
  const kubernetes = (await client.request<{ gitVersion?: string }>("GET", "/version")).gitVersion ?? "?";
  const kinds = await allKinds();
  const crds = await Promise.all(kinds.map(async (k) => {
    try {
      const crd = await client.get<Crd>(builtin.customResourceDefinition, undefined, k.crdName);
      return { name: k.crdName, installed: true, versions: crd.spec.versions.filter((v) => v.served).map((v) => v.name) };
    } catch (err) {
      if (isNotFound(err) || isForbidden(err)) return { name: k.crdName, installed: false, versions: [] };
      throw err;
    }
  }));
  let managers: ManagerInfo[] | undefined;
  try {
    const list = await client.list<Deployment>(deployment, { labelSelector: MANAGER_SELECTOR });
    managers = list.items.map((d) => ({
      namespace: d.metadata.namespace ?? "",
      name: d.metadata.name ?? "",
      version: d.metadata.labels?.["app.kubernetes.io/version"],
      image: d.spec?.template?.spec?.containers?.[0]?.image,
      ready: `${d.status?.readyReplicas ?? 0}/${d.spec?.replicas ?? 1}`,
    }));
  } catch (err) {
    if (!isForbidden(err)) throw err;
  }
  return { kubernetes, crds, managers };
}

export function versionText(info: VersionInfo): string {
  const lines = [`stateward ${info.client.version} (API ${info.client.apiVersions.join(", ")}; Node ${info.client.node})`];
  const s = info.server;
  if (s) {
    lines.push(`Kubernetes ${s.kubernetes}`);
    const installed = s.crds.filter((c) => c.installed);
    lines.push(`CRDs: ${installed.length} of ${s.crds.length} installed${installed.length < s.crds.length ? ` (missing: ${s.crds.filter((c) => !c.installed).map((c) => c.name).join(", ")})` : ""}`);
    for (const c of installed) lines.push(`  ${c.name} serves ${c.versions.join(", ") || "nothing"}`);
    if (s.managers === undefined) lines.push("Managers: not visible (this identity may not list Deployments)");
    else if (s.managers.length === 0) lines.push("Managers: none deployed by the Helm chart (a manager run by hand is not listed)");
    else for (const m of s.managers) lines.push(`Manager ${m.namespace}/${m.name}: version ${m.version ?? "?"}, image ${m.image ?? "?"}, ${m.ready} ready`);
  }
  return `${lines.join("\n")}\n`;
}

export async function version(argv: string[], out: (s: string) => void = (s) => process.stdout.write(s)): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { ...connectionOptions, ...outputOption, client: { type: "boolean", default: false } }, strict: true });
  const format = outputFormat(values.output);
  const apiVersions = [...new Set((await allKinds()).map((k) => k.apiVersion))];
  const info: VersionInfo = { client: { version: cliVersion(), apiVersions, node: process.version } };
  let failure: unknown;
  if (!values.client) {
    const { client } = connect(values);
    try {
      info.server = await serverInfo(client);
    } catch (err) {
      failure = err;
    }
  }
  out(format === "text" ? versionText(info) : render(format, info));
  if (failure !== undefined) throw new CommandError(EXIT.api, `cannot read the server's versions: ${commandErrorMessage(failure)}`);
  return EXIT.ok;
}
