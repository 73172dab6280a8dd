// The Helm chart (charts/stateward) as tests use it: rendered by the pinned helm, applied to
// the real control plane by the pinned kubectl with server-side apply — what `helm install`
// would create, without Helm's release bookkeeping.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { kubernetesVersion, repoRoot, tools } from "../harness/index.ts";

export const chartDir = join(repoRoot, "charts", "stateward");

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion; never throws for a non-zero exit (the caller decides). */
export function runCommand(cmd: string, args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: opts.env ?? process.env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(opts.input ?? "");
  });
}

let scratch: string | undefined;
/** A folder of this process for helm's homes and values files, so no test touches ~/.config/helm. */
function scratchDir(): string {
  scratch ??= mkdtempSync(join(tmpdir(), "stateward-chart-"));
  return scratch;
}

/** Removes the scratch folder (helm homes, values files); call it in afterAll. */
export function removeChartScratch(): void {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  scratch = undefined;
}

/** The pinned helm, with its config, cache and data homes in a scratch folder. */
export function helm(args: string[]): Promise<CommandResult> {
  const dir = scratchDir();
  return runCommand(tools.helm(), args, {
    env: {
      ...process.env,
      HELM_CONFIG_HOME: join(dir, "config"),
      HELM_CACHE_HOME: join(dir, "cache"),
      HELM_DATA_HOME: join(dir, "data"),
    },
  });
}

export interface RenderedObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

export interface RenderOptions {
  namespace: string;
  /** Defaults to "stateward" (what `make deploy` installs). */
  releaseName?: string;
  /** Values overriding values.yaml, written to a file and passed with -f. */
  values?: Record<string, unknown>;
  /** Also render crds/ (as `helm install` would create them first). */
  includeCrds?: boolean;
}

/**
 * `helm template` for the test control plane's Kubernetes version. Throws with helm's
 * message when the values or templates are refused.
 */
export async function renderChart(opts: RenderOptions): Promise<{ yaml: string; objects: RenderedObject[] }> {
  const args = ["template", opts.releaseName ?? "stateward", chartDir, "--namespace", opts.namespace, "--kube-version", kubernetesVersion()];
  if (opts.values) {
    const file = join(scratchDir(), `values-${process.hrtime.bigint()}.json`);
    writeFileSync(file, JSON.stringify(opts.values));
    args.push("--values", file);
  }
  if (opts.includeCrds) args.push("--include-crds");
  const result = await helm(args);
  if (result.code !== 0) throw new Error(`helm template failed: ${result.stderr.trim()}`);
  const objects = parseAllDocuments(result.stdout)
    .map((doc) => doc.toJS() as RenderedObject | null)
    .filter((o): o is RenderedObject => o !== null);
  return { yaml: result.stdout, objects };
}

/** `kubectl apply --server-side` of a multi-document manifest, as the admin of `kubeconfig`. */
export async function applyManifests(kubeconfig: string, yaml: string, fieldManager = "stateward-chart-test"): Promise<string> {
  const result = await runCommand(
    tools.kubectl(),
    ["--kubeconfig", kubeconfig, "apply", "--server-side", `--field-manager=${fieldManager}`, "-f", "-"],
    { input: yaml },
  );
  if (result.code !== 0) throw new Error(`kubectl apply --server-side failed: ${result.stderr.trim()}`);
  return result.stdout;
}

/** Deletes what a manifest created (missing objects are fine), without waiting for finalization. */
export async function deleteManifests(kubeconfig: string, yaml: string): Promise<void> {
  const result = await runCommand(
    tools.kubectl(),
    ["--kubeconfig", kubeconfig, "delete", "--ignore-not-found", "--wait=false", "-f", "-"],
    { input: yaml },
  );
  if (result.code !== 0) throw new Error(`kubectl delete failed: ${result.stderr.trim()}`);
}
