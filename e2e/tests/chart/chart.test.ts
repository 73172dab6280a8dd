// The Helm chart (charts/stateward): it lints, renders what a user configures (cluster-wide
// or per namespace, a target, a subset of operators), its schema refuses a wrongly typed
// value anywhere, its CRDs are the generated ones, and — applied to the real control plane
// with server-side apply — its ServiceAccount can do exactly what the RBAC rules say:
// what the operators need, and nothing like deleting a namespace.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { builtin, isForbidden, isNotFound, KubeClient, type KubeObject } from "@stateward/core";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { repoRoot } from "../../harness/index.ts";
import {
  applyManifests,
  chartDir,
  deleteManifests,
  helm,
  removeChartScratch,
  renderChart,
  type RenderedObject,
} from "../../support/chart.ts";
import { deleteNamespace, kubeConfigFrom, testClient } from "../../support/kube.ts";
import { serviceAccountKubeconfig } from "../../support/service-account.ts";
import { waitFor } from "../../support/wait.ts";
import { randomBytes } from "node:crypto";

const env = inject("environment");
const ALL_OPERATORS = ["database-user", "mysql-backup", "mysql-cluster"];

afterAll(() => removeChartScratch());

// --- reading rendered objects -------------------------------------------------------------

interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
}
interface Container {
  name: string;
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath?: string } } }[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: { httpGet?: { path?: string; port?: string | number } };
  readinessProbe?: { httpGet?: { path?: string; port?: string | number } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
}
interface Deployment extends RenderedObject {
  spec: {
    replicas: number;
    template: { spec: { serviceAccountName: string; securityContext?: Record<string, unknown>; containers: Container[] } };
  };
}

const ofKind = (objects: RenderedObject[], kind: string) => objects.filter((o) => o.kind === kind);
const rulesOf = (o: RenderedObject) => (o as RenderedObject & { rules?: PolicyRule[] }).rules ?? [];

function deploymentOf(objects: RenderedObject[]): Deployment {
  const [d, ...more] = ofKind(objects, "Deployment");
  expect(d, "one Deployment").toBeDefined();
  expect(more).toHaveLength(0);
  return d as Deployment;
}

function managerContainer(objects: RenderedObject[]): Container {
  const c = deploymentOf(objects).spec.template.spec.containers.find((x) => x.name === "manager");
  expect(c, "a container named manager").toBeDefined();
  return c!;
}

/** "group/resource:verb" for every permission a rule list grants ("" group written as "core"), sorted, no repeats. */
function permissions(rules: PolicyRule[]): string[] {
  const out = new Set<string>();
  for (const r of rules)
    for (const g of r.apiGroups ?? [])
      for (const res of r.resources ?? []) for (const v of r.verbs ?? []) out.add(`${g || "core"}/${res}:${v}`);
  return [...out].sort();
}

/** The value following `flag` in the args, or undefined when the flag is absent. */
function flagValue(args: string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
}

// The permissions each part needs in the watched scope (docs/architecture.md: what each operator reads and writes).
const perms = (group: string, resources: string[], verbs: string[]) =>
  resources.flatMap((r) => verbs.map((v) => `${group}/${r}:${v}`));
// Exactly what each operator's requests use (rbac.test.ts proves it).
const expectedPermissions: Record<string, string[]> = {
  core: perms("events.k8s.io", ["events"], ["create", "patch"]),
  "database-user": [
    // patch on MySQLInstances and Secrets: the in-use finalizer (operators/database-user/src/in-use.ts).
    ...perms("stateward.io", ["mysqlinstances"], ["get", "list", "watch", "patch"]),
    ...perms("stateward.io", ["databaseusers"], ["list", "watch", "patch"]),
    ...perms("stateward.io", ["mysqlinstances/status", "databaseusers/status"], ["update"]),
    ...perms("core", ["secrets"], ["get", "list", "watch", "patch"]),
  ],
  "mysql-backup": [
    ...perms("stateward.io", ["mysqlbackups"], ["get", "list", "watch", "create", "patch", "delete"]),
    ...perms("stateward.io", ["mysqlrestores"], ["get", "list", "watch", "patch"]),
    ...perms("stateward.io", ["mysqlbackupschedules"], ["list", "watch"]),
    ...perms("stateward.io", ["mysqlbinlogarchives"], ["get", "list", "watch"]),
    ...perms("stateward.io", ["mysqlbackups/status", "mysqlrestores/status", "mysqlbackupschedules/status", "mysqlbinlogarchives/status"], ["update"]),
    ...perms("stateward.io", ["mysqlinstances"], ["get", "list", "watch"]),
    ...perms("stateward.io", ["mysqlinstances/status"], ["update"]),
    ...perms("core", ["secrets"], ["get", "list", "watch"]),
  ],
  "mysql-cluster": [
    ...perms("stateward.io", ["mysqlclusters"], ["get", "list", "watch"]),
    ...perms("stateward.io", ["mysqlclusters/status"], ["update"]),
    ...perms("stateward.io", ["mysqlclusters/finalizers"], ["update"]),
    ...perms("apps", ["statefulsets"], ["get", "list", "watch", "create", "patch", "delete"]),
    ...perms("core", ["persistentvolumeclaims"], ["list", "patch"]),
    ...perms("core", ["services", "configmaps"], ["get", "list", "watch", "create", "patch"]),
    ...perms("policy", ["poddisruptionbudgets"], ["get", "list", "watch", "create", "patch"]),
    ...perms("stateward.io", ["mysqlinstances"], ["get", "list", "watch", "create", "patch"]),
    ...perms("stateward.io", ["mysqlinstances/status"], ["update"]),
    ...perms("core", ["secrets"], ["get", "list", "watch", "create", "patch"]),
    ...perms("core", ["pods"], ["list", "watch", "patch", "delete"]),
    ...perms("core", ["pods/status"], ["patch"]),
    ...perms("stateward.io", ["mysqlbackups"], ["list", "create"]),
  ],
};
/**
 * With `--secrets get` (the default cluster-wide) Secrets are only read by name: no list or
 * watch on them; with `watch` (the default in listed namespaces) the rules above.
 */
const expectedFor = (operators: string[], secrets: "watch" | "get" = "watch") =>
  [...new Set([...expectedPermissions.core!, ...operators.flatMap((o) => expectedPermissions[o]!)])]
    .filter((p) => secrets === "watch" || !["core/secrets:list", "core/secrets:watch"].includes(p))
    .sort();

/** The rules of the watched scope, however they are bound: the ClusterRole or Role named "...:manager". */
function managerRoles(objects: RenderedObject[]): RenderedObject[] {
  return objects.filter((o) => (o.kind === "ClusterRole" || o.kind === "Role") && o.metadata.name.endsWith(":manager"));
}

const RELEASE_NS = "stateward-system";

// --- helm lint / template -------------------------------------------------------------------

describe("helm lint and helm template", () => {
  it("lints cleanly with the default values and with a namespace-scoped, targeted configuration", async () => {
    const plain = await helm(["lint", "--strict", chartDir]);
    expect(plain.code, plain.stdout + plain.stderr).toBe(0);
    expect(plain.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    const scoped = await helm(["lint", "--strict", chartDir, "--set-json", 'watchNamespaces=["team-a","team-b"]', "--set", "target=orders-db"]);
    expect(scoped.code, scoped.stdout + scoped.stderr).toBe(0);
  });

  it("renders cluster-wide RBAC, a hardened Deployment and the metrics Service for the default values", async () => {
    const { objects } = await renderChart({ namespace: RELEASE_NS });
    const sa = ofKind(objects, "ServiceAccount");
    expect(sa.map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual([`${RELEASE_NS}/stateward`]);

    // The watched scope is the whole cluster: one ClusterRole with every operator's rules, bound to the ServiceAccount.
    const [manager, ...others] = managerRoles(objects);
    expect(others).toHaveLength(0);
    expect(manager?.kind).toBe("ClusterRole");
    // Cluster-wide, Secrets are only got by name: the manager cannot list the cluster's Secrets.
    expect(permissions(rulesOf(manager!))).toEqual(expectedFor(ALL_OPERATORS, "get"));
    const binding = ofKind(objects, "ClusterRoleBinding").find((b) => b.metadata.name === manager!.metadata.name) as
      | (RenderedObject & { subjects: { kind: string; name: string; namespace: string }[]; roleRef: { kind: string; name: string } })
      | undefined;
    expect(binding?.roleRef).toMatchObject({ kind: "ClusterRole", name: manager!.metadata.name });
    expect(binding?.subjects).toEqual([{ kind: "ServiceAccount", name: "stateward", namespace: RELEASE_NS }]);

    // CRDs are only got (the manager runs with --crds verify); the Lease lives in the release namespace.
    const crdReader = ofKind(objects, "ClusterRole").find((o) => o.metadata.name.endsWith(":crd-reader"));
    expect(permissions(rulesOf(crdReader!))).toEqual(perms("apiextensions.k8s.io", ["customresourcedefinitions"], ["get"]));
    // mysql-cluster gets Nodes by name (a silent primary's node, a failover signal): no list, no watch.
    const nodeReader = ofKind(objects, "ClusterRole").find((o) => o.metadata.name.endsWith(":node-reader"));
    expect(permissions(rulesOf(nodeReader!))).toEqual(["core/nodes:get"]);
    const leader = ofKind(objects, "Role").find((o) => o.metadata.name.endsWith("-leader-election"));
    expect(leader?.metadata.namespace).toBe(RELEASE_NS);
    expect(rulesOf(leader!)).toContainEqual({ apiGroups: ["coordination.k8s.io"], resources: ["leases"], resourceNames: ["stateward-manager"], verbs: ["get", "update"] });
    expect(permissions(rulesOf(leader!))).toContain("coordination.k8s.io/leases:create");
    // database-user creates the Secret of its fingerprint key there, and may read only that one.
    const fingerprintKey = ofKind(objects, "Role").find((o) => o.metadata.name.endsWith("-fingerprint-key"));
    expect(fingerprintKey?.metadata.namespace).toBe(RELEASE_NS);
    expect(rulesOf(fingerprintKey!)).toEqual([
      { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
      { apiGroups: [""], resources: ["secrets"], resourceNames: ["stateward-fingerprint-key"], verbs: ["get"] },
    ]);

    const deployment = deploymentOf(objects);
    expect(deployment.metadata.namespace).toBe(RELEASE_NS);
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.template.spec.serviceAccountName).toBe("stateward");
    const c = managerContainer(objects);
    const args = c.args ?? [];
    expect(args[0]).toBe("run");
    expect(flagValue(args, "--operators")).toBe(ALL_OPERATORS.join(","));
    expect(args).toContain("--leader-elect");
    expect(flagValue(args, "--crds")).toBe("verify");
    expect(flagValue(args, "--metrics-addr")).toBe(":8080");
    expect(flagValue(args, "--health-addr")).toBe(":8081");
    expect(flagValue(args, "--log-level")).toBe("info");
    expect(flagValue(args, "--secrets")).toBe("get");
    expect(args).not.toContain("--namespaces");
    expect(args).not.toContain("--target");

    // Probes on the health port; non-root, read-only, no privileges, RuntimeDefault seccomp.
    expect(c.ports).toEqual(expect.arrayContaining([{ name: "metrics", containerPort: 8080, protocol: "TCP" }, { name: "health", containerPort: 8081, protocol: "TCP" }]));
    expect(c.livenessProbe?.httpGet).toMatchObject({ path: "/healthz", port: "health" });
    expect(c.readinessProbe?.httpGet).toMatchObject({ path: "/readyz", port: "health" });
    expect(c.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 65532,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(deployment.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: "RuntimeDefault" } });
    expect(c.env).toContainEqual({ name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } });
    // /tmp, where a point-in-time restore downloads its binlog files, and its size told to the manager (it refuses what would not fit).
    expect((deployment.spec.template.spec as { volumes?: unknown[] }).volumes).toContainEqual({ name: "tmp", emptyDir: { sizeLimit: "4Gi" } });
    expect(c.env).toContainEqual({ name: "STATEWARD_SCRATCH_LIMIT", value: "4Gi" });
    expect(c.resources?.requests).toMatchObject({ cpu: "50m", memory: "128Mi" });
    expect(c.resources?.limits).toMatchObject({ memory: "512Mi" });

    const service = ofKind(objects, "Service")[0] as (RenderedObject & { spec: { ports: { port: number; targetPort: string }[] } }) | undefined;
    expect(service?.spec.ports).toEqual([expect.objectContaining({ port: 8080, targetPort: "metrics" })]);
    expect(ofKind(objects, "ServiceMonitor")).toHaveLength(0);
  });

  it("renders a Role and RoleBinding per watched namespace instead of a ClusterRole, with --namespaces and --target", async () => {
    const { objects } = await renderChart({ namespace: RELEASE_NS, values: { watchNamespaces: ["team-a", "team-b"], target: "orders-db" } });
    const roles = managerRoles(objects);
    expect(roles.map((r) => `${r.kind} ${r.metadata.namespace}`).sort()).toEqual(["Role team-a", "Role team-b"]);
    for (const role of roles) expect(permissions(rulesOf(role))).toEqual(expectedFor(ALL_OPERATORS));
    const bindings = ofKind(objects, "RoleBinding").filter((b) => b.metadata.name.endsWith(":manager"));
    expect(bindings.map((b) => b.metadata.namespace).sort()).toEqual(["team-a", "team-b"]);
    // The only cluster-wide grants left are reading CRDs and getting Nodes (mysql-cluster's failover).
    const clusterRoles = ofKind(objects, "ClusterRole");
    expect(clusterRoles.map((r) => r.metadata.name)).toEqual([`${RELEASE_NS}:stateward:crd-reader`, `${RELEASE_NS}:stateward:node-reader`]);
    expect(permissions(clusterRoles.flatMap(rulesOf)).every((p) => p.startsWith("apiextensions.k8s.io/customresourcedefinitions:") || p === "core/nodes:get")).toBe(true);

    const args = managerContainer(objects).args ?? [];
    expect(flagValue(args, "--namespaces")).toBe("team-a,team-b");
    expect(flagValue(args, "--target")).toBe("orders-db");
    expect(flagValue(args, "--secrets")).toBe("watch");
  });

  it("follows secretAccess when it is set: watch cluster-wide, get in listed namespaces", async () => {
    const watching = await renderChart({ namespace: RELEASE_NS, values: { secretAccess: "watch" } });
    expect(permissions(rulesOf(managerRoles(watching.objects)[0]!))).toEqual(expectedFor(ALL_OPERATORS, "watch"));
    expect(flagValue(managerContainer(watching.objects).args ?? [], "--secrets")).toBe("watch");
    const getting = await renderChart({ namespace: RELEASE_NS, values: { watchNamespaces: ["team-a"], secretAccess: "get" } });
    expect(permissions(rulesOf(managerRoles(getting.objects)[0]!))).toEqual(expectedFor(ALL_OPERATORS, "get"));
    expect(flagValue(managerContainer(getting.objects).args ?? [], "--secrets")).toBe("get");
  });

  it("grants only what the enabled operators use", async () => {
    const unused = /mysqlbackups|mysqlrestores|mysqlbackupschedules|mysqlbinlogarchives|mysqlclusters|statefulsets|poddisruptionbudgets|pods|persistentvolumeclaims|services|configmaps|nodes/;
    const { objects } = await renderChart({ namespace: RELEASE_NS, values: { operators: ["database-user"] } });
    const rules = objects.filter((o) => o.kind === "ClusterRole" || o.kind === "Role").flatMap(rulesOf);
    for (const rule of rules) expect(rule.resources?.join(",")).not.toMatch(unused);
    expect(permissions(rulesOf(managerRoles(objects)[0]!))).toEqual(expectedFor(["database-user"], "get"));
    // Secrets are only read by database-user, by name, and patched for the in-use finalizer: no list, watch,
    // create or delete — but for its fingerprint key, created in the release namespace (a Role there,
    // reading only that name).
    const scoped = objects.filter((o) => (o.kind === "ClusterRole" || o.kind === "Role") && !o.metadata.name.endsWith("-fingerprint-key")).flatMap(rulesOf);
    expect(permissions(scoped).filter((p) => p.startsWith("core/secrets:"))).toEqual(["core/secrets:get", "core/secrets:patch"]);
    expect(ofKind(objects, "Role").find((o) => o.metadata.name.endsWith("-fingerprint-key"))?.metadata.namespace).toBe(RELEASE_NS);
    expect(flagValue(managerContainer(objects).args ?? [], "--operators")).toBe("database-user");

    const backupOnly = await renderChart({ namespace: RELEASE_NS, values: { operators: ["mysql-backup"] } });
    const backupRules = rulesOf(managerRoles(backupOnly.objects)[0]!);
    expect(permissions(backupRules)).toEqual(expectedFor(["mysql-backup"], "get"));
    expect(backupRules.flatMap((r) => r.resources ?? [])).not.toContain("databaseusers");
    expect(backupRules.flatMap((r) => r.resources ?? [])).not.toContain("statefulsets");
    expect(ofKind(backupOnly.objects, "Role").filter((o) => o.metadata.name.endsWith("-fingerprint-key"))).toHaveLength(0);
  });

  it("runs 2 replicas only with leader election, and renders the ServiceMonitor, PrometheusRule and dashboard when asked", async () => {
    const two = await renderChart({ namespace: RELEASE_NS, values: { replicaCount: 2 } });
    expect(deploymentOf(two.objects).spec.replicas).toBe(2);
    await expect(renderChart({ namespace: RELEASE_NS, values: { replicaCount: 2, leaderElection: { enabled: false } } })).rejects.toThrow(
      /replicaCount > 1 needs leaderElection\.enabled=true/,
    );
    const single = await renderChart({ namespace: RELEASE_NS, values: { leaderElection: { enabled: false } } });
    expect(managerContainer(single.objects).args).not.toContain("--leader-elect");
    expect(ofKind(single.objects, "Role").filter((r) => r.metadata.name.endsWith("-leader-election"))).toHaveLength(0);

    const monitored = await renderChart({
      namespace: RELEASE_NS,
      values: { metrics: { port: 9090, serviceMonitor: { enabled: true, interval: "15s", labels: { release: "prometheus" } } } },
    });
    const [sm] = ofKind(monitored.objects, "ServiceMonitor") as (RenderedObject & { spec: { endpoints: Record<string, unknown>[] } })[];
    expect(sm?.metadata.labels?.release).toBe("prometheus");
    // honorLabels: the per-resource series' namespace label is the resource's, not the manager pod's.
    expect(sm?.spec.endpoints).toEqual([{ port: "metrics", path: "/metrics", interval: "15s", honorLabels: true }]);
    expect(flagValue(managerContainer(monitored.objects).args ?? [], "--metrics-addr")).toBe(":9090");
    expect(ofKind(monitored.objects, "PrometheusRule")).toHaveLength(0);
    expect(ofKind(monitored.objects, "ConfigMap")).toHaveLength(0);

    const alerting = await renderChart({
      namespace: RELEASE_NS,
      values: { metrics: { prometheusRule: { enabled: true, labels: { release: "prometheus" } }, grafanaDashboard: { enabled: true, namespace: "grafana" } } },
    });
    const [rule] = ofKind(alerting.objects, "PrometheusRule") as (RenderedObject & { spec: unknown })[];
    expect(rule?.metadata.labels?.release).toBe("prometheus");
    // The rule file as it is: its {{ $labels.x }} templates are left for Prometheus, not rendered by helm.
    expect(rule?.spec).toEqual(parse(readFileSync(join(chartDir, "files/prometheus-rules.yaml"), "utf8")));
    const [dashboard] = ofKind(alerting.objects, "ConfigMap") as (RenderedObject & { data: Record<string, string> })[];
    expect(dashboard?.metadata.namespace).toBe("grafana");
    expect(dashboard?.metadata.labels?.grafana_dashboard).toBe("1");
    expect(JSON.parse(dashboard?.data["stateward.json"] ?? "")).toEqual(JSON.parse(readFileSync(join(chartDir, "files/grafana-dashboard.json"), "utf8")));
  });

  // Node sizes its heap to about half the cgroup limit but never below 256 MiB: a limit the chart
  // does not read leaves a small pod to be OOM-killed instead of collecting garbage.
  it("sizes the manager's heap to 5/8 of its memory limit in any unit Kubernetes reads, and refuses a limit it cannot size", async () => {
    const heapFor = async (values: Record<string, unknown>) =>
      managerContainer((await renderChart({ namespace: RELEASE_NS, values })).objects).env?.find((e) => e.name === "NODE_OPTIONS")?.value;
    const limit = (memory: unknown) => ({ resources: { limits: { memory } } });
    const cases: [string, Record<string, unknown>, string | undefined][] = [
      ["the default 512Mi", {}, "--max-old-space-size=320"],
      ["2Gi", limit("2Gi"), "--max-old-space-size=1280"],
      ["0.5Gi", limit("0.5Gi"), "--max-old-space-size=320"],
      ["262144Ki", limit("262144Ki"), "--max-old-space-size=160"],
      // Decimal units: 1G is 953.7 MiB, 300M 286.1 MiB.
      ["1G", limit("1G"), "--max-old-space-size=596"],
      ["300M", limit("300M"), "--max-old-space-size=178"],
      ["1e9 bytes", limit("1e9"), "--max-old-space-size=596"],
      ["536870912 bytes, a number", limit(536870912), "--max-old-space-size=320"],
      ["heapMaxMiB over the limit's share", { heapMaxMiB: 200 }, "--max-old-space-size=200"],
      // No limit: nothing to size for, Node's own default.
      ["no limit", limit(null), undefined],
    ];
    for (const [what, values, expected] of cases) expect(await heapFor(values), what).toBe(expected);

    await expect(renderChart({ namespace: RELEASE_NS, values: limit("100Mi") })).rejects.toThrow(/resources\.limits\.memory 100Mi is below the 128Mi the manager needs/);
    // 512m is a valid quantity (milli-bytes), not a size anyone means: a clear error, not Node's default.
    await expect(renderChart({ namespace: RELEASE_NS, values: limit("512m") })).rejects.toThrow(/cannot size the manager's heap from resources\.limits\.memory "512m".*set heapMaxMiB/);
  });
});

// --- values.schema.json ----------------------------------------------------------------------

interface SchemaCase {
  /** The --set-json override. */
  set: string;
  /** JSON pointer helm's message must name (it prints "at '<pointer>'"). */
  pointer: string;
}

/** Values whose entries are free-form (any key), as opposed to objects with fixed fields. */
const FREE_FORM_MAPS = new Set([
  "podAnnotations", "nodeSelector", "metrics.serviceMonitor.labels", "metrics.prometheusRule.labels", "metrics.grafanaDashboard.labels", "resources.requests", "resources.limits",
]);

/**
 * One wrongly typed override for every value of values.yaml, top-level and nested (derived
 * from the file, so a value added later is covered without touching this test), plus an
 * unknown key in every object with fixed fields.
 */
function schemaCases(values: Record<string, unknown>): SchemaCase[] {
  const cases: SchemaCase[] = [];
  const walk = (node: unknown, path: string[]) => {
    const key = path.join(".");
    const pointer = `/${path.join("/")}`;
    const set = (value: unknown, at = pointer) => cases.push({ set: `${key}=${JSON.stringify(value)}`, pointer: at });
    if (Array.isArray(node)) {
      set("not-a-list");
      // An element of the wrong type: lists here hold strings or objects, never numbers.
      set([42], `${pointer}/0`);
    } else if (node !== null && typeof node === "object") {
      set("not-an-object");
      const entries = Object.entries(node);
      if (FREE_FORM_MAPS.has(key)) set({ "stateward-test": true }, `${pointer}/stateward-test`);
      else cases.push({ set: `${key}.strayField=1`, pointer });
      for (const [k, v] of entries) walk(v, [...path, k]);
    } else if (typeof node === "string") set(true);
    else if (typeof node === "number") set("not-a-number");
    else if (typeof node === "boolean") set("not-a-boolean");
  };
  for (const [k, v] of Object.entries(values)) walk(v, [k]);
  cases.push({ set: "strayTopLevelValue=1", pointer: "" });
  return cases;
}

describe("values.schema.json", () => {
  const defaults = parse(readFileSync(join(chartDir, "values.yaml"), "utf8")) as Record<string, unknown>;
  const cases = schemaCases(defaults);

  it("covers every value of values.yaml", () => {
    const pointers = new Set(cases.map((c) => c.pointer));
    for (const leaf of ["/image/tag", "/image/pullPolicy", "/metrics/serviceMonitor/interval", "/resources/requests/cpu", "/leaderElection/enabled", "/replicaCount", "/affinity"]) {
      expect(pointers).toContain(leaf);
    }
    expect(cases.length).toBeGreaterThanOrEqual(40);
  });

  it("rejects a wrongly typed value anywhere, naming the value", async () => {
    const failures: string[] = [];
    // A few helm processes at a time: each is short, but there are dozens.
    for (let i = 0; i < cases.length; i += 6) {
      await Promise.all(
        cases.slice(i, i + 6).map(async (c) => {
          const r = await helm(["template", "stateward", chartDir, "--set-json", c.set]);
          if (r.code === 0) failures.push(`${c.set}: accepted`);
          else if (!r.stderr.includes(`at '${c.pointer}`)) failures.push(`${c.set}: refused without naming ${c.pointer || "the top level"}: ${r.stderr.trim()}`);
        }),
      );
    }
    expect(failures).toEqual([]);
  });

  it("rejects values outside their enums and patterns", async () => {
    for (const [set, pointer] of [
      ['logLevel="verbose"', "/logLevel"],
      ['operators=["mysql-operator"]', "/operators/0"],
      ['operators=["database-user","database-user"]', "/operators"],
      ["operators=[]", "/operators"],
      ['image.pullPolicy="Sometimes"', "/image/pullPolicy"],
      ['watchNamespaces=["Team_A"]', "/watchNamespaces/0"],
      ['target="orders db"', "/target"],
      ["metrics.port=70000", "/metrics/port"],
      ['resources.limits.memory="lots"', "/resources/limits/memory"],
    ] as const) {
      const r = await helm(["template", "stateward", chartDir, "--set-json", set]);
      expect(r.code, `${set} was accepted`).not.toBe(0);
      expect(r.stderr).toContain(`at '${pointer}'`);
    }
  });
});

// --- CRDs -----------------------------------------------------------------------------------

describe("the chart's CRDs", () => {
  it("are byte for byte the generated crds/*.yaml (make crds copies them)", async () => {
    const yamlIn = (dir: string) => readdirSync(dir).filter((f) => f.endsWith(".yaml") || f.endsWith(".yml") || f.endsWith(".json")).sort();
    const generated = yamlIn(join(repoRoot, "crds"));
    const inChart = yamlIn(join(chartDir, "crds"));
    expect(inChart, "charts/stateward/crds differs from crds/; run `make crds`").toEqual(generated);
    for (const file of generated) {
      const same = readFileSync(join(repoRoot, "crds", file)).equals(readFileSync(join(chartDir, "crds", file)));
      expect(same, `charts/stateward/crds/${file} differs from crds/${file}; run \`make crds\``).toBe(true);
    }
    // And helm ships exactly those (none before the first operator lands).
    const withCrds = await renderChart({ namespace: RELEASE_NS, includeCrds: true });
    expect(ofKind(withCrds.objects, "CustomResourceDefinition")).toHaveLength(generated.length);
  });
});

// --- applied to the real control plane --------------------------------------------------------

interface AccessCheck {
  verb: string;
  group?: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

/** SelfSubjectAccessReview: may the kubeconfig's identity do this? */
async function allowed(client: KubeClient, check: AccessCheck): Promise<boolean> {
  const review = await client.request<{ status?: { allowed?: boolean } }>("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
    body: {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectAccessReview",
      spec: { resourceAttributes: { ...check, group: check.group ?? "" } },
    },
  });
  return review.status?.allowed === true;
}

const describeCheck = (c: AccessCheck) =>
  `${c.verb} ${c.group ? `${c.resource}.${c.group}` : c.resource}${c.subresource ? `/${c.subresource}` : ""}${c.name ? ` ${c.name}` : ""} in ${c.namespace ?? "the cluster"}`;

async function expectAccess(client: KubeClient, checks: AccessCheck[], expected: boolean): Promise<void> {
  const wrong: string[] = [];
  for (const c of checks) if ((await allowed(client, c)) !== expected) wrong.push(describeCheck(c));
  expect(wrong, expected ? "refused, but the rules allow it" : "allowed, but no rule grants it").toEqual([]);
}

async function whoAmI(client: KubeClient): Promise<string | undefined> {
  const review = await client.request<{ status?: { userInfo?: { username?: string } } }>("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
    body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
  });
  return review.status?.userInfo?.username;
}

const suffix = () => randomBytes(3).toString("hex");

describe("the chart applied with server-side apply, scoped to two namespaces", () => {
  const admin = testClient(env.kubeconfig);
  const release = `chart-rel-${suffix()}`;
  const teamA = `chart-team-a-${suffix()}`;
  const teamB = `chart-team-b-${suffix()}`;
  let manifest = "";
  let sa: KubeClient;

  beforeAll(async () => {
    // The release namespace enforces the "restricted" Pod Security level: the manager's
    // pod is only admitted if its securityContext complies.
    await admin.create(builtin.namespace, {
      metadata: { name: release, labels: { "pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted" } },
    });
    for (const ns of [teamA, teamB]) await admin.create(builtin.namespace, { metadata: { name: ns } });
    const rendered = await renderChart({ namespace: release, includeCrds: true, values: { watchNamespaces: [teamA, teamB], target: "orders-db" } });
    manifest = rendered.yaml;
    await applyManifests(env.kubeconfig, manifest);
    sa = new KubeClient({ kubeConfig: kubeConfigFrom(await serviceAccountKubeconfig(env.kubeconfig, release, "stateward")), fieldManager: "chart-test-sa" });
  });

  afterAll(async () => {
    // Namespaced objects go with their namespaces; the cluster-scoped ones are deleted here.
    // CRDs stay: other suites share them.
    if (manifest) {
      const clusterScoped = (await renderChart({ namespace: release, values: { watchNamespaces: [teamA, teamB], target: "orders-db" } })).objects.filter(
        (o) => o.kind === "ClusterRole" || o.kind === "ClusterRoleBinding",
      );
      await deleteManifests(env.kubeconfig, clusterScoped.map((o) => JSON.stringify(o)).join("\n---\n"));
    }
    for (const ns of [release, teamA, teamB]) await deleteNamespace(admin, ns);
  });

  it("creates every object, and the manager's pod is admitted under the restricted Pod Security level", async () => {
    const deployment = await admin.get<KubeObject & { spec?: { template?: { spec?: { containers?: { args?: string[] }[] } } } }>(
      { apiVersion: "apps/v1", kind: "Deployment", plural: "deployments", namespaced: true },
      release,
      "stateward",
    );
    expect(deployment.spec?.template?.spec?.containers?.[0]?.args).toEqual(expect.arrayContaining(["--namespaces", `${teamA},${teamB}`, "--target", "orders-db"]));
    for (const ns of [teamA, teamB]) {
      await admin.get({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", plural: "rolebindings", namespaced: true }, ns, `${release}:stateward:manager`);
    }
    // Either a pod exists (admitted), or the ReplicaSet reports why it was refused.
    const outcome = await waitFor(
      "the manager's pod, or the reason it was refused",
      async () => {
        const pod = (await admin.list(builtin.pod, { namespace: release, labelSelector: "app.kubernetes.io/instance=stateward" })).items[0];
        if (pod) return { admitted: pod.metadata.name };
        const sets = await admin.list<KubeObject & { status?: { conditions?: { type: string; status: string; message?: string }[] } }>(
          { apiVersion: "apps/v1", kind: "ReplicaSet", plural: "replicasets", namespaced: true },
          { namespace: release },
        );
        const failure = sets.items.flatMap((rs) => rs.status?.conditions ?? []).find((c) => c.type === "ReplicaFailure" && c.status === "True");
        return failure ? { refused: failure.message ?? "ReplicaFailure" } : undefined;
      },
      60_000,
      250,
    );
    expect(outcome).toEqual({ admitted: expect.stringMatching(/^stateward-/) as unknown });
  });

  it("gives a kubeconfig that authenticates as the chart's ServiceAccount", async () => {
    expect(await whoAmI(sa)).toBe(`system:serviceaccount:${release}:stateward`);
  });

  it("lets the ServiceAccount do what the operators need in the watched namespaces", async () => {
    // Real requests first: read Secrets (also metadata-only, as the cache lists them), record an Event, hold the Lease.
    expect((await sa.list(builtin.secret, { namespace: teamA })).items).toBeDefined();
    expect((await sa.list(builtin.secret, { namespace: teamB, metadataOnly: true })).items).toBeDefined();
    await sa.create(builtin.event, {
      metadata: { name: `chart-test.${suffix()}`, namespace: teamA },
      eventTime: new Date().toISOString().replace(/\.(\d{3})Z$/, ".$1000Z"),
      reportingController: "stateward.io/chart-test",
      reportingInstance: "chart-test",
      action: "Test",
      reason: "Test",
      type: "Normal",
      note: "the chart's RBAC allows recording events",
      regarding: { apiVersion: "v1", kind: "ConfigMap", name: "chart-test", namespace: teamA },
    } as KubeObject);
    const lease = await sa.create<KubeObject & { spec?: Record<string, unknown> }>(builtin.lease, {
      metadata: { name: "stateward-manager", namespace: release },
      spec: { holderIdentity: "chart-test", leaseDurationSeconds: 15 },
    });
    await sa.update(builtin.lease, { ...lease, spec: { ...lease.spec, holderIdentity: "chart-test-2" } });

    const inTeams = (checks: Omit<AccessCheck, "namespace">[]) => [teamA, teamB].flatMap((namespace) => checks.map((c) => ({ ...c, namespace })));
    await expectAccess(sa, [
      ...inTeams([
        { verb: "list", group: "stateward.io", resource: "databaseusers" },
        { verb: "watch", group: "stateward.io", resource: "mysqlinstances" },
        { verb: "update", group: "stateward.io", resource: "databaseusers", subresource: "status" },
        { verb: "patch", group: "stateward.io", resource: "databaseusers" },
        { verb: "watch", resource: "secrets" },
        { verb: "create", group: "stateward.io", resource: "mysqlbackups" },
        { verb: "delete", group: "stateward.io", resource: "mysqlbackups" },
        { verb: "update", group: "stateward.io", resource: "mysqlbackupschedules", subresource: "status" },
        { verb: "create", group: "apps", resource: "statefulsets" },
        { verb: "delete", group: "apps", resource: "statefulsets" },
        { verb: "patch", resource: "persistentvolumeclaims" },
        { verb: "patch", group: "policy", resource: "poddisruptionbudgets" },
        { verb: "patch", resource: "pods", subresource: "status" },
        { verb: "delete", resource: "pods" },
        { verb: "create", resource: "secrets" },
        { verb: "create", group: "stateward.io", resource: "mysqlinstances" },
        { verb: "patch", group: "events.k8s.io", resource: "events" },
      ]),
      { verb: "get", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", name: "databaseusers.stateward.io" },
      { verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: release, name: "stateward-manager" },
    ], true);
  });

  it("refuses the ServiceAccount everything the rules do not grant", async () => {
    // A real request: deleting a namespace it manages is forbidden.
    const err = await sa.delete(builtin.namespace, undefined, teamA).then(() => undefined, (e: unknown) => e);
    expect(isForbidden(err), `deleting namespace ${teamA} was not forbidden: ${String(err)}`).toBe(true);
    const listAll = await sa.list(builtin.secret).then(() => undefined, (e: unknown) => e);
    expect(isForbidden(listAll), "listing Secrets of all namespaces was not forbidden").toBe(true);

    await expectAccess(sa, [
      { verb: "delete", resource: "namespaces", name: teamA },
      { verb: "create", resource: "namespaces" },
      // Outside the watched namespaces nothing is granted, not even in its own namespace.
      { verb: "list", group: "stateward.io", resource: "databaseusers", namespace: release },
      { verb: "get", resource: "secrets", namespace: release },
      { verb: "list", resource: "secrets", namespace: "kube-system" },
      { verb: "list", resource: "secrets" },
      // In the watched namespaces: nothing beyond the rules.
      { verb: "create", resource: "pods", namespace: teamA },
      { verb: "create", resource: "pods", subresource: "exec", namespace: teamA },
      { verb: "create", resource: "persistentvolumeclaims", namespace: teamA },
      { verb: "delete", resource: "persistentvolumeclaims", namespace: teamA },
      { verb: "update", group: "apps", resource: "statefulsets", namespace: teamA },
      { verb: "get", resource: "persistentvolumeclaims", namespace: teamA },
      { verb: "update", resource: "secrets", namespace: teamA },
      { verb: "delete", group: "stateward.io", resource: "databaseusers", namespace: teamA },
      { verb: "update", group: "stateward.io", resource: "databaseusers", namespace: teamA },
      { verb: "create", group: "stateward.io", resource: "mysqlrestores", namespace: teamA },
      { verb: "create", group: "stateward.io", resource: "mysqlclusters", namespace: teamB },
      { verb: "delete", group: "stateward.io", resource: "mysqlrestores", subresource: "status", namespace: teamB },
      { verb: "create", group: "rbac.authorization.k8s.io", resource: "rolebindings", namespace: teamA },
      { verb: "create", resource: "serviceaccounts", subresource: "token", namespace: teamA },
      // The Lease: only the manager's own may be read or renewed, and never deleted.
      { verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: release, name: "someone-elses-lease" },
      { verb: "delete", group: "coordination.k8s.io", resource: "leases", namespace: release, name: "stateward-manager" },
      // CRDs are read-only; nothing cluster-wide is writable.
      { verb: "create", group: "apiextensions.k8s.io", resource: "customresourcedefinitions" },
      { verb: "delete", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", name: "databaseusers.stateward.io" },
      { verb: "watch", group: "apiextensions.k8s.io", resource: "customresourcedefinitions" },
      // Events are recorded only in the watched namespaces, never in the release namespace.
      { verb: "create", group: "events.k8s.io", resource: "events", namespace: release },
      { verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings" },
      { verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles" },
      { verb: "impersonate", resource: "users" },
      { verb: "list", resource: "nodes" },
    ], false);
  });
});

describe("the chart applied cluster-wide (default values)", () => {
  const admin = testClient(env.kubeconfig);
  const release = `chart-rel-${suffix()}`;
  const elsewhere = `chart-any-${suffix()}`;
  let manifest = "";
  let sa: KubeClient;

  beforeAll(async () => {
    for (const ns of [release, elsewhere]) await admin.create(builtin.namespace, { metadata: { name: ns } });
    manifest = (await renderChart({ namespace: release, values: { operators: ["database-user", "mysql-backup"] } })).yaml;
    await applyManifests(env.kubeconfig, manifest);
    sa = new KubeClient({ kubeConfig: kubeConfigFrom(await serviceAccountKubeconfig(env.kubeconfig, release, "stateward")), fieldManager: "chart-test-sa" });
  });

  afterAll(async () => {
    if (manifest) {
      const clusterScoped = (await renderChart({ namespace: release, values: { operators: ["database-user", "mysql-backup"] } })).objects.filter(
        (o) => o.kind === "ClusterRole" || o.kind === "ClusterRoleBinding",
      );
      await deleteManifests(env.kubeconfig, clusterScoped.map((o) => JSON.stringify(o)).join("\n---\n"));
    }
    for (const ns of [release, elsewhere]) await deleteNamespace(admin, ns);
  });

  it("grants the enabled operators' rules in every namespace, and nothing of the disabled one", async () => {
    // Secrets: got by name anywhere, never listed or watched.
    await expect(sa.list(builtin.secret)).rejects.toSatisfy(isForbidden);
    await expectAccess(sa, [
      { verb: "get", resource: "secrets", namespace: "kube-system" },
      { verb: "list", group: "stateward.io", resource: "databaseusers" },
      { verb: "watch", group: "stateward.io", resource: "mysqlbackups", namespace: elsewhere },
      { verb: "delete", group: "stateward.io", resource: "mysqlbackups", namespace: elsewhere },
      { verb: "create", group: "events.k8s.io", resource: "events", namespace: elsewhere },
    ], true);
    await expectAccess(sa, [
      { verb: "list", resource: "secrets", namespace: elsewhere },
      { verb: "watch", resource: "secrets", namespace: "kube-system" },
      { verb: "delete", resource: "namespaces", name: elsewhere },
      // mysql-cluster is not enabled: none of its rules exist.
      { verb: "create", group: "apps", resource: "statefulsets", namespace: elsewhere },
      { verb: "delete", resource: "pods", namespace: elsewhere },
      { verb: "create", resource: "secrets", namespace: elsewhere },
      { verb: "list", group: "stateward.io", resource: "mysqlclusters" },
      { verb: "create", group: "stateward.io", resource: "mysqlinstances", namespace: elsewhere },
      { verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings" },
    ], false);
  });
});

describe("helm upgrade --install, as `make deploy` runs it", () => {
  const admin = testClient(env.kubeconfig);
  const release = `chart-helm-${suffix()}`;

  afterAll(async () => {
    await helm(["uninstall", "stateward", "--namespace", release, "--kubeconfig", env.kubeconfig, "--wait", "--timeout", "60s"]);
    await deleteNamespace(admin, release);
  });

  it("installs the release until the Deployment is available, and uninstall removes the cluster-wide RBAC", async () => {
    const install = await helm([
      "upgrade", "--install", "stateward", chartDir,
      "--namespace", release, "--create-namespace", "--kubeconfig", env.kubeconfig, "--wait", "--timeout", "120s",
    ]);
    expect(install.code, install.stderr).toBe(0);
    expect(install.stdout).toContain("kubectl get stateward -A");
    const rbac = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", plural: "clusterroles", namespaced: false };
    await admin.get(rbac, undefined, `${release}:stateward:manager`);

    const uninstall = await helm(["uninstall", "stateward", "--namespace", release, "--kubeconfig", env.kubeconfig, "--wait", "--timeout", "60s"]);
    expect(uninstall.code, uninstall.stderr).toBe(0);
    const gone = await admin.get(rbac, undefined, `${release}:stateward:manager`).then(() => undefined, (e: unknown) => e);
    expect(isNotFound(gone), `ClusterRole ${release}:stateward:manager is still there after helm uninstall`).toBe(true);
  });
});

// --- on a kind cluster installed by `make e2e-kind` (skipped elsewhere) ------------------------

const kindKubeconfig = process.env.STATEWARD_E2E_KUBECONFIG;

describe.runIf(kindKubeconfig)("the release `make e2e-kind` installed (STATEWARD_E2E_KUBECONFIG)", () => {
  const namespace = process.env.STATEWARD_E2E_NAMESPACE ?? "stateward-system";

  it("runs the manager image under the chart's securityContext, ready, holding the leader Lease", async () => {
    const client = testClient(kindKubeconfig!);
    const pods = await waitFor(
      "a Ready manager pod",
      async () => {
        const list = await client.list<KubeObject & { status?: { conditions?: { type: string; status: string }[]; containerStatuses?: { ready: boolean }[] } }>(
          builtin.pod,
          { namespace, labelSelector: "app.kubernetes.io/instance=stateward" },
        );
        const ready = list.items.filter((p) => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
        return ready.length > 0 ? ready : undefined;
      },
      180_000,
      1_000,
    );
    const lease = await waitFor(
      "the leader Lease",
      async () => (await client.get<KubeObject & { spec?: { holderIdentity?: string } }>(builtin.lease, namespace, "stateward-manager")).spec?.holderIdentity || undefined,
      60_000,
      1_000,
    );
    // The identity is "<hostname>_<random>", and the hostname is the pod's name.
    expect(pods.map((p) => p.metadata.name).some((name) => lease.startsWith(`${name}_`))).toBe(true);
  });
});
