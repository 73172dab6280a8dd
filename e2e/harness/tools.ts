// Where the test environment's binaries live. They are built once per machine
// by hack/build-tools.sh (`make tools`) into the cache folder, keyed by the
// versions pinned in e2e/tools/versions.env.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { EnvironmentError } from "./process.ts";

export const repoRoot = resolve(import.meta.dirname, "..", "..");

/** The cache outside git: $STATEWARD_CACHE, else $XDG_CACHE_HOME/stateward, else ~/.cache/stateward. */
export const cacheDir =
  process.env.STATEWARD_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "stateward");

function readVersions(): Record<string, string> {
  const text = readFileSync(join(repoRoot, "e2e", "tools", "versions.env"), "utf8");
  const versions: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const m = /^([A-Z_]+)=(\S+)/.exec(line);
    if (m?.[1] && m[2]) versions[m[1]] = m[2];
  }
  return versions;
}

export const versions = readVersions();

function version(key: string): string {
  const v = versions[key];
  if (!v) throw new EnvironmentError(`e2e/tools/versions.env has no ${key}`);
  return v;
}

function binary(tool: string, versionKey: string, name: string): string {
  const dir = join(cacheDir, "bin", `${tool}-${version(versionKey)}`);
  const path = join(dir, name);
  if (!existsSync(join(dir, ".complete")) || !existsSync(path)) {
    throw new EnvironmentError(
      `${name} ${version(versionKey)} is not built yet (expected ${path}). Run \`make tools\` ` +
        `(hack/build-tools.sh ${tool}); the first build takes several minutes.`,
    );
  }
  return path;
}

export const tools = {
  kubeApiserver: () => binary("kubernetes", "KUBERNETES_VERSION", "kube-apiserver"),
  kubeControllerManager: () => binary("kubernetes", "KUBERNETES_VERSION", "kube-controller-manager"),
  kubeScheduler: () => binary("kubernetes", "KUBERNETES_VERSION", "kube-scheduler"),
  kubectl: () => binary("kubernetes", "KUBERNETES_VERSION", "kubectl"),
  etcd: () => binary("etcd", "ETCD_VERSION", "etcd"),
  kwok: () => binary("kwok", "KWOK_VERSION", "kwok"),
  versitygw: () => binary("versitygw", "VERSITYGW_VERSION", "versitygw"),
  helm: () => binary("helm", "HELM_VERSION", "helm"),
  promtool: () => binary("promtool", "PROMETHEUS_VERSION", "promtool"),
};

/** KWOK's default Stage files, copied from its module by hack/build-tools.sh. */
export function kwokStages(): string[] {
  const dir = join(dirname(tools.kwok()), "stages");
  if (!existsSync(join(dir, ".complete"))) {
    throw new EnvironmentError(`KWOK stages are missing from ${dir}. Run \`make tools\`.`);
  }
  return readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort().map((f) => join(dir, f));
}

export const kubernetesVersion = (): string => version("KUBERNETES_VERSION");
