// `stateward status` (and `version`, `--help`) against the real API server:
// with a manager watching one namespace, a MySQLInstance on the environment's
// MariaDB is Ready and a DatabaseUser whose password Secret is missing is not —
// the table says what it waits for, in the words of its Ready condition. A
// DatabaseUser in a namespace no manager watches waits for a manager.
import { randomBytes } from "node:crypto";
import { Manager, captureLogs, findCondition, type Condition, type KubeObject } from "@stateward/core";
import { DatabaseUserKind, databaseUserOperator } from "@stateward/operator-database-user";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createBackupPrerequisites } from "../../support/backup-setup.ts";
import { deleteNamespace, freshNamespace, kubeConfigFrom, testClient } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import { stateward } from "./run.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const account = `clistatus_${randomBytes(3).toString("hex")}`;
let ns: string;
let unwatched: string;
let manager: Manager | undefined;

const user = (namespace: string, name: string) => ({
  apiVersion: DatabaseUserKind.apiVersion, kind: DatabaseUserKind.kind, metadata: { name, namespace },
  spec: { instanceRef: { name: "db" }, user: account, passwordSecretRef: { name: "no-such-secret" } },
}) as KubeObject;

beforeAll(async () => {
  ns = await freshNamespace(client, "cli-status");
  unwatched = await freshNamespace(client, "cli-status-unwatched");
  manager = new Manager({ kubeConfig: kubeConfigFrom(env.kubeconfig), namespaces: [ns], logger: captureLogs().logger, gracefulShutdownMs: 5_000 }).load(databaseUserOperator);
  await manager.start();
  await createBackupPrerequisites(client, ns, env);
  await client.create(DatabaseUserKind.resource, user(ns, "app"));
  await client.create(DatabaseUserKind.resource, user(unwatched, "orphan"));
}, 120_000);

afterAll(async () => {
  await manager?.stop();
  await deleteNamespace(client, ns);
  await deleteNamespace(client, unwatched);
}, 60_000);

describe("stateward status", () => {
  it("lists every Stateward resource of the namespace, Ready or with what it waits for", async () => {
    await waitFor("the MySQLInstance Ready", async () => {
      const r = await stateward(env.kubeconfig, "status", "-n", ns, "-o", "json");
      return (JSON.parse(r.stdout) as { items: { kind: string; ready: string }[] }).items.some((i) => i.kind === "MySQLInstance" && i.ready === "True") ? true : undefined;
    }, 60_000, 500);
    const waiting = await waitFor("the DatabaseUser waiting for its password Secret", async () => {
      const u = await client.get<KubeObject & { status?: { conditions?: Condition[] } }>(DatabaseUserKind.resource, ns, "app");
      const ready = findCondition(u.status?.conditions, "Ready");
      return ready?.status === "False" && ready.reason === "SecretNotFound" ? ready : undefined;
    }, 60_000, 250);

    const table = await stateward(env.kubeconfig, "status", "-n", ns);
    console.log(table.stdout);
    expect(table.stderr).toBe("");
    expect(table.code).toBe(0);
    const lines = table.stdout.split("\n");
    expect(lines[0]?.split(/\s+/)).toEqual(["KIND", "NAME", "READY", "PHASE", "SUMMARY", "REASON", "MESSAGE"]);
    // What the others depend on comes first.
    expect(lines[1]).toMatch(new RegExp(`^MySQLInstance\\s+db\\s+True\\s+-\\s+${env.mysql.host}:${env.mysql.port}, (MariaDB|MySQL) `));
    expect(lines[2]).toMatch(new RegExp(`^DatabaseUser\\s+app\\s+False\\s+-\\s+user ${account}, on db\\s+${waiting.reason}\\s+`));
    expect(lines[2]).toContain(waiting.message);
    expect(table.stdout).toContain("2 resource(s), 1 not Ready.");

    const json = JSON.parse((await stateward(env.kubeconfig, "status", "-n", ns, "-o", "json")).stdout) as { items: Record<string, string>[] };
    expect(json.items).toContainEqual({ kind: "DatabaseUser", namespace: ns, name: "app", ready: "False", phase: "", summary: `user ${account}, on db`, reason: waiting.reason, message: waiting.message });
    const yaml = await stateward(env.kubeconfig, "status", "-n", ns, "-o", "yaml");
    expect(yaml.stdout).toMatch(/^items:\n {2}- kind: MySQLInstance\n/);

    // -A: every namespace, with a NAMESPACE column; a resource no manager watches waits for one.
    const all = await stateward(env.kubeconfig, "status", "-A");
    expect(all.code).toBe(0);
    expect(all.stdout.split("\n")[0]).toMatch(/^NAMESPACE\s+KIND/);
    const orphan = all.stdout.split("\n").find((l) => l.startsWith(`${unwatched} `));
    expect(orphan).toMatch(/DatabaseUser\s+orphan\s+Unknown\s+-\s+.*NoStatus\s+no status yet: waiting for a Stateward manager/);

    // An empty namespace says so.
    const empty = await stateward(env.kubeconfig, "status", "-n", `${ns}-empty`);
    expect(empty.stdout).toBe(`No Stateward resources in namespace ${ns}-empty.\n`);
  }, 180_000);

  it("exits 4 when the API cannot be reached, 2 on a usage error", async () => {
    const usage = await stateward(env.kubeconfig, "status", "--output", "xml");
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--output must be json or yaml/);
    const down = await stateward(env.kubeconfig, "status", "--kubeconfig", "/nonexistent/kubeconfig");
    expect(down.code).toBe(4);
    expect(down.stderr).toMatch(/cannot load the kubeconfig/);
  });
});

describe("stateward version and --help", () => {
  it("prints its version and the cluster's Kubernetes version and CRDs", async () => {
    const r = await stateward(env.kubeconfig, "version", "-o", "json");
    expect(r.code).toBe(0);
    const info = JSON.parse(r.stdout) as { client: { version: string; apiVersions: string[] }; server: { kubernetes: string; crds: { name: string; installed: boolean }[] } };
    expect(info.client).toMatchObject({ version: "0.1.0", apiVersions: ["stateward.io/v1alpha1"] });
    expect(info.server.kubernetes).toMatch(/^v1\.\d+/);
    expect(info.server.crds).toContainEqual({ name: "databaseusers.stateward.io", installed: true, versions: ["v1alpha1"] });
    expect((await stateward(env.kubeconfig, "version", "--client")).stdout).toMatch(/^stateward 0\.1\.0 \(API stateward\.io\/v1alpha1; Node v24/);
  });

  it("documents every command", async () => {
    const help = await stateward(env.kubeconfig, "--help");
    expect(help.code).toBe(0);
    for (const c of ["status", "backup INSTANCE", "restore BACKUP --to INSTANCE", "switchover CLUSTER", "release-finalizers", "version", "run [flags]", "Exit status"]) expect(help.stdout).toContain(c);
    for (const c of ["status", "backup", "restore", "switchover", "release-finalizers", "version"]) {
      const sub = await stateward(env.kubeconfig, c, "--help");
      expect(sub.code).toBe(0);
      expect(sub.stdout).toMatch(new RegExp(`^Usage:\\n  stateward ${c}`));
    }
  });
});

