// The operators as users run them: the manager image, installed by the chart
// into a kind cluster by `make e2e-kind` (STATEWARD_E2E_KUBECONFIG; skipped
// everywhere else — see e2e/README.md for the contract). Nothing here starts a
// manager or a local server: MariaDB and the S3 server run as Deployments in a
// fresh namespace, MySQLCluster pods run the real image, and the test reaches
// the servers through `kubectl port-forward`, as a user would.
//
// Not run on the machines that build Stateward so far (no Docker there); the
// first run on a machine with Docker is its first real test.
import { randomBytes } from "node:crypto";
import { ListObjectsV2Command, CreateBucketCommand } from "@aws-sdk/client-s3";
import mysql from "mysql2/promise";
import { builtin, findCondition, resourceType, type Condition, type KubeClient, type KubeObject } from "@stateward/core";
import { DatabaseUserKind } from "@stateward/operator-database-user";
import { MySQLBackupKind, MySQLBackupScheduleKind, MySQLRestoreKind } from "@stateward/operator-mysql-backup";
import { MySQLClusterKind, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import { MySQLInstanceKind } from "@stateward/mysql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { s3Client } from "../../harness/index.ts";
import { deleteNamespace, freshNamespace, testClient } from "../../support/kube.ts";
import { portForward, type PortForward } from "../../support/port-forward.ts";
import { waitFor } from "../../support/wait.ts";

const kubeconfig = process.env.STATEWARD_E2E_KUBECONFIG;
/** Images pulled by the kind nodes; pinned so a run means the same thing twice. */
const MARIADB_IMAGE = "mariadb:11.4.7";
const MARIADB_NEXT_IMAGE = "mariadb:11.4.8";
const S3_IMAGE = "versity/versitygw:v1.8.0";
const BUCKET = "stateward-e2e";
const DEPLOYMENT = resourceType("apps/v1", "Deployment", "deployments");

interface Status extends KubeObject {
  status?: { phase?: string; conditions?: Condition[] };
}

describe.runIf(kubeconfig)("the operators in a kind cluster (make e2e-kind)", () => {
  // Made in beforeAll: the body of a skipped describe still runs (collection), without a kubeconfig.
  let client: KubeClient;
  const rootPassword = randomBytes(12).toString("base64url");
  const s3Key = { id: `E2E${randomBytes(6).toString("hex").toUpperCase()}`, secret: randomBytes(24).toString("base64url") };
  let ns: string;
  const forwards: PortForward[] = [];
  const forward = async (target: string, port: number) => {
    const f = await portForward(kubeconfig!, ns, target, port);
    forwards.push(f);
    return f.port;
  };
  const deployment = (name: string, image: string, port: number, container: Record<string, unknown>, volumes: Record<string, unknown>[] = []) => ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns },
    spec: {
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name, image, ports: [{ containerPort: port }], ...container }], volumes } },
    },
  });
  const service = (name: string, port: number) => ({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: ns },
    spec: { selector: { app: name }, ports: [{ port, targetPort: port }] },
  });
  const ready = (rt: typeof DatabaseUserKind.resource, name: string, timeoutMs = 120_000) =>
    waitFor(`${rt.kind} ${name} Ready`, async () => {
      const o = await client.get<Status>(rt, ns, name);
      if (findCondition(o.status?.conditions, "Ready")?.status === "True") return o;
      throw new Error(`Ready: ${JSON.stringify(findCondition(o.status?.conditions, "Ready"))}`);
    }, timeoutMs, 1_000);
  const completed = (rt: typeof MySQLBackupKind.resource, name: string, timeoutMs = 180_000) =>
    waitFor(`${rt.kind} ${name} Completed`, async () => {
      const o = await client.get<Status>(rt, ns, name);
      if (o.status?.phase === "Failed") throw new Error(`${name} Failed: ${findCondition(o.status.conditions, "Ready")?.message}`);
      return o.status?.phase === "Completed" ? o : undefined;
    }, timeoutMs, 1_000);
  const s3Storage = () => ({
    s3: { bucket: BUCKET, prefix: ns, endpoint: `http://s3.${ns}.svc.cluster.local:7070`, region: "us-east-1", forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } },
  });

  beforeAll(async () => {
    client = testClient(kubeconfig!);
    ns = await freshNamespace(client, "kind-e2e");
    await client.create(builtin.secret, { metadata: { name: "db-root", namespace: ns }, stringData: { username: "root", password: rootPassword } } as KubeObject);
    await client.create(builtin.secret, { metadata: { name: "s3-creds", namespace: ns }, stringData: { AWS_ACCESS_KEY_ID: s3Key.id, AWS_SECRET_ACCESS_KEY: s3Key.secret } } as KubeObject);
    const fromSecret = (name: string, key: string) => ({ valueFrom: { secretKeyRef: { name, key } } });
    await client.create(DEPLOYMENT, deployment("db", MARIADB_IMAGE, 3306, {
      env: [{ name: "MARIADB_ROOT_PASSWORD", ...fromSecret("db-root", "password") }],
      readinessProbe: { exec: { command: ["healthcheck.sh", "--connect", "--innodb_initialized"] }, periodSeconds: 2 },
    }));
    await client.create(DEPLOYMENT, deployment("s3", S3_IMAGE, 7070, {
      args: ["--port", ":7070", "posix", "--sidecar", "/s3/meta", "/s3/data"],
      env: [{ name: "ROOT_ACCESS_KEY", ...fromSecret("s3-creds", "AWS_ACCESS_KEY_ID") }, { name: "ROOT_SECRET_KEY", ...fromSecret("s3-creds", "AWS_SECRET_ACCESS_KEY") }],
      volumeMounts: [{ name: "data", mountPath: "/s3/data" }, { name: "meta", mountPath: "/s3/meta" }],
    }, [{ name: "data", emptyDir: {} }, { name: "meta", emptyDir: {} }]));
    for (const name of ["db", "s3"]) {
      await client.create(builtin.service, service(name, name === "db" ? 3306 : 7070));
      await waitFor(`Deployment ${name} available`, async () => {
        const d = await client.get<KubeObject & { status?: { availableReplicas?: number } }>(DEPLOYMENT, ns, name);
        return (d.status?.availableReplicas ?? 0) > 0 ? true : undefined;
      }, 300_000, 2_000);
    }
    const s3 = s3Client({ endpoint: `http://127.0.0.1:${await forward("svc/s3", 7070)}`, region: "us-east-1", accessKeyId: s3Key.id, secretAccessKey: s3Key.secret });
    await waitFor("the bucket", async () => (await s3.send(new CreateBucketCommand({ Bucket: BUCKET })), true), 60_000, 1_000);
    s3.destroy();
  }, 420_000);

  afterAll(async () => {
    for (const f of forwards) f.stop();
    if (ns) await deleteNamespace(client, ns);
  }, 180_000);

  it("makes a DatabaseUser whose account logs in with its Secret's password", async () => {
    await client.create(MySQLInstanceKind.resource, {
      apiVersion: MySQLInstanceKind.apiVersion, kind: MySQLInstanceKind.kind, metadata: { name: "db", namespace: ns },
      spec: { host: `db.${ns}.svc.cluster.local`, port: 3306, adminSecretRef: { name: "db-root" } },
    });
    await ready(MySQLInstanceKind.resource, "db");
    const password = randomBytes(12).toString("base64url");
    await client.create(builtin.secret, { metadata: { name: "app-password", namespace: ns }, stringData: { password } } as KubeObject);
    await client.create(DatabaseUserKind.resource, {
      apiVersion: DatabaseUserKind.apiVersion, kind: DatabaseUserKind.kind, metadata: { name: "app", namespace: ns },
      spec: { instanceRef: { name: "db" }, user: "app", passwordSecretRef: { name: "app-password", key: "password" }, grants: [{ privileges: ["SELECT"], database: "shop" }] },
    });
    await ready(DatabaseUserKind.resource, "app");
    const conn = await mysql.createConnection({ host: "127.0.0.1", port: await forward("svc/db", 3306), user: "app", password });
    expect(await conn.query("SELECT CURRENT_USER() AS u").then(([rows]) => rows)).toEqual([{ u: "app@%" }]);
    await conn.end();
  }, 240_000);

  it("backs a database up into the in-cluster S3 server and restores it, identical", async () => {
    const port = await forward("svc/db", 3306);
    const root = await mysql.createConnection({ host: "127.0.0.1", port, user: "root", password: rootPassword });
    await root.query("CREATE DATABASE shop");
    await root.query("CREATE TABLE shop.orders (id INT PRIMARY KEY, total DECIMAL(10,2))");
    await root.query("INSERT INTO shop.orders VALUES (1, 9.99), (2, 20.00), (3, 0.01)");
    const [before] = await root.query("CHECKSUM TABLE shop.orders");
    await client.create(MySQLBackupKind.resource, {
      apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name: "shop", namespace: ns },
      spec: { instanceRef: { name: "db" }, databases: ["shop"], storage: s3Storage() },
    });
    await completed(MySQLBackupKind.resource, "shop");
    const s3 = s3Client({ endpoint: `http://127.0.0.1:${await forward("svc/s3", 7070)}`, region: "us-east-1", accessKeyId: s3Key.id, secretAccessKey: s3Key.secret });
    const keys = ((await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${ns}/` }))).Contents ?? []).map((o) => o.Key);
    s3.destroy();
    expect(keys.some((k) => k?.endsWith("/manifest.json"))).toBe(true);
    await root.query("DROP DATABASE shop");
    await client.create(MySQLRestoreKind.resource, {
      apiVersion: MySQLRestoreKind.apiVersion, kind: MySQLRestoreKind.kind, metadata: { name: "shop", namespace: ns },
      spec: { instanceRef: { name: "db" }, source: { backupRef: { name: "shop" } } },
    });
    await completed(MySQLRestoreKind.resource, "shop");
    const [after] = await root.query("CHECKSUM TABLE shop.orders");
    expect(after).toEqual(before);
    await root.end();
  }, 300_000);

  it("runs a MySQLBackupSchedule: a backup at the next whole minute, Completed", async () => {
    await client.create(MySQLBackupScheduleKind.resource, {
      apiVersion: MySQLBackupScheduleKind.apiVersion, kind: MySQLBackupScheduleKind.kind, metadata: { name: "nightly", namespace: ns },
      spec: { schedule: "* * * * *", backupTemplate: { instanceRef: { name: "db" }, databases: ["shop"], storage: s3Storage() }, retention: { keepLast: 2 } },
    });
    await waitFor("a scheduled backup Completed", async () => {
      const backups = await client.list<Status>(MySQLBackupKind.resource, { namespace: ns });
      return backups.items.some((b) => b.metadata.ownerReferences?.[0]?.name === "nightly" && b.status?.phase === "Completed") ? true : undefined;
    }, 180_000, 2_000);
    await client.delete(MySQLBackupScheduleKind.resource, ns, "nightly");
  }, 240_000);

  it("runs a MySQLCluster on real pods and rolls it to a new image, replicas first", async () => {
    await client.create(MySQLClusterKind.resource, {
      apiVersion: MySQLClusterKind.apiVersion, kind: MySQLClusterKind.kind, metadata: { name: "orders", namespace: ns },
      spec: { replicas: 2, image: MARIADB_IMAGE, storage: { size: "1Gi" } },
    });
    const running = (image: string) =>
      waitFor(`MySQLCluster orders Running on ${image}`, async () => {
        const c = await client.get<MySQLCluster>(MySQLClusterKind.resource, ns, "orders");
        if (c.status?.phase === "Running" && c.status.readyReplicas === 2 && c.status.currentImage === image && c.status.observedGeneration === c.metadata.generation) return c;
        throw new Error(`phase ${c.status?.phase}, image ${c.status?.currentImage}: ${findCondition(c.status?.conditions, "Ready")?.message}`);
      }, 600_000, 2_000);
    const first = await running(MARIADB_IMAGE);
    expect(first.status?.members?.map((m) => [m.role, m.ready])).toEqual([["primary", true], ["replica", true]]);
    await client.patch(MySQLClusterKind.resource, ns, "orders", { spec: { image: MARIADB_NEXT_IMAGE } });
    const rolled = await running(MARIADB_NEXT_IMAGE);
    // The planned switchover moved the primary off the pod restarted last.
    expect(rolled.status?.currentPrimary).toBe("orders-1");
  }, 1_500_000);
});
