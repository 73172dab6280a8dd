// A MySQLBinlogArchive of a MySQLCluster (through the MySQLInstance the
// cluster publishes, which reaches the primary) across a planned switchover:
// the archive follows the new primary, and its GTIDs go on one by one — no
// gap, no duplicate — from the old primary's to the new one's.
import { GetObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { randomBytes } from "node:crypto";
import { findCondition } from "@stateward/core";
import { MySQLBinlogArchiveKind, TransactionAssembler, createMySQLBackupOperator, parseArchiveIndex, parseGtid, readBinlogFile, type MySQLBinlogArchive } from "@stateward/operator-mysql-backup";
import { MySQLClusterKind, SERVER_ID_BASE, clusterNames } from "@stateward/operator-mysql-cluster";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { s3Client } from "../../harness/index.ts";
import { createS3Secret } from "../../support/backup-setup.ts";
import { clusterManifest, clusterRunning, onPod, rootPassword, startClusterSuite, type ClusterSuite } from "../../support/mysql-cluster.ts";
import { testClient } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const MYC = MySQLClusterKind.resource;
const AR = MySQLBinlogArchiveKind.resource;
const suffix = randomBytes(3).toString("hex");
const name = "arch";
let suite: ClusterSuite;
let s3: S3Client;

async function getObject(key: string): Promise<Buffer> {
  const res = await s3.send(new GetObjectCommand({ Bucket: env.s3.bucket, Key: key }));
  return Buffer.from(await (res.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
}

beforeAll(async () => {
  s3 = s3Client(env.s3);
  // The cluster operator first: it binds the connector that reaches the pods' servers, which the archive uses too.
  suite = await startClusterSuite(client, env, "binlog-cluster", [createMySQLBackupOperator()]);
  await createS3Secret(client, suite.ns, env);
}, 120_000);

afterAll(async () => {
  await suite?.stop();
}, 120_000);

describe("a MySQLBinlogArchive of a MySQLCluster", () => {
  it("follows a switchover to the new primary: every GTID archived once, in order", async () => {
    const { ns } = suite;
    await client.create(MYC, clusterManifest(ns, name, { replicas: 2, storage: { size: "1Gi" } }));
    await clusterRunning(client, suite, name, 2, { check: (c) => c.status?.currentPrimary === `${name}-0` });
    const password = await rootPassword(client, ns, name);
    const prefix = `binlog-archive-test/${suffix}`;
    await client.create<MySQLBinlogArchive>(AR, {
      apiVersion: MySQLBinlogArchiveKind.apiVersion, kind: MySQLBinlogArchiveKind.kind, metadata: { name: "orders", namespace: ns },
      spec: {
        instanceRef: { name: clusterNames(name).instance },
        rotation: { maxFileAgeSeconds: 5 },
        storage: { s3: { bucket: env.s3.bucket, prefix, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } },
      },
    });
    const ready = await waitFor("the archive streaming from pod 0", async () => {
      const a = await client.get<MySQLBinlogArchive>(AR, ns, "orders");
      return findCondition(a.status?.conditions, "Ready")?.status === "True" ? a : undefined;
    }, 60_000, 250);
    expect(ready.status?.source).toMatch(new RegExp(`^server ${SERVER_ID_BASE} at `));
    const start = ready.status?.startPosition ?? "";

    await onPod(suite.servers, `${name}-0`, password, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY) ENGINE=InnoDB");
    for (let i = 1; i <= 20; i++) await onPod(suite.servers, `${name}-0`, password, `INSERT INTO app.t VALUES (${i})`);
    await client.patch(MYC, ns, name, { spec: { primary: 1 } });
    await clusterRunning(client, suite, name, 2, { check: (c) => c.status?.currentPrimary === `${name}-1` });
    for (let i = 21; i <= 40; i++) await onPod(suite.servers, `${name}-1`, password, `INSERT INTO app.t VALUES (${i})`);
    const [row] = await onPod(suite.servers, `${name}-1`, password, "SELECT @@gtid_binlog_pos AS p");
    const end = String(row?.p);
    // The old primary, a replica now, logs the new primary's transactions too: until the archive's
    // check (every 10 s) sees the primary Service reach pod 1, it may go on streaming from pod 0.
    await waitFor("the archive streaming from the new primary, holding its position", async () => {
      const a = await client.get<MySQLBinlogArchive>(AR, ns, "orders");
      return a.status?.archivedPosition === end && a.status.source?.startsWith(`server ${SERVER_ID_BASE + 1} at `) ? a : undefined;
    }, 90_000, 500);

    const index = parseArchiveIndex(await getObject(`${prefix}/${ns}/orders/index.json`));
    expect(index).toMatchObject({ startPosition: start, position: end });
    const gtids = [];
    for (const f of index.files) {
      const assembler = new TransactionAssembler();
      for (const e of readBinlogFile(await getObject(`${prefix}/${ns}/orders/${f.key}`))) {
        const item = assembler.push(e);
        if (item.kind === "transaction") gtids.push(item.transaction.gtid);
      }
    }
    // One by one in every domain, from where the archive started to the new primary's position.
    const next = new Map([...(start ? start.split(",") : [])].map((g) => parseGtid(g)).map((g) => [g.domain, g.seq]));
    for (const g of gtids) {
      expect(g.seq, `GTID ${g.domain}-${g.server}-${g.seq}`).toBe((next.get(g.domain) ?? 0n) + 1n);
      next.set(g.domain, g.seq);
    }
    expect(end.split(",").map((g) => parseGtid(g)).every((g) => next.get(g.domain) === g.seq)).toBe(true);
    // Written by the old primary, then by the new one.
    expect([...new Set(gtids.map((g) => g.server))]).toEqual([SERVER_ID_BASE, SERVER_ID_BASE + 1]);
  }, 300_000);
});
