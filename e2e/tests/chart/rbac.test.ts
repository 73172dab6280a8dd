// The chart's RBAC is exactly what the operators need. The rendered chart (RBAC,
// ServiceAccount, CRDs; not the Deployment) is applied with server-side apply, and a manager
// run here — configured as the chart's Deployment configures it, authenticated as the
// chart's ServiceAccount with a token the API server issued — goes through the core of the
// DatabaseUser, backup and MySQLCluster suites. A rule the chart lacks shows as a 403 (or a "forbidden" /
// "could not record event" log line); a rule it grants that no request used fails the
// comparison at the end, unless the allow-list below says why the flow cannot use it.
// Once cluster-wide (a ClusterRole) and once scoped to one namespace (a Role there).
import { ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";
import {
  ApiError,
  Manager,
  builtin,
  captureLogs,
  findCondition,
  type CapturedLogs,
  type KubeObject,
  type OperatorModule,
  type RequestObservation,
} from "@stateward/core";
import { MySQLInstanceKind, type MySQLInstance } from "@stateward/mysql";
import { createDatabaseUserOperator, type DatabaseUser } from "@stateward/operator-database-user";
import { MySQLBackupKind, MySQLRestoreKind, createMySQLBackupOperator, type MySQLBackup, type MySQLRestore } from "@stateward/operator-mysql-backup";
import { MySQLClusterKind, createMySQLClusterOperator, type MySQLCluster } from "@stateward/operator-mysql-cluster";
import { join } from "node:path";
import type mysql from "mysql2/promise";
import { afterAll, describe, expect, inject, it } from "vitest";
import { s3Client } from "../../harness/index.ts";
import { applyManifests, deleteManifests, removeChartScratch, renderChart, type RenderedObject } from "../../support/chart.ts";
import { deleteNamespace, kubeConfigFrom, testClient, waitGone } from "../../support/kube.ts";
import { grantedPermissions, permissionKey, unusedGrants, usedPermissions, type Permission } from "../../support/rbac.ts";
import { releaseInUse } from "../../support/database-users.ts";
import { LocalPodServers } from "../../support/mysql-pods.ts";
import { serviceAccountKubeconfig } from "../../support/service-account.ts";
import { createExpandableStorageClass, deleteStorageClass } from "../../support/storage.ts";
import { waitFor } from "../../support/wait.ts";
import { DBU, MYI, accountExists, adminConnection, databaseUser, q, secret, showGrants, suffix, tryLogin } from "../database-user/support.ts";

const env = inject("environment");
const admin = testClient(env.kubeconfig);
const BK = MySQLBackupKind.resource;
const RS = MySQLRestoreKind.resource;
const MYC = MySQLClusterKind.resource;
const OPERATORS = ["database-user", "mysql-backup", "mysql-cluster"];
const TARGET_LABEL = "stateward.io/target";

/**
 * Grants the flow cannot exercise, as "verb group/resource" (any scope). Most of them are
 * the MySQLBackupSchedule controller's writes: a schedule only acts at its cron times
 * (whole minutes) and after retention, which this flow does not wait for (its list and
 * watch are used: the controller's informer starts with the manager). Each entry must
 * still be granted (a stale entry fails the test).
 */
const ALLOW_UNUSED: Record<string, string> = {
  // Last and next schedule time, last successful backup (ScheduleReconciler, updateStatus).
  "update stateward.io/mysqlbackupschedules/status": "schedule controller: its status",
  // It creates a MySQLBackup per due time, and deletes the ones retention no longer keeps
  // (and, with concurrencyPolicy Replace, the running one).
  "create stateward.io/mysqlbackups": "schedule controller: one MySQLBackup per due time",
  "delete stateward.io/mysqlbackups": "schedule controller: retention and concurrencyPolicy Replace",
  // What a MySQLCluster owns carries a controller reference with blockOwnerDeletion (checked by
  // the same admission plugin, not requested).
  "update stateward.io/mysqlclusters/finalizers": "cluster controller: owner references of what it owns",
  // A MySQLBinlogArchive's stream writes its status (get, then update); the flow creates no
  // archive (the environment's MariaDB may run without a binary log); the controller's list and
  // watch are used. e2e/tests/mysql-backup/binlog-archive.test.ts runs one.
  "get stateward.io/mysqlbinlogarchives": "binlog archive controller: re-read before its status write",
  "update stateward.io/mysqlbinlogarchives/status": "binlog archive controller: its status",
  // A primary's Node is read only while the primary does not answer (a failover signal), which
  // this flow never makes happen (the failover tests do, with the operators' full rights).
  "get core/nodes": "cluster controller: a silent primary's node",
};
const allowKey = (p: Permission) => `${p.verb} ${p.group || "core"}/${p.resource}`;

/** The value following `flag` in the args, or undefined when the flag is absent. */
function flagValue(args: string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
}

/** What the chart installs besides the Deployment (the manager runs here) and its Service. */
const INSTALLED_KINDS = new Set(["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "CustomResourceDefinition"]);
const toYaml = (objects: RenderedObject[]) => objects.map((o) => JSON.stringify(o)).join("\n---\n");

interface Mode {
  name: string;
  /** The chart's watchNamespaces, given the test's application namespace. */
  watchNamespaces: (appNs: string) => string[];
  /** The chart's target, so that a cluster-wide manager never acts on other suites' leftovers. */
  target: boolean;
  /** The --secrets the chart gives the manager by default in this scope. */
  secrets: "watch" | "get";
}

const modes: Mode[] = [
  { name: "cluster-wide (a ClusterRole; a target keeps other suites' objects out)", watchNamespaces: () => [], target: true, secrets: "get" },
  { name: "scoped to one namespace (a Role there)", watchNamespaces: (appNs) => [appNs], target: false, secrets: "watch" },
];
/**
 * With --secrets get a rotated password is noticed at the DatabaseUser's next drift check
 * (5 min by default, as the chart README says); shortened here so the rotation step stays quick.
 */
const DRIFT_CHECK_MS = 3_000;

afterAll(() => removeChartScratch());

describe.each(modes)("the chart's ServiceAccount running both operators, $name", (mode) => {
  const id = suffix();
  const release = `rbac-rel-${id}`;
  const appNs = `rbac-app-${id}`;
  const target = mode.target ? `rbac-${id}` : undefined;
  const labels = target ? { [TARGET_LABEL]: target } : undefined;
  const db = `rbac_${id}`;
  const account = `rbac_app_${id}`;
  const gonerAccount = `rbac_goner_${id}`;
  const prefix = `rbac-${id}`;
  let objects: RenderedObject[] = [];
  let manager: Manager | undefined;
  let logs: CapturedLogs;
  const requests: RequestObservation[] = [];
  let conn: mysql.Connection;
  let s3: S3Client;
  let servers: LocalPodServers | undefined;
  let storageClass: string | undefined;
  let kubeconfig = "";

  const storage = (credentials = "s3-creds") => ({
    s3: { bucket: env.s3.bucket, prefix, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true, credentialsSecretRef: { name: credentials } },
  });
  const backup = (name: string, spec: Partial<MySQLBackup["spec"]> = {}): MySQLBackup => ({
    apiVersion: MySQLBackupKind.apiVersion,
    kind: MySQLBackupKind.kind,
    metadata: { name, namespace: appNs, labels },
    spec: { instanceRef: { name: "db" }, storage: storage(), databases: [db], ...spec },
  });
  const finished = <T extends KubeObject & { status?: { phase?: string } }>(rt: typeof BK, name: string) =>
    waitFor(`${rt.kind} ${name} finished`, async () => {
      const o = await admin.get<T>(rt, appNs, name);
      return o.status?.phase === "Completed" || o.status?.phase === "Failed" ? o : undefined;
    }, 90_000, 250);
  const keysUnder = async (p: string) =>
    ((await s3.send(new ListObjectsV2Command({ Bucket: env.s3.bucket, Prefix: p }))).Contents ?? []).map((o) => o.Key ?? "");
  const checksum = async () => {
    const [rows] = await conn.query(`CHECKSUM TABLE ${q(db)}.${q("orders")}, ${q(db)}.${q("notes")}`);
    return rows;
  };
  const eventsOf = async (name: string) =>
    (await admin.list<KubeObject & { reason?: string; type?: string; regarding?: { name?: string }; series?: { count?: number } }>(builtin.event, { namespace: appNs })).items.filter(
      (e) => e.regarding?.name === name,
    );

  afterAll(async () => {
    const attempt = async (what: () => Promise<unknown>) => {
      try {
        await what();
      } catch {
        // best effort: the next step still runs
      }
    };
    await attempt(async () => manager?.stop());
    await attempt(async () => servers?.stop());
    // No manager is left to finish these: take the finalizers off so the namespace can go.
    for (const rt of [DBU, BK]) {
      const left = await admin.list(rt, { namespace: appNs }).then((l) => l.items, () => []);
      for (const o of left) await attempt(() => admin.patch(rt, appNs, o.metadata.name!, { metadata: { finalizers: null } }));
    }
    await attempt(() => releaseInUse(admin, appNs));
    await attempt(async () => {
      for (const a of [account, gonerAccount]) await conn.query(`DROP USER IF EXISTS ${q(a)}@'%'`);
      await conn.query(`DROP DATABASE IF EXISTS ${q(db)}`);
      await conn.end();
    });
    s3?.destroy();
    // Namespaced objects go with their namespaces; CRDs stay (other suites share them).
    await attempt(() => deleteManifests(env.kubeconfig, toYaml(objects.filter((o) => o.kind === "ClusterRole" || o.kind === "ClusterRoleBinding"))));
    for (const ns of [release, appNs]) await attempt(() => deleteNamespace(admin, ns));
    if (storageClass) await attempt(() => deleteStorageClass(admin, storageClass!));
  });

  it("installs the rendered RBAC, ServiceAccount and CRDs with server-side apply, and the manager starts under that identity", async () => {
    for (const ns of [release, appNs]) await admin.create(builtin.namespace, { metadata: { name: ns } });
    conn = await adminConnection(env.mysql);
    s3 = s3Client(env.s3);
    const rendered = await renderChart({
      namespace: release,
      includeCrds: true,
      values: { operators: OPERATORS, watchNamespaces: mode.watchNamespaces(appNs), ...(target ? { target } : {}) },
    });
    objects = rendered.objects;
    await applyManifests(env.kubeconfig, toYaml(objects.filter((o) => INSTALLED_KINDS.has(o.kind))));

    // Configured as the chart's Deployment configures the manager.
    const deployment = objects.find((o) => o.kind === "Deployment") as
      | (RenderedObject & { spec: { template: { spec: { serviceAccountName: string; containers: { name: string; args?: string[] }[] } } } })
      | undefined;
    const args = deployment?.spec.template.spec.containers.find((c) => c.name === "manager")?.args ?? [];
    expect(flagValue(args, "--crds")).toBe("verify");
    expect(args).toContain("--leader-elect");
    expect(flagValue(args, "--operators")?.split(",")).toEqual(OPERATORS);
    const namespaces = flagValue(args, "--namespaces")?.split(",") ?? [];
    expect(namespaces).toEqual(mode.watchNamespaces(appNs));
    expect(flagValue(args, "--target")).toBe(target);
    expect(flagValue(args, "--secrets")).toBe(mode.secrets);
    // The cluster's pods get local servers; it is loaded first, so all operators reach pods through them.
    servers = new LocalPodServers(admin, join(env.dir, "rbac-pods", id), appNs).start();
    const available: Record<string, () => OperatorModule> = {
      "mysql-cluster": () => createMySQLClusterOperator({ addresses: servers }),
      // The fingerprint key in the release namespace, as the Deployment's POD_NAMESPACE says.
      "database-user": () =>
        createDatabaseUserOperator({ fingerprintKeySecret: { namespace: release }, ...(mode.secrets === "get" ? { driftCheckIntervalMs: DRIFT_CHECK_MS } : {}) }),
      "mysql-backup": () => createMySQLBackupOperator(),
    };

    kubeconfig = await serviceAccountKubeconfig(env.kubeconfig, release, deployment!.spec.template.spec.serviceAccountName);
    logs = captureLogs();
    manager = new Manager({
      kubeConfig: kubeConfigFrom(kubeconfig),
      namespaces,
      target,
      crds: "verify",
      secrets: mode.secrets,
      leaderElection: { namespace: release },
      logger: logs.logger,
      onRequest: (o) => requests.push(o),
      gracefulShutdownMs: 10_000,
    }).load(...["mysql-cluster", ...OPERATORS.filter((o) => o !== "mysql-cluster")].map((name) => available[name]!()));
    await manager.start();
    const holder = await waitFor("the chart's Lease held by the manager", async () => {
      const lease = await admin.get<KubeObject & { spec?: { holderIdentity?: string } }>(builtin.lease, release, "stateward-manager");
      return lease.spec?.holderIdentity || undefined;
    });
    expect(holder).toBe(manager.identity);
  });

  it(mode.secrets === "get" ? "cannot list or watch Secrets anywhere: it reads one by name" : "lists and watches Secrets only in the watched namespace", async () => {
    const asManager = testClient(kubeconfig);
    const refused = async (what: () => Promise<unknown>) =>
      what().then(
        () => 200,
        (err: unknown) => {
          if (err instanceof ApiError) return err.status;
          throw err;
        },
      );
    // The namespace the manager itself runs in, which it never watches in either mode.
    expect(await refused(() => asManager.list(builtin.secret, { namespace: release }))).toBe(403);
    expect(await refused(() => asManager.list(builtin.secret, { namespace: appNs }))).toBe(mode.secrets === "get" ? 403 : 200);
  });

  it("makes the MySQLInstance Ready, and a MySQLBackup whose S3 Secret is missing waits Pending with SecretNotFound and an Event", async () => {
    await conn.query(`CREATE DATABASE ${q(db)}`);
    await conn.query(`CREATE TABLE ${q(db)}.orders (id INT PRIMARY KEY, item VARCHAR(64), price DECIMAL(10,2))`);
    await conn.query(`CREATE TABLE ${q(db)}.notes (id INT PRIMARY KEY AUTO_INCREMENT, body TEXT)`);
    await conn.query(`INSERT INTO ${q(db)}.orders VALUES (1, 'tea', 3.50), (2, 'cake', 4.25), (3, 'café ☕', 2.00)`);
    await conn.query(`INSERT INTO ${q(db)}.notes (body) VALUES ('first'), (NULL), ('it''s "quoted"')`);

    await admin.create(builtin.secret, secret(appNs, "mysql-admin", { username: env.mysql.user, password: env.mysql.password }));
    await admin.create(builtin.secret, secret(appNs, "s3-creds", { AWS_ACCESS_KEY_ID: env.s3.accessKeyId, AWS_SECRET_ACCESS_KEY: env.s3.secretAccessKey }));
    await admin.create(MYI, {
      apiVersion: MySQLInstanceKind.apiVersion,
      kind: MySQLInstanceKind.kind,
      metadata: { name: "db", namespace: appNs, labels },
      spec: { host: env.mysql.host, port: env.mysql.port, adminSecretRef: { name: "mysql-admin" } },
    });
    const instance = await waitFor("MySQLInstance Ready", async () => {
      const i = await admin.get<MySQLInstance>(MYI, appNs, "db");
      return findCondition(i.status?.conditions, "Ready")?.status === "True" ? i : undefined;
    });
    expect(instance.status?.serverVersion).toBeTruthy();

    // Created early: its retries keep failing while the rest of the flow runs (see the series test).
    await admin.create(BK, backup("no-secret", { storage: storage("s3-missing") }));
    const pending = await waitFor("Pending with SecretNotFound", async () => {
      const b = await admin.get<MySQLBackup>(BK, appNs, "no-secret");
      return findCondition(b.status?.conditions, "Ready")?.reason === "SecretNotFound" ? b : undefined;
    });
    expect(pending.status?.phase).toBe("Pending");
    expect(findCondition(pending.status?.conditions, "Ready")?.message).toMatch(/s3-missing/);
    const events = await waitFor("the SecretNotFound Event", async () => {
      const e = (await eventsOf("no-secret")).filter((x) => x.reason === "SecretNotFound");
      return e.length > 0 ? e : undefined;
    });
    expect(events[0]?.type).toBe("Warning");
  });

  it("runs a DatabaseUser: login with the Secret's password, rotation, grants that follow the spec, the account dropped on delete", async () => {
    const first = `pw-${suffix()}${suffix()}`;
    await admin.create(builtin.secret, secret(appNs, "app-db", { password: first }));
    await admin.create(
      DBU,
      databaseUser(appNs, "app", { instanceRef: { name: "db" }, user: account, passwordSecretRef: { name: "app-db" }, grants: [{ privileges: ["SELECT"], database: db }] }, labels),
    );
    const dbPattern = db.replaceAll("_", "\\_");
    await waitFor("DatabaseUser Ready", async () => {
      const u = await admin.get<DatabaseUser>(DBU, appNs, "app");
      const c = findCondition(u.status?.conditions, "Ready");
      return c?.status === "True" && c.observedGeneration === 1 ? true : undefined;
    });
    expect(await tryLogin(env.mysql, account, first)).toBe("ok");
    expect(await showGrants(conn, account)).toEqual([`GRANT SELECT ON \`${dbPattern}\`.* TO \`${account}\`@\`%\``]);

    const second = `pw-${suffix()}${suffix()}`;
    await admin.patch(builtin.secret, appNs, "app-db", { stringData: { password: second } });
    await waitFor("login with the new password", async () => ((await tryLogin(env.mysql, account, second)) === "ok" ? true : undefined), 30_000, 200);
    expect(await tryLogin(env.mysql, account, first)).toBe("ER_ACCESS_DENIED_ERROR");

    await admin.patch(DBU, appNs, "app", { spec: { grants: [{ privileges: ["SELECT", "INSERT"], database: db, table: "orders" }] } });
    const expected = [`GRANT SELECT, INSERT ON \`${db}\`.\`orders\` TO \`${account}\`@\`%\``];
    await waitFor("SHOW GRANTS follows the edited grants", async () => (JSON.stringify(await showGrants(conn, account)) === JSON.stringify(expected) ? true : undefined));
    const user = await admin.get<DatabaseUser>(DBU, appNs, "app");
    expect(findCondition(user.status?.conditions, "Ready")).toMatchObject({ status: "True" });

    await admin.delete(DBU, appNs, "app");
    await waitGone(admin, DBU, appNs, "app");
    expect(await accountExists(conn, account)).toBe(false);
    expect((await eventsOf("app")).map((e) => e.reason)).toEqual(expect.arrayContaining(["AccountUpdated", "AccountDropped"]));
  });

  it("lets a DatabaseUser whose MySQLInstance is gone be deleted, saying the account was not dropped", async () => {
    // Its instance is in no cache, so the operator asks the API server before giving up.
    await admin.create(builtin.secret, secret(appNs, "goner-db", { password: `pw-${suffix()}` }));
    await admin.create(DBU, databaseUser(appNs, "goner", { instanceRef: { name: "no-such-db" }, user: gonerAccount, passwordSecretRef: { name: "goner-db" } }, labels));
    await waitFor("the finalizer", async () => ((await admin.get<DatabaseUser>(DBU, appNs, "goner")).metadata.finalizers?.length ? true : undefined));
    await admin.delete(DBU, appNs, "goner");
    await waitGone(admin, DBU, appNs, "goner");
    expect((await eventsOf("goner")).map((e) => e.reason)).toContain("InstanceGone");
  });

  it("completes a MySQLBackup, and a MySQLRestore from it brings back identical tables", async () => {
    const before = await checksum();
    await admin.create(BK, backup("full"));
    const done = await finished<MySQLBackup>(BK, "full");
    expect(done.status?.phase, JSON.stringify(findCondition(done.status?.conditions, "Ready"))).toBe("Completed");
    expect(await keysUnder(`${prefix}/${appNs}/full/`)).toContain(`${prefix}/${appNs}/full/manifest.json`);

    await conn.query(`DROP DATABASE ${q(db)}`);
    await admin.create(RS, {
      apiVersion: MySQLRestoreKind.apiVersion,
      kind: MySQLRestoreKind.kind,
      metadata: { name: "from-full", namespace: appNs, labels },
      spec: { instanceRef: { name: "db" }, source: { backupRef: { name: "full" } } },
    });
    expect((await finished<MySQLRestore>(RS, "from-full")).status?.phase).toBe("Completed");
    expect(await checksum()).toEqual(before);
    expect((await eventsOf("from-full")).map((e) => e.reason)).toEqual(expect.arrayContaining(["Started", "Completed"]));
  });

  it("deletes the stored objects of a MySQLBackup with deletionPolicy Delete when it is deleted", async () => {
    await admin.create(BK, backup("to-delete", { deletionPolicy: "Delete" }));
    expect((await finished<MySQLBackup>(BK, "to-delete")).status?.phase).toBe("Completed");
    const folder = `${prefix}/${appNs}/to-delete/`;
    expect((await keysUnder(folder)).length).toBeGreaterThan(1);
    await admin.delete(BK, appNs, "to-delete");
    await waitGone(admin, BK, appNs, "to-delete");
    expect(await keysUnder(folder)).toEqual([]);
  });

  it("runs a MySQLCluster: two servers replicating, volumes grown, scaled in to one, deleted with what it owns", async () => {
    const running = (replicas: number) =>
      waitFor(`MySQLCluster Running with ${replicas}`, async () => {
        const c = await admin.get<MySQLCluster>(MYC, appNs, "shop");
        if (c.status?.phase === "Running" && c.status.readyReplicas === replicas && c.status.observedGeneration === c.metadata.generation) return c;
        // Enough to tell a timeout's cause: the pods' servers as the harness sees them, and what the operator did.
        const pods = Array.from({ length: Math.max(replicas, c.spec.replicas ?? 0) }, (_, i) => `shop-${i}`);
        const did = (await eventsOf("shop")).map((e) => e.reason).join(", ");
        throw new Error(`phase ${c.status?.phase}: ${findCondition(c.status?.conditions, "Ready")?.message}${servers?.describeFailures() ?? ""}${(await servers?.describe(pods)) ?? ""}; events: ${did}`);
      }, 180_000, 500);
    storageClass = await createExpandableStorageClass(admin);
    await admin.create(MYC, { apiVersion: MySQLClusterKind.apiVersion, kind: MySQLClusterKind.kind, metadata: { name: "shop", namespace: appNs, labels }, spec: { replicas: 2, storage: { size: "1Gi", storageClassName: storageClass } } });
    const c = await running(2);
    expect(c.status?.members?.map((m) => [m.name, m.role, m.ioThread])).toEqual([["shop-0", "primary", undefined], ["shop-1", "replica", true]]);
    // Bigger volumes: the claims are expanded and the StatefulSet is recreated with the new claim template.
    const stsUid = (await admin.get(builtin.statefulSet, appNs, "shop")).metadata.uid;
    await admin.patch(MYC, appNs, "shop", { spec: { storage: { size: "2Gi" } } });
    await waitFor("the StatefulSet recreated with 2Gi claims", async () => {
      const sts = await admin.get<KubeObject & { spec: { volumeClaimTemplates: { spec: { resources: { requests: { storage: string } } } }[] } }>(builtin.statefulSet, appNs, "shop").catch(() => undefined);
      return sts && sts.metadata.uid !== stsUid && sts.spec.volumeClaimTemplates[0]?.spec.resources.requests.storage === "2Gi" ? true : undefined;
    }, 60_000, 250);
    await running(2);
    // Scaled in, and told to delete the Secrets it generated with it: they get its owner reference.
    await admin.patch(MYC, appNs, "shop", { spec: { replicas: 1, secretDeletionPolicy: "Delete" } });
    await running(1);
    // An image change rolls the (single) server — after a backup of it: the operator creates a
    // MySQLBackup (which the backup operator runs) and then deletes the pod.
    const rootSecret = await admin.get<KubeObject & { data: Record<string, string> }>(builtin.secret, appNs, "shop-root");
    const server = await waitFor("shop-0's server", () => servers?.server("shop-0"));
    const root = await import("mysql2/promise").then((m) => m.default.createConnection({ host: server.host, port: server.port, user: "root", password: Buffer.from(rootSecret.data.password ?? "", "base64").toString() }));
    await root.query("CREATE DATABASE shop_data");
    await root.query("CREATE TABLE shop_data.t (id INT PRIMARY KEY)");
    await root.end();
    await admin.patch(MYC, appNs, "shop", { spec: { image: "mariadb:11.4.9", updateStrategy: { backupBeforeUpgrade: { storage: storage(), databases: ["shop_data"] } } } });
    await waitFor("rolled to the new image", async () => {
      const rolled = await admin.get<MySQLCluster>(MYC, appNs, "shop");
      return rolled.status?.currentImage === "mariadb:11.4.9" && rolled.status.phase === "Running" ? true : undefined;
    }, 120_000, 500);
    await admin.delete(MYC, appNs, "shop");
    await waitGone(admin, MYC, appNs, "shop");
    await waitGone(admin, builtin.statefulSet, appNs, "shop", 60_000);
    await waitGone(admin, builtin.secret, appNs, "shop-root", 60_000);
    expect((await eventsOf("shop")).map((e) => e.reason)).toEqual(expect.arrayContaining(["SecretGenerated", "PrimaryConfigured", "ReplicationConfigured", "VolumesExpanding", "ReplicaRemoved", "BackingUp", "PodRestarted", "RolloutComplete"]));
  }, 300_000);

  it("joins the repeated SecretNotFound failures into one Event's series", async () => {
    // The recorder writes a repeat at most every 30 s (a PATCH of the Event's series).
    const event = await waitFor(
      "a series on the SecretNotFound Event",
      async () => (await eventsOf("no-secret")).find((e) => e.reason === "SecretNotFound" && (e.series?.count ?? 0) >= 2),
      90_000,
      1_000,
    );
    expect((await eventsOf("no-secret")).filter((e) => e.reason === "SecretNotFound")).toHaveLength(1);
    expect(event.series?.count).toBeGreaterThanOrEqual(2);
  });

  it("stops, releasing the Lease", async () => {
    await manager!.stop();
    const lease = await admin.get<KubeObject & { spec?: { holderIdentity?: string } }>(builtin.lease, release, "stateward-manager");
    expect(lease.spec?.holderIdentity ?? "").toBe("");
  });

  it("was refused nothing: no request got 403, no log line says forbidden or could not record event", () => {
    expect(requests.length).toBeGreaterThan(50);
    const forbidden = requests.filter((r) => r.status === 403).map((r) => `${r.verb} ${r.path}`);
    expect([...new Set(forbidden)], "requests the chart's RBAC refused").toEqual([]);
    const complaints = logs
      .lines()
      .filter((l) => l.level !== "debug" && l.level !== "info")
      .filter((l) => /forbidden/i.test(JSON.stringify(l)) || l.msg === "could not record event")
      .map((l) => JSON.stringify(l));
    expect(complaints, "log lines about missing permissions").toEqual([]);
  });

  it("grants nothing the operators did not use, except the commented allow-list", () => {
    const granted = grantedPermissions(objects);
    expect(granted.length).toBeGreaterThan(10);
    const unused = unusedGrants(granted, requests);
    const unexplained = unused.filter((p) => !(allowKey(p) in ALLOW_UNUSED)).map(permissionKey).sort();
    expect(unexplained, `granted but never used; what was used:\n  ${usedPermissions(requests).join("\n  ")}\n`).toEqual([]);
    // An allow-list entry the chart no longer grants is stale.
    const grantedKeys = new Set(granted.map(allowKey));
    expect(Object.keys(ALLOW_UNUSED).filter((k) => !grantedKeys.has(k)), "allow-list entries the chart does not grant").toEqual([]);
  });
});
