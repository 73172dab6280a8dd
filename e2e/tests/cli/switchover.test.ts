// `stateward switchover` against a MySQLCluster whose pods run real MariaDB
// servers (the stand-ins of e2e/support/mysql-pods.ts) and a manager with the
// mysql-cluster operator: to a named replica, then to the best replica by
// default, each followed until the new primary is in status and every server
// is Ready; a target that cannot become the primary is refused before
// spec.primary changes.
import { MySQLClusterKind, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { testClient } from "../../support/kube.ts";
import { clusterManifest, clusterRunning, startClusterSuite, type ClusterSuite } from "../../support/mysql-cluster.ts";
import { stateward } from "./run.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const name = "sw";
let suite: ClusterSuite;
let ns: string;

beforeAll(async () => {
  suite = await startClusterSuite(client, env, "cli-switchover");
  ns = suite.ns;
  await client.create(MySQLClusterKind.resource, clusterManifest(ns, name, { replicas: 2, image: "mariadb:11.4", storage: { size: "1Gi" } }));
  await clusterRunning(client, suite, name, 2, { check: (c) => c.status?.currentPrimary === "sw-0" && c.status.members?.every((m) => m.ready) === true });
}, 240_000);

afterAll(async () => {
  await suite?.stop();
}, 120_000);

describe("stateward switchover", () => {
  it("switches over to the named replica and follows until every server is Ready", async () => {
    const r = await stateward(env.kubeconfig, "switchover", name, "--to", "sw-1", "-n", ns);
    console.log(r.stderr);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`MySQLCluster ${ns}/${name}: switching over from sw-0 to sw-1 (spec.primary 1)`);
    expect(r.stdout).toMatch(new RegExp(`^MySQLCluster ${ns}/${name}: sw-1 is the primary \\(was sw-0\\); every server Ready after \\S+\\n$`));
    const c = await client.get<MySQLCluster>(MySQLClusterKind.resource, ns, name);
    expect(c.spec.primary).toBe(1);
    expect(c.status?.currentPrimary).toBe("sw-1");
    expect(c.status?.members?.find((m) => m.name === "sw-0")).toMatchObject({ role: "replica", ready: true });
  }, 180_000);

  it("by default picks the Ready replica, and prints the result as JSON", async () => {
    const r = await stateward(env.kubeconfig, "switchover", name, "-n", ns, "-o", "json");
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout) as { namespace: string; name: string; from: string; to: string; seconds: number; status: MySQLCluster["status"] };
    expect(result).toMatchObject({ namespace: ns, name, from: "sw-1", to: "sw-0" });
    expect(result.status?.currentPrimary).toBe("sw-0");
    expect(result.status?.phase).toBe("Running");
    // Asking for the primary it already has changes nothing.
    const again = await stateward(env.kubeconfig, "switchover", name, "-n", ns, "--to", "0");
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(`sw-0 is already the primary of MySQLCluster ${ns}/${name}; nothing to do\n`);
  }, 180_000);

  it("refuses a target that cannot become the primary, leaving spec.primary as it was", async () => {
    const before = await client.get<MySQLCluster>(MySQLClusterKind.resource, ns, name);
    const outOfRange = await stateward(env.kubeconfig, "switchover", name, "-n", ns, "--to", "sw-5");
    expect(outOfRange.code).toBe(2);
    expect(outOfRange.stderr).toMatch(/has 2 server\(s\), ordinals 0 to 1/);
    const missing = await stateward(env.kubeconfig, "switchover", "nope", "-n", ns);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`stateward: MySQLCluster ${ns}/nope not found\n`);
    await client.patch(MySQLClusterKind.resource, ns, name, { spec: { updateStrategy: { paused: true } } });
    const paused = await stateward(env.kubeconfig, "switchover", name, "-n", ns, "--to", "1");
    expect(paused.code).toBe(1);
    expect(paused.stderr).toMatch(/updateStrategy\.paused/);
    const after = await client.get<MySQLCluster>(MySQLClusterKind.resource, ns, name);
    expect(after.spec.primary).toBe(before.spec.primary);
  }, 60_000);
});
