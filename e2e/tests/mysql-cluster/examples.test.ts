// examples/mysql-cluster applies cleanly with kubectl and converges: the cluster
// runs with three caught-up servers, the DatabaseUser's account logs in on the
// primary and on a replica, the MySQLBackup of the cluster completes and the
// MySQLBinlogArchive archives a write — the other operators work on a managed
// cluster unchanged.
import { execFile } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import mysql from "mysql2/promise";
import { findCondition, type KubeObject } from "@stateward/core";
import { DatabaseUserKind, databaseUserOperator } from "@stateward/operator-database-user";
import { MySQLBackupKind, MySQLBinlogArchiveKind, createMySQLBackupOperator, type MySQLBackup, type MySQLBinlogArchive } from "@stateward/operator-mysql-backup";
import { MySQLClusterKind, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { repoRoot, tools } from "../../harness/index.ts";
import { testClient } from "../../support/kube.ts";
import type { LocalPodServers } from "../../support/mysql-pods.ts";
import { waitFor } from "../../support/wait.ts";
import { createS3Secret } from "../../support/backup-setup.ts";
import { rootPassword, startClusterSuite, type ClusterSuite } from "../../support/mysql-cluster.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const dir = join(repoRoot, "examples", "mysql-cluster");
let suite: ClusterSuite;
let ns: string;
let servers: LocalPodServers;

async function kubectlApply(file: string): Promise<string> {
  // The example names the usual local S3 address; point it at this environment's.
  const manifest = readFileSync(join(dir, file), "utf8").replace("http://127.0.0.1:9000", env.s3.endpoint);
  return new Promise((resolve, reject) => {
    const child = execFile(tools.kubectl(), ["--kubeconfig", env.kubeconfig, "-n", ns, "apply", "-f", "-"], (err, stdout, stderr) => {
      if (err) reject(new Error(`kubectl apply -f ${file}: ${stderr}`));
      else resolve(stdout);
    });
    child.stdin?.end(manifest);
  });
}

beforeAll(async () => {
  suite = await startClusterSuite(client, env, "cluster-examples", [databaseUserOperator, createMySQLBackupOperator()]);
  ({ ns, servers } = suite);
  await createS3Secret(client, ns, env, "demo-s3");
}, 120_000);

afterAll(async () => {
  await suite?.stop();
}, 120_000);

describe("examples/mysql-cluster", () => {
  it("has a cluster, an application account, a backup and a binlog archive, in that order", () => {
    expect(readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort()).toEqual(["01-cluster.yaml", "02-app-user.yaml", "03-backup.yaml", "04-binlog-archive.yaml"]);
  });

  it("applies with kubectl; the cluster runs, the account logs in on the primary and a replica, the backup completes, the archive takes a write", async () => {
    expect(await kubectlApply("01-cluster.yaml")).toContain("mysqlcluster.stateward.io/orders-db created");
    expect(await kubectlApply("02-app-user.yaml")).toContain("databaseuser.stateward.io/orders-app created");
    const cluster = await waitFor("orders-db Running", async () => {
      const c = await client.get<MySQLCluster>(MySQLClusterKind.resource, ns, "orders-db");
      if (c.status?.phase === "Running" && c.status.readyReplicas === 3) return c;
      throw new Error(`phase ${c.status?.phase}: ${findCondition(c.status?.conditions, "Ready")?.message}${servers.describeFailures()}`);
    }, 240_000, 500);
    expect(cluster.status?.currentPrimary).toBe("orders-db-0");

    const primary = await servers.server("orders-db-0");
    const replica = await servers.server("orders-db-2");
    const root = await mysql.createConnection({ host: primary!.host, port: primary!.port, user: "root", password: await rootPassword(client, ns, "orders-db") });
    await root.query("CREATE DATABASE orders");
    await root.query("CREATE TABLE orders.lines (id INT PRIMARY KEY, sku VARCHAR(32))");
    await root.query("INSERT INTO orders.lines VALUES (1, 'tea'), (2, 'cake')");
    await root.end();

    await waitFor("DatabaseUser Ready", async () => {
      const u = await client.get<KubeObject & { status?: { conditions?: [] } }>(DatabaseUserKind.resource, ns, "orders-app");
      return findCondition(u.status?.conditions, "Ready")?.status === "True" ? true : undefined;
    }, 60_000, 250);
    for (const server of [primary!, replica!]) {
      const rows = await waitFor(`orders_app reads on ${server.pod}`, async () => {
        const conn = await mysql.createConnection({ host: server.host, port: server.port, user: "orders_app", password: "change-me-9b1d7e" });
        const [r] = await conn.query("SELECT sku FROM orders.lines ORDER BY id");
        await conn.end();
        return r as { sku: string }[];
      }, 30_000, 250);
      expect(rows.map((r) => r.sku)).toEqual(["tea", "cake"]);
    }

    expect(await kubectlApply("03-backup.yaml")).toContain("mysqlbackup.stateward.io/orders-db-manual created");
    const backup = await waitFor("the backup finished", async () => {
      const b = await client.get<MySQLBackup>(MySQLBackupKind.resource, ns, "orders-db-manual");
      return b.status?.phase === "Completed" || b.status?.phase === "Failed" ? b : undefined;
    }, 90_000, 250);
    expect(backup.status?.phase, JSON.stringify(findCondition(backup.status?.conditions, "Ready"))).toBe("Completed");
    expect(backup.status?.location).toContain(`/${ns}/orders-db-manual`);

    expect(await kubectlApply("04-binlog-archive.yaml")).toContain("mysqlbinlogarchive.stateward.io/orders-db-binlog created");
    await waitFor("the binlog archive Ready", async () => {
      const a = await client.get<MySQLBinlogArchive>(MySQLBinlogArchiveKind.resource, ns, "orders-db-binlog");
      return findCondition(a.status?.conditions, "Ready")?.status === "True" ? a : undefined;
    }, 60_000, 250);
    const writer = await mysql.createConnection({ host: primary!.host, port: primary!.port, user: "root", password: await rootPassword(client, ns, "orders-db") });
    await writer.query("INSERT INTO orders.lines VALUES (3, 'jam')");
    const [pos] = await writer.query<mysql.RowDataPacket[]>("SELECT @@gtid_binlog_pos AS p");
    await writer.end();
    // The example rotates every 60 s: the write is in S3 within a minute.
    const archive = await waitFor("the write archived", async () => {
      const a = await client.get<MySQLBinlogArchive>(MySQLBinlogArchiveKind.resource, ns, "orders-db-binlog");
      return a.status?.archivedPosition === String(pos[0]?.p) ? a : undefined;
    }, 90_000, 500);
    expect(archive.status?.location).toContain(`/demo-binlog/${ns}/orders-db-binlog/`);
  }, 360_000);
});
