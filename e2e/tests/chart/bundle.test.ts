// The OLM bundle (bundle/, written by `make bundle`) against the chart it is generated from:
// OLM grants the manager exactly the rules the chart grants, in each of the chart's namespace
// modes; it runs the chart's Deployment; it owns the generated CRDs; and `make bundle-check`
// fails on a stale bundle and on one the Operator Framework validators refuse.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { afterAll, describe, expect, it } from "vitest";
import { kubernetesVersion, repoRoot } from "../../harness/index.ts";
import { removeChartScratch, renderChart, type RenderedObject } from "../../support/chart.ts";
import type { PolicyRule } from "../../support/rbac.ts";

afterAll(() => removeChartScratch());

interface Container {
  name: string;
  args: string[];
  env?: { name: string; valueFrom?: { fieldRef?: { fieldPath?: string } } }[];
}
interface DeploymentSpec {
  template: { metadata: { labels: Record<string, string> }; spec: { serviceAccountName: string; containers: Container[] } };
  [field: string]: unknown;
}
interface Csv {
  metadata: { name: string; annotations: Record<string, string> };
  spec: {
    version: string;
    minKubeVersion: string;
    installModes: { type: string; supported: boolean }[];
    customresourcedefinitions: { owned: { name: string; kind: string; version: string; description: string; specDescriptors: { path: string }[]; statusDescriptors: { path: string; "x-descriptors"?: string[] }[] }[] };
    install: {
      strategy: string;
      spec: {
        permissions: { serviceAccountName: string; rules: PolicyRule[] }[];
        clusterPermissions: { serviceAccountName: string; rules: PolicyRule[] }[];
        deployments: { name: string; spec: DeploymentSpec }[];
      };
    };
  };
}

const bundleDir = join(repoRoot, "bundle");
const csv = parse(readFileSync(join(bundleDir, "manifests", "stateward.clusterserviceversion.yaml"), "utf8")) as Csv;
const NS = "stateward-system";
const rulesOf = (o: RenderedObject | undefined) => {
  expect(o, "a rendered RBAC object").toBeDefined();
  return (o as RenderedObject & { rules: PolicyRule[] }).rules;
};
const named = (objects: RenderedObject[], kind: string, nameEnd: string) =>
  objects.filter((o) => o.kind === kind && o.metadata.name.endsWith(nameEnd));

describe("the OLM bundle grants what the chart grants", () => {
  const [scope, lease] = csv.spec.install.spec.permissions;

  it("AllNamespaces: permissions are the chart's cluster-wide ClusterRole and leader-election Role, clusterPermissions its crd-reader", async () => {
    const { objects } = await renderChart({ namespace: NS });
    expect(scope?.rules).toEqual(rulesOf(named(objects, "ClusterRole", ":manager")[0]));
    expect(lease?.rules).toEqual(rulesOf(named(objects, "Role", "-leader-election")[0]));
    expect(csv.spec.install.spec.clusterPermissions.map((p) => p.rules)).toEqual(named(objects, "ClusterRole", "").filter((r) => !r.metadata.name.endsWith(":manager")).map(rulesOf));
    expect(csv.spec.install.spec.permissions[2]?.rules).toEqual(rulesOf(named(objects, "Role", "-fingerprint-key")[0]));
    for (const p of [...csv.spec.install.spec.permissions, ...csv.spec.install.spec.clusterPermissions]) expect(p.serviceAccountName).toBe("stateward");
  });

  it("Own/Single/MultiNamespace: permissions are the Role the chart puts in each watched namespace (Secrets read with get)", async () => {
    const { objects } = await renderChart({ namespace: NS, values: { watchNamespaces: ["team-a", "team-b"], secretAccess: "get" } });
    const roles = named(objects, "Role", ":manager");
    expect(roles.map((r) => r.metadata.namespace).sort()).toEqual(["team-a", "team-b"]);
    for (const role of roles) expect(scope?.rules).toEqual(rulesOf(role));
    // Nothing cluster-wide beyond reading CRDs and getting Nodes, as in the chart.
    expect(named(objects, "ClusterRole", "").map(rulesOf)).toEqual(csv.spec.install.spec.clusterPermissions.map((p) => p.rules));
  });

  it("supports every install mode, as the chart supports both namespace modes", () => {
    expect(csv.spec.installModes).toEqual(
      ["OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces"].map((type) => ({ type, supported: true })),
    );
  });
});

describe("the OLM bundle runs the chart's Deployment", () => {
  it("is the chart's Deployment but for Helm's labels and the namespaces OLM targets", async () => {
    const { objects } = await renderChart({ namespace: NS });
    const chartDeployment = named(objects, "Deployment", "stateward")[0] as RenderedObject & { spec: DeploymentSpec };
    const [olm, ...more] = csv.spec.install.spec.deployments;
    expect(more).toHaveLength(0);
    expect(olm?.name).toBe(chartDeployment.metadata.name);

    const spec = structuredClone(olm!.spec);
    const manager = spec.template.spec.containers.find((c) => c.name === "manager")!;
    // The one addition: --namespaces from the pod's olm.targetNamespaces annotation ("" = all).
    const at = manager.args.indexOf("--namespaces");
    expect(manager.args[at + 1]).toBe("$(OLM_TARGET_NAMESPACES)");
    manager.args.splice(at, 2);
    const target = manager.env!.find((e) => e.name === "OLM_TARGET_NAMESPACES");
    expect(target?.valueFrom?.fieldRef?.fieldPath).toBe("metadata.annotations['olm.targetNamespaces']");
    manager.env = manager.env!.filter((e) => e !== target);

    const expected = structuredClone(chartDeployment.spec);
    const labels = expected.template.metadata.labels;
    delete labels["helm.sh/chart"];
    delete labels["app.kubernetes.io/managed-by"];
    expect(spec).toEqual(expected);
    // Secrets by name only: the rules above have no list/watch on them.
    expect(manager.args[manager.args.indexOf("--secrets") + 1]).toBe("get");
  });
});

describe("the OLM bundle's CSV and CRDs", () => {
  it("owns every generated CRD, byte for byte as in crds/, described from its schema", () => {
    const crdFiles = readdirSync(join(repoRoot, "crds")).filter((f) => f.endsWith(".yaml"));
    for (const f of crdFiles) expect(readFileSync(join(bundleDir, "manifests", f), "utf8"), f).toBe(readFileSync(join(repoRoot, "crds", f), "utf8"));
    const names = crdFiles.map((f) => (parse(readFileSync(join(repoRoot, "crds", f), "utf8")) as { metadata: { name: string } }).metadata.name);
    const owned = csv.spec.customresourcedefinitions.owned;
    expect(owned.map((o) => o.name).sort()).toEqual(names.sort());
    for (const o of owned) {
      const crd = parse(readFileSync(join(repoRoot, "crds", crdFiles.find((f) => f.endsWith(`_${o.name.split(".")[0]}.yaml`))!), "utf8")) as {
        spec: { versions: { name: string; schema: { openAPIV3Schema: { description: string; properties: { spec: { properties: object } } } } }[] };
      };
      const schema = crd.spec.versions.find((v) => v.name === o.version)!.schema.openAPIV3Schema;
      expect(o.description).toBe(schema.description);
      for (const field of Object.keys(schema.properties.spec.properties)) expect(o.specDescriptors.map((d) => d.path)).toContain(field);
      expect(o.statusDescriptors.find((d) => d.path === "conditions")?.["x-descriptors"]).toEqual(["urn:alm:descriptor:io.kubernetes.conditions"]);
    }
  });

  it("is version stateward.v<cli version>, with an example of every kind from examples/", () => {
    const version = (JSON.parse(readFileSync(join(repoRoot, "cli", "package.json"), "utf8")) as { version: string }).version;
    expect(csv.metadata.name).toBe(`stateward.v${version}`);
    expect(csv.spec.version).toBe(version);
    expect(csv.spec.minKubeVersion).toBe("1.30.0");
    const examples = JSON.parse(csv.metadata.annotations["alm-examples"]!) as { kind: string; metadata: { name: string } }[];
    expect(new Set(examples.map((e) => e.kind))).toEqual(new Set(csv.spec.customresourcedefinitions.owned.map((o) => o.kind)));
    const fromFiles = readdirSync(join(repoRoot, "examples"), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".yaml"))
      .flatMap((f) => parseAllDocuments(readFileSync(join(repoRoot, "examples", f), "utf8")).map((d) => d.toJS() as { kind: string; metadata: { name: string } }))
      .filter((o) => o.kind !== "Secret");
    expect(examples.map((e) => `${e.kind}/${e.metadata.name}`).sort()).toEqual(fromFiles.map((e) => `${e.kind}/${e.metadata.name}`).sort());
  });
});

describe("make bundle-check", () => {
  const validator = join(repoRoot, ".stateward", "bin", "bundle-validate");
  const k8sMinor = /^v(\d+\.\d+)/.exec(kubernetesVersion())![1]!;
  const validate = (dir: string) => spawnSync(validator, ["-k8s-version", k8sMinor, dir], { encoding: "utf8" });
  const copies: string[] = [];
  const copyOfBundle = () => {
    const dir = mkdtempSync(join(tmpdir(), "stateward-bundle-"));
    copies.push(dir);
    cpSync(bundleDir, dir, { recursive: true });
    return dir;
  };
  afterAll(() => copies.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it("the committed bundle passes the default validators and the operatorframework suite", () => {
    expect(existsSync(validator), `${validator} (hack/build-tools.sh bundle-validate)`).toBe(true);
    const r = validate(bundleDir);
    expect(r.status, r.stdout + r.stderr).toBe(0);
  });

  it("refuses a bundle whose CSV owns a CRD the bundle lacks, or whose Dockerfile labels disagree with its annotations", () => {
    const missingCrd = copyOfBundle();
    rmSync(join(missingCrd, "manifests", "stateward.io_mysqlclusters.yaml"));
    const r1 = validate(missingCrd);
    expect(r1.status).toBe(1);
    expect(r1.stderr).toContain(`owned CRD "stateward.io/v1alpha1, Kind=MySQLCluster" not found in bundle`);

    const badLabels = copyOfBundle();
    const dockerfile = join(badLabels, "bundle.Dockerfile");
    writeFileSync(dockerfile, readFileSync(dockerfile, "utf8").replace("channels.v1=candidate", "channels.v1=stable"));
    const r2 = validate(badLabels);
    expect(r2.status).toBe(1);
    expect(r2.stderr).toMatch(/bundle\.Dockerfile: LABEL operators\.operatorframework\.io\.bundle\.channels\.v1="stable"/);
  });

  it("fails on a stale bundle: one file edited by hand", () => {
    const stale = copyOfBundle();
    const service = readdirSync(join(stale, "manifests")).find((f) => f.endsWith("_service.yaml"))!;
    writeFileSync(join(stale, "manifests", service), readFileSync(join(stale, "manifests", service), "utf8").replace("port: 8080", "port: 9090"));
    writeFileSync(join(stale, "manifests", "extra.yaml"), "kind: ConfigMap\n");
    const r = spawnSync(process.execPath, [join(repoRoot, "hack", "generate-bundle.ts"), "--check", "--out", stale], { encoding: "utf8" });
    expect(r.status, r.stdout + r.stderr).toBe(1);
    expect(r.stderr).toContain(`stale manifests/${service}`);
    expect(r.stderr).toContain("unexpected manifests/extra.yaml");
  });
});
