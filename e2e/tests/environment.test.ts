// The real test environment itself: each component does what the operators
// will rely on. If one of these fails, every later suite would too.
import { GetObjectCommand, HeadBucketCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import {
  ApiextensionsV1Api,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  VersionApi,
  Watch,
  setHeaderOptions,
  type V1CustomResourceDefinition,
} from "@kubernetes/client-node";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { kubernetesVersion, s3Client, startMariaDB, stopMariaDB } from "../harness/index.ts";
import { waitFor } from "../support/wait.ts";

const env = inject("environment");
const kc = new KubeConfig();
kc.loadFromFile(env.kubeconfig);

describe("kube-apiserver", () => {
  it("reports the pinned Kubernetes version and has Ready KWOK nodes", async () => {
    const version = await kc.makeApiClient(VersionApi).getCode();
    expect(version.gitVersion).toBe(kubernetesVersion());
    const nodes = await kc.makeApiClient(CoreV1Api).listNode();
    const ready = nodes.items.filter((n) => n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
    expect(ready.length).toBeGreaterThanOrEqual(3);
  });

  it("establishes a CRD whose objects can be created, watched and status-patched", async () => {
    const ext = kc.makeApiClient(ApiextensionsV1Api);
    const crd: V1CustomResourceDefinition = {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: "widgets.envtest.stateward.io" },
      spec: {
        group: "envtest.stateward.io",
        names: { plural: "widgets", singular: "widget", kind: "Widget", listKind: "WidgetList" },
        scope: "Namespaced",
        versions: [
          {
            name: "v1",
            served: true,
            storage: true,
            subresources: { status: {} },
            schema: {
              openAPIV3Schema: {
                type: "object",
                properties: {
                  spec: { type: "object", properties: { size: { type: "integer", minimum: 1 } } },
                  status: { type: "object", properties: { observed: { type: "integer" } } },
                },
              },
            },
          },
        ],
      },
    };
    await ext.createCustomResourceDefinition({ body: crd });
    await waitFor("CRD Established", async () => {
      const got = await ext.readCustomResourceDefinition({ name: crd.metadata!.name! });
      return got.status?.conditions?.some((c) => c.type === "Established" && c.status === "True") ? true : undefined;
    });

    const custom = kc.makeApiClient(CustomObjectsApi);
    const ref = { group: "envtest.stateward.io", version: "v1", namespace: "default", plural: "widgets" };
    // Serving a just-established CRD can lag by a moment; retry the first create.
    await waitFor("first widget created", async (): Promise<unknown> =>
      custom.createNamespacedCustomObject({
        ...ref,
        body: { apiVersion: "envtest.stateward.io/v1", kind: "Widget", metadata: { name: "w1" }, spec: { size: 3 } },
      }),
    );
    // A watch without a resourceVersion starts with the current state (ADDED), then follows changes.
    const events: string[] = [];
    const watch = new Watch(kc);
    const aborter = await watch.watch(
      "/apis/envtest.stateward.io/v1/namespaces/default/widgets",
      {},
      (type: string, obj: { status?: { observed?: number } }) => events.push(`${type}:${obj.status?.observed ?? "-"}`),
      () => undefined,
    );
    await waitFor("initial ADDED event", () => Promise.resolve(events.length > 0 ? true : undefined), 10_000);
    await custom.patchNamespacedCustomObjectStatus(
      { ...ref, name: "w1", body: { status: { observed: 3 } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    const got = (await custom.getNamespacedCustomObject({ ...ref, name: "w1" })) as { status?: { observed?: number } };
    expect(got.status?.observed).toBe(3);
    await waitFor("watch events", () => Promise.resolve(events.includes("MODIFIED:3") ? true : undefined), 10_000);
    expect(events[0]).toBe("ADDED:-");
    aborter.abort();

    // The schema is enforced: a size below the minimum is refused with the field named.
    await expect(
      custom.createNamespacedCustomObject({
        ...ref,
        body: { apiVersion: "envtest.stateward.io/v1", kind: "Widget", metadata: { name: "bad" }, spec: { size: 0 } },
      }),
    ).rejects.toThrow(/spec\.size/);
    await ext.deleteCustomResourceDefinition({ name: crd.metadata!.name! });
  });
});

describe("StatefulSet on KWOK nodes", () => {
  const ns = "envtest-sts";
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);

  beforeAll(async () => {
    await core.createNamespace({ body: { metadata: { name: ns } } });
    // The ServiceAccount admission plugin refuses pods until the controller-manager made "default".
    await waitFor("default ServiceAccount", () => core.readNamespacedServiceAccount({ name: "default", namespace: ns }));
  });
  afterAll(async () => {
    await core.deleteNamespace({ name: ns });
  });

  it("gets 2 Running and Ready pods through the StatefulSet controller, scheduler and KWOK", async () => {
    await apps.createNamespacedStatefulSet({
      namespace: ns,
      body: {
        metadata: { name: "web" },
        spec: {
          replicas: 2,
          serviceName: "web",
          selector: { matchLabels: { app: "web" } },
          template: {
            metadata: { labels: { app: "web" } },
            spec: { containers: [{ name: "web", image: "registry.invalid/web:1" }] },
          },
        },
      },
    });
    const pods = await waitFor(
      "2 ready pods",
      async () => {
        const list = await core.listNamespacedPod({ namespace: ns, labelSelector: "app=web" });
        const ready = list.items.filter(
          (p) => p.status?.phase === "Running" && p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
        );
        return ready.length === 2 ? ready : undefined;
      },
      90_000,
    );
    expect(pods.map((p) => p.metadata?.name).sort()).toEqual(["web-0", "web-1"]);
    expect(pods.every((p) => p.spec?.nodeName?.startsWith("kwok-node-"))).toBe(true);
    const sts = await waitFor("StatefulSet status", async () => {
      const s = await apps.readNamespacedStatefulSet({ name: "web", namespace: ns });
      return s.status?.readyReplicas === 2 ? s : undefined;
    });
    expect(sts.status?.readyReplicas).toBe(2);
  });
});

describe("MariaDB", () => {
  const user = `envtest_${randomBytes(4).toString("hex")}`;
  const password = randomBytes(12).toString("base64url");

  afterAll(async () => {
    const admin = await mysql.createConnection(env.mysql);
    await admin.query("DROP USER IF EXISTS ?@'%'", [user]);
    await admin.end();
  });

  it("lets an account created by root log in with its password, and refuses a wrong one", async () => {
    const admin = await mysql.createConnection(env.mysql);
    await admin.query("CREATE USER ?@'%' IDENTIFIED BY ?", [user, password]);
    await admin.end();
    const conn = await mysql.createConnection({ host: env.mysql.host, port: env.mysql.port, user, password });
    const [rows] = await conn.query("SELECT CURRENT_USER() AS me");
    expect((rows as { me: string }[])[0]?.me).toBe(`${user}@%`);
    await conn.end();
    await expect(
      mysql.createConnection({ host: env.mysql.host, port: env.mysql.port, user, password: `${password}x` }),
    ).rejects.toThrow(/Access denied/);
  });

  // A throw-away server's temporary tables live in its own folder: the machine's
  // shared temporary directory is used by every other MariaDB on it, and a
  // bootstrap whose temporary table vanished there failed a CI run ("Could not
  // remove temporary table '/tmp/#sql-temptable-…'"). A TMPDIR that cannot hold
  // anything stands in for a shared one that misbehaves.
  it("starts a throw-away server that keeps its temporary files to itself", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sw-envdb-"));
    const unusable = join(dir, "not-a-directory");
    writeFileSync(unusable, "");
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = unusable;
    let server: Awaited<ReturnType<typeof startMariaDB>> | undefined;
    try {
      server = await startMariaDB({ dir: join(dir, "db") });
      const conn = await mysql.createConnection(server);
      const [settings] = await conn.query("SELECT @@tmpdir AS tmp");
      // An Aria temporary table is a file in the server's temporary directory.
      await conn.query("CREATE DATABASE scratch");
      await conn.query("CREATE TEMPORARY TABLE scratch.t (v TEXT) ENGINE=Aria");
      await conn.query("INSERT INTO scratch.t VALUES ('kept')");
      const [rows] = await conn.query("SELECT v FROM scratch.t");
      await conn.end();
      expect((settings as { tmp: string }[])[0]?.tmp.startsWith(join(dir, "db"))).toBe(true);
      expect(rows).toEqual([{ v: "kept" }]);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
      if (server) await stopMariaDB(server);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // A start that fails once its server runs (here: set-up statements the server refuses) must not
  // leave that server behind. It would keep its data directory locked and its socket bound, and the
  // next start on the same data — a retry, a restarted pod's server — would fail, or reach the old
  // server through the socket and report a port nothing listens on.
  it("stops a throw-away server whose start failed, so the next start on its data succeeds", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sw-envdb-"));
    let server: Awaited<ReturnType<typeof startMariaDB>> | undefined;
    try {
      // Without grant tables the server runs but refuses CREATE USER: the start's set-up fails.
      await expect(startMariaDB({ dir: join(dir, "db"), args: ["--skip-grant-tables"] })).rejects.toThrow(/skip-grant-tables/);
      // The next start on the same data is a server of its own: the one that failed is gone, locks and socket with it.
      server = await startMariaDB({ dir: join(dir, "db"), rootPassword: "second-start" });
      const conn = await mysql.createConnection({ host: server.host, port: server.port, user: server.user, password: server.password });
      const [rows] = await conn.query("SELECT @@port AS port");
      await conn.end();
      expect(rows).toEqual([{ port: server.port }]);
    } finally {
      if (server) await stopMariaDB(server);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("S3 server", () => {
  let client: S3Client;
  beforeAll(() => {
    client = s3Client(env.s3);
  });
  afterAll(() => client.destroy());

  it("stores a multipart upload with default checksums and reads it back byte-identical", async () => {
    // 12 MiB in 5 MiB parts: three parts, the SDK's default CRC32 checksums on each.
    const body = randomBytes(12 * 1024 * 1024);
    const upload = new Upload({
      client,
      params: { Bucket: env.s3.bucket, Key: "envtest/multipart.bin", Body: body },
      partSize: 5 * 1024 * 1024,
    });
    await upload.done();
    const got = await client.send(new GetObjectCommand({ Bucket: env.s3.bucket, Key: "envtest/multipart.bin" }));
    const bytes = Buffer.from(await got.Body!.transformToByteArray());
    expect(bytes.length).toBe(body.length);
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(createHash("sha256").update(body).digest("hex"));
  });

  it("refuses a request signed with a wrong secret key", async () => {
    const wrong = s3Client({ ...env.s3, secretAccessKey: `${env.s3.secretAccessKey}x` });
    await expect(wrong.send(new HeadBucketCommand({ Bucket: env.s3.bucket }))).rejects.toThrow();
    await expect(
      wrong.send(new PutObjectCommand({ Bucket: env.s3.bucket, Key: "envtest/forged.txt", Body: "nope" })),
    ).rejects.toThrow(/signature|SignatureDoesNotMatch|denied/i);
    wrong.destroy();
  });
});
