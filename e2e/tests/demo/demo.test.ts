// `make demo` as a user runs it: an environment of its own (dev.ts up, with a
// mariadbd of its own so the machine's server is left alone), then
// hack/demo.sh — the manager with every operator, examples/ applied — ending
// with every example resource Ready, what it did printed, and no secret on
// the screen; `make dev-down` then stops everything it started.
// (`make demo` also regenerates the CRDs first; `make test` checks they are fresh.)
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { builtin, findCondition, type Condition, type KubeClient, type KubeObject } from "@stateward/core";
import { DatabaseUserKind } from "@stateward/operator-database-user";
import { MySQLBackupKind, MySQLRestoreKind } from "@stateward/operator-mysql-backup";
import { MySQLClusterKind, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import { MySQLInstanceKind } from "@stateward/mysql";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { isAlive, readState, repoRoot } from "../../harness/index.ts";
import { runCommand, type CommandResult } from "../../support/chart.ts";
import { testClient } from "../../support/kube.ts";

const env = inject("environment");
const dir = join(env.dir, "demo");
const NS = "stateward-demo";
// The demo with its stand-ins (KWOK + a local mariadbd per pod), which every machine can run.
const devEnv = { ...process.env, STATEWARD_DEV_DIR: dir, STATEWARD_OWN_MARIADB: "1", STATEWARD_REAL_NODE: "0" };
const dev = (command: string) => runCommand(process.execPath, [join(repoRoot, "e2e", "harness", "dev.ts"), command], { env: devEnv });

interface Status extends KubeObject {
  status?: { phase?: string; conditions?: Condition[] };
}

let up: CommandResult;
let demo: CommandResult;
let client: KubeClient;

beforeAll(async () => {
  up = await dev("up");
  if (up.code !== 0) return;
  demo = await runCommand(join(repoRoot, "hack", "demo.sh"), [], { env: devEnv });
  client = testClient(join(dir, "kubeconfig"));
}, 900_000);

afterAll(async () => {
  await dev("down");
}, 180_000);

/** A failed step shows what the script printed (its own diagnosis included). */
function transcript(r: CommandResult | undefined): string {
  return r ? `exit ${r.code}\n${r.stdout.slice(-6000)}\n${r.stderr.slice(-3000)}` : "did not run";
}

describe("make demo", () => {
  it("starts the environment and runs to the end", () => {
    expect(up.code, transcript(up)).toBe(0);
    expect(demo.code, transcript(demo)).toBe(0);
  });

  it("leaves every example resource Ready, Completed or Running", async () => {
    const ready = async (rt: typeof DatabaseUserKind.resource) =>
      (await client.list<Status>(rt, { namespace: NS })).items.map((o) => [o.metadata.name, findCondition(o.status?.conditions, "Ready")?.status]);
    const phases = async (rt: typeof DatabaseUserKind.resource) => (await client.list<Status>(rt, { namespace: NS })).items.map((o) => [o.metadata.name, o.status?.phase]);
    expect(await ready(MySQLInstanceKind.resource)).toEqual([["demo-db", "True"], ["orders-db", "True"]]);
    expect(await ready(DatabaseUserKind.resource)).toEqual([["orders-app", "True"], ["shop", "True"]]);
    expect(await phases(MySQLBackupKind.resource)).toEqual([["orders-db-manual", "Completed"], ["shop-manual", "Completed"]]);
    expect(await phases(MySQLRestoreKind.resource)).toEqual([["shop-manual-restore", "Completed"]]);
    const cluster = await client.get<MySQLCluster>(MySQLClusterKind.resource, NS, "orders-db");
    expect([cluster.status?.phase, cluster.status?.readyReplicas, findCondition(cluster.status?.conditions, "Ready")?.status]).toEqual(["Running", 3, "True"]);
  });

  it("prints what it did: the resources, the rows on a replica, the objects each backup wrote", () => {
    const out = demo.stdout;
    expect(out).toMatch(/mysqlcluster\.stateward\.io\/orders-db\s+3\/3\s+3\s+orders-db-0\s+3\/3\s+Running/);
    expect(out).toMatch(/orders\.orders on orders-db-\d: 3 rows/);
    for (const backup of ["shop-manual", "orders-db-manual"]) {
      expect(out).toContain(`${backup}: s3://`);
      expect(out).toMatch(new RegExp(`\\d+\\s+demo/${NS}/${backup}/manifest\\.json`));
    }
    expect(out).toContain("make dev-down");
  });

  it("shows no secret: not the generated root password, not the S3 secret key", async () => {
    const root = await client.get<KubeObject & { data: Record<string, string> }>(builtin.secret, NS, "orders-db-root");
    const password = Buffer.from(root.data.password ?? "", "base64").toString("utf8");
    const state = readState(dir);
    expect(password.length).toBeGreaterThan(8);
    for (const secret of [password, state?.s3.secretAccessKey ?? "missing"]) {
      expect(demo.stdout + demo.stderr).not.toContain(secret);
      expect(readFileSync(join(dir, "manager.log"), "utf8")).not.toContain(secret);
    }
  });

  it("make dev-down stops the manager, every pod's server and the environment", async () => {
    const pid = Number(readFileSync(join(dir, "manager.pid"), "utf8"));
    const servers = readdirSync(join(dir, "pods", "servers", NS)).map((pod) => Number(readFileSync(join(dir, "pods", "servers", NS, pod, "mariadbd.pid"), "utf8")));
    expect(servers).toHaveLength(3);
    const recorded = readState(dir)?.processes.map((p) => p.pid) ?? [];
    const down = await dev("down");
    expect(down.code, transcript(down)).toBe(0);
    expect(down.stdout).toContain("Stopped the demo manager");
    expect([pid, ...servers, ...recorded].filter(isAlive)).toEqual([]);
    expect(existsSync(join(dir, "manager.pid"))).toBe(false);
  }, 180_000);
});
