// A MySQLBinlogArchive of a MySQLCluster (through the MySQLInstance the
// cluster publishes, which reaches the primary) across a planned switchover
// and across an automatic failover (the primary's server killed while an
// application writes through the primary Service): the archive follows the
// new primary, and its GTIDs go on one by one — no gap, no duplicate — from
// the old primary's to the new one's. A failover that lost a transaction the
// archive already holds must be reported (ArchiveDiverged), never archived
// over. And recovery across both is exact: a MySQLBackup taken before them,
// restored with pointInTime into a separate server, replays the files of every
// primary in turn up to the last GTID, or up to a former primary's last write.
import type { S3Client } from "@aws-sdk/client-s3";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mysql from "mysql2/promise";
import { findCondition } from "@stateward/core";
import {
  MySQLBackupKind,
  MySQLBinlogArchiveKind,
  MySQLRestoreKind,
  createMySQLBackupOperator,
  parseGtid,
  type MySQLBackup,
  type MySQLBinlogArchive,
  type MySQLRestore,
} from "@stateward/operator-mysql-backup";
import { MySQLClusterKind, SERVER_ID_BASE, clusterNames } from "@stateward/operator-mysql-cluster";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { s3Client, startMariaDB } from "../../harness/index.ts";
import { backupCompleted, createMySQLInstance, createS3Secret, restoreFinished } from "../../support/backup-setup.ts";
import { clusterManifest, clusterRunning, onPod, rootPassword, startClusterSuite, type ClusterSuite } from "../../support/mysql-cluster.ts";
import { testClient } from "../../support/kube.ts";
import { archiveManifest, breaksInChain, readArchive, sequenceFaults } from "../../support/binlog-archive.ts";
import { loseNode, newPrimary, prepareApp, startPrimaryWriter, storedIds } from "../../support/mysql-failover.ts";
import { waitFor } from "../../support/wait.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const MYC = MySQLClusterKind.resource;
const AR = MySQLBinlogArchiveKind.resource;
const BK = MySQLBackupKind.resource;
const RS = MySQLRestoreKind.resource;
const suffix = randomBytes(3).toString("hex");
const name = "arch";
let suite: ClusterSuite;
let s3: S3Client;

/** The server id the cluster gives a pod's server. */
const serverIdOf = (pod: string) => SERVER_ID_BASE + Number(pod.slice(pod.lastIndexOf("-") + 1));

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
    await client.create<MySQLBinlogArchive>(AR, archiveManifest(env.s3, ns, "orders", clusterNames(name).instance, prefix));
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

    // Every file as the index lists it; one by one in every domain, from where the archive started to the new primary's position.
    const { index, gtids } = await readArchive(s3, env.s3.bucket, `${prefix}/${ns}/orders`);
    expect(index).toMatchObject({ startPosition: start, position: end });
    expect(sequenceFaults(gtids, start, end)).toEqual([]);
    // Written by the old primary, then by the new one.
    expect([...new Set(gtids.map((g) => parseGtid(g).server))]).toEqual([SERVER_ID_BASE, SERVER_ID_BASE + 1]);
  }, 300_000);
});

describe("a MySQLBinlogArchive of a MySQLCluster that fails over", () => {
  const fo = "archfo";

  it("follows the promoted replica: the archive goes on from the new primary without gap or duplicate, every acknowledged write in it", async () => {
    const { ns, servers } = suite;
    await client.create(MYC, clusterManifest(ns, fo, { replicas: 3, storage: { size: "1Gi" }, failover: { detectionSeconds: 5 } }));
    const running = await clusterRunning(client, suite, fo, 3, { check: (c) => findCondition(c.status?.conditions, "SemiSync")?.status === "True" });
    const old = running.status?.currentPrimary ?? "";
    const password = await rootPassword(client, ns, fo);
    await prepareApp(client, servers, ns, fo, password);
    await onPod(servers, old, password, "CREATE TABLE app.writes (id INT PRIMARY KEY)");
    const prefix = `binlog-archive-test/${suffix}-failover`;
    const folder = `${prefix}/${ns}/orders-fo`;
    await client.create<MySQLBinlogArchive>(AR, archiveManifest(env.s3, ns, "orders-fo", clusterNames(fo).instance, prefix));
    const ready = await waitFor("the archive streaming from the primary", async () => {
      const a = await client.get<MySQLBinlogArchive>(AR, ns, "orders-fo");
      return findCondition(a.status?.conditions, "Ready")?.status === "True" && a.status?.source?.startsWith(`server ${serverIdOf(old)} at `) ? a : undefined;
    }, 60_000, 250);
    const start = ready.status?.startPosition ?? "";

    const writer = startPrimaryWriter(servers, ns, fo, "app.writes", true);
    let next = "";
    try {
      await waitFor("writes acknowledged and archived before the loss", async () => {
        const a = await client.get<MySQLBinlogArchive>(AR, ns, "orders-fo");
        return writer.acknowledged.length >= 50 && (a.status?.files ?? 0) >= 2 ? true : undefined;
      }, 60_000, 100);
      const lostAt = Date.now();
      await loseNode(servers, old);
      next = (await newPrimary(client, ns, fo, old)).status?.currentPrimary ?? "";
      const count = writer.acknowledged.length;
      await waitFor("a write acknowledged by the new primary", () => (writer.acknowledged.length > count + 20 ? true : undefined), 60_000, 20);
      console.log(`archive failover: ${old} -> ${next}, writable again ${Date.now() - lostAt} ms after the loss`);
    } finally {
      await writer.stop();
    }
    const [row] = await onPod(servers, next, password, "SELECT @@gtid_binlog_pos AS p");
    const end = String(row?.p);
    const followedAt = Date.now();
    const outcome = await waitFor("the archive to hold the new primary's position from it, or to report a divergence", async () => {
      const a = await client.get<MySQLBinlogArchive>(AR, ns, "orders-fo");
      const cond = findCondition(a.status?.conditions, "Ready");
      if (cond?.reason === "ArchiveDiverged") return { diverged: cond.message ?? "", archive: a };
      return a.status?.archivedPosition === end && a.status.source?.startsWith(`server ${serverIdOf(next)} at `) ? { diverged: undefined, archive: a } : undefined;
    }, 90_000, 250);
    const contents = await readArchive(s3, env.s3.bucket, folder);
    expect(breaksInChain(contents.index)).toEqual([]);
    if (outcome.diverged !== undefined) {
      // The old primary sent the archiver a commit no replica had received when it was lost: named, nothing archived over it.
      console.log(`archive failover: the archive diverged from ${next}: ${outcome.diverged}`);
      expect(outcome.diverged).toMatch(new RegExp(`^the archive holds transactions that server ${serverIdOf(next)} at `));
      expect(sequenceFaults(contents.gtids, start, contents.index.position)).toEqual([]);
      expect(contents.gtids.some((g) => g.includes(`-${serverIdOf(next)}-`))).toBe(false);
      return;
    }
    console.log(`archive failover: archive at the new primary's position ${end} ${Date.now() - followedAt} ms after the writes stopped; ${contents.index.files.length} files`);
    expect(contents.index).toMatchObject({ startPosition: start, position: end });
    expect(sequenceFaults(contents.gtids, start, end)).toEqual([]);
    // The old primary's transactions, then the new one's.
    const writers = [...new Set(contents.gtids.map((g) => Number(g.split("-")[1])))];
    expect(writers).toEqual([serverIdOf(old), serverIdOf(next)]);
    expect(contents.index.files.at(-1)?.serverId).toBe(serverIdOf(next));
    // Every write the application had acknowledged is in the archive (SemiSync: each was on a replica).
    const archived = new Set(contents.gtids);
    const missing = writer.acknowledged.filter((id) => writer.gtids.has(id) && !archived.has(writer.gtids.get(id) ?? ""));
    expect(missing).toEqual([]);
    expect(outcome.archive.status?.source).toMatch(new RegExp(`^server ${serverIdOf(next)} at `));
  }, 400_000);
});

describe("point-in-time recovery across a switchover and a failover of an archived MySQLCluster", () => {
  const pc = "archpitr";

  it("restores a backup taken before them into a separate server, replaying every primary's files: exact to the last GTID, and to each former primary's last acknowledged write", async () => {
    const { ns, servers } = suite;
    await client.create(MYC, clusterManifest(ns, pc, { replicas: 3, storage: { size: "1Gi" }, failover: { detectionSeconds: 5 } }));
    await clusterRunning(client, suite, pc, 3, { check: (c) => c.status?.currentPrimary === `${pc}-0` && findCondition(c.status?.conditions, "SemiSync")?.status === "True" });
    const password = await rootPassword(client, ns, pc);
    await prepareApp(client, servers, ns, pc, password);
    await onPod(servers, `${pc}-0`, password, "CREATE TABLE app.writes (id INT PRIMARY KEY)");
    const prefix = `binlog-archive-test/${suffix}-pitr`;
    const archive = archiveManifest(env.s3, ns, "orders-pitr", clusterNames(pc).instance, prefix);
    await client.create<MySQLBinlogArchive>(AR, archive);
    await waitFor("the archive streaming from pod 0", async () => {
      const a = await client.get<MySQLBinlogArchive>(AR, ns, "orders-pitr");
      return findCondition(a.status?.conditions, "Ready")?.status === "True" && a.status?.source?.startsWith(`server ${SERVER_ID_BASE} at `) ? a : undefined;
    }, 60_000, 250);
    // The restores' target: a server of the test's own, outside the cluster.
    const dir = mkdtempSync(join(tmpdir(), "sw-pitr-cluster-"));
    const target = await startMariaDB({ dir: join(dir, "target"), args: ["--server-id=9"] });
    let targetConn: mysql.Connection | undefined;
    try {
      await createMySQLInstance(client, ns, "pitr-target", target);
      targetConn = await mysql.createConnection({ host: target.host, port: target.port, user: target.user, password: target.password });

      const started = Date.now();
      const writer = startPrimaryWriter(servers, ns, pc, "app.writes", true);
      let backupPosition = "";
      let promoted = "";
      // Each former primary's last acknowledged write (its GTID names its server), read once the next primary took over: points in the middle.
      const serverOf = (gtid: string | undefined) => Number(gtid?.split("-")[1]);
      const lastWriteOf = (serverId: number) => writer.acknowledged.filter((id) => serverOf(writer.gtids.get(id)) === serverId).at(-1) ?? 0;
      let beforeSwitchover = 0;
      let beforeLoss = 0;
      try {
        await waitFor("writes before the backup", () => (writer.acknowledged.length >= 30 ? true : undefined), 30_000, 50);
        await client.create<MySQLBackup>(BK, {
          apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name: "pitr-full", namespace: ns },
          spec: { instanceRef: { name: clusterNames(pc).instance }, databases: ["app"], storage: archive.spec.storage },
        });
        const backup = await backupCompleted(client, ns, "pitr-full");
        backupPosition = backup.status?.position?.gtid ?? "";
        const afterBackup = writer.acknowledged.length;
        await waitFor("writes after the backup, on the old primary", () => (writer.acknowledged.length >= afterBackup + 30 ? true : undefined), 30_000, 50);
        await client.patch(MYC, ns, pc, { spec: { primary: 1 } });
        await clusterRunning(client, suite, pc, 3, { check: (c) => c.status?.currentPrimary === `${pc}-1` });
        beforeSwitchover = lastWriteOf(SERVER_ID_BASE);
        // The old primary, a replica now, logs the new one's writes too, and the archive may stream them from it
        // until its check sees the switch (every 10 s): writes go on until the archive streams from the new primary.
        await waitFor("the archive streaming from the new primary", async () => {
          const a = await client.get<MySQLBinlogArchive>(AR, ns, "orders-pitr");
          return a.status?.source?.startsWith(`server ${SERVER_ID_BASE + 1} at `) ? a : undefined;
        }, 60_000, 250);
        const followed = writer.acknowledged.length;
        await waitFor("writes acknowledged by the new primary, archived from it", () => (writer.acknowledged.length >= followed + 30 ? true : undefined), 60_000, 50);
        // Then that primary's node is lost: a replica is promoted (SemiSync: every acknowledged write is on one).
        const lostAt = Date.now();
        await loseNode(servers, `${pc}-1`);
        promoted = (await newPrimary(client, ns, pc, `${pc}-1`)).status?.currentPrimary ?? "";
        beforeLoss = lastWriteOf(SERVER_ID_BASE + 1);
        const lost = writer.acknowledged.length;
        await waitFor("writes acknowledged by the promoted replica", () => (writer.acknowledged.length >= lost + 30 ? true : undefined), 60_000, 20);
        console.log(`pitr across a failover: ${pc}-1 -> ${promoted}, writable again ${Date.now() - lostAt} ms after the loss`);
        await waitFor("the archive streaming from the promoted replica, or reporting a divergence", async () => {
          const a = await client.get<MySQLBinlogArchive>(AR, ns, "orders-pitr");
          const ready = findCondition(a.status?.conditions, "Ready");
          if (ready?.reason === "ArchiveDiverged") throw new Error(`the archive diverged from the promoted replica: ${ready.message}`);
          return a.status?.source?.startsWith(`server ${serverIdOf(promoted)} at `) ? a : undefined;
        }, 90_000, 250);
        const followedPromoted = writer.acknowledged.length;
        await waitFor("writes acknowledged by the promoted replica, archived from it", () => (writer.acknowledged.length >= followedPromoted + 30 ? true : undefined), 60_000, 50);
      } finally {
        await writer.stop();
      }
      console.log(`pitr across a switchover and a failover: ${writer.acknowledged.length} writes in ${Date.now() - started} ms, backup at ${backupPosition}`);
      expect(beforeLoss).toBeGreaterThan(beforeSwitchover);
      expect(writer.acknowledged.at(-1)).toBeGreaterThan(beforeLoss);

      const [row] = await onPod(servers, promoted, password, "SELECT @@gtid_binlog_pos AS p");
      const end = String(row?.p);
      expect(end).toMatch(/^\d+-\d+-\d+$/);
      await waitFor("the archive holding the promoted replica's position, from it", async () => {
        const a = await client.get<MySQLBinlogArchive>(AR, ns, "orders-pitr");
        return a.status?.archivedPosition === end && a.status.source?.startsWith(`server ${serverIdOf(promoted)} at `) ? a : undefined;
      }, 90_000, 250);
      const primaryIds = await storedIds(servers, promoted, password, "app.writes");
      const [primarySum] = await onPod(servers, promoted, password, "CHECKSUM TABLE app.writes");
      expect(writer.acknowledged.filter((id) => !primaryIds.has(id))).toEqual([]);

      // The files a replay from the backup to the end reads: the first primary's, the second one's, the promoted replica's.
      const { index } = await readArchive(s3, env.s3.bucket, `${prefix}/${ns}/orders-pitr`);
      const seq = (gtid: string) => BigInt(gtid.split("-")[2] ?? "0");
      const replayed = index.files.filter((f) => seq(f.lastGtid) > seq(backupPosition));
      const sources = replayed.map((f) => f.serverId).filter((id, i, all) => id !== all[i - 1]);
      expect(sources).toEqual([SERVER_ID_BASE, SERVER_ID_BASE + 1, serverIdOf(promoted)]);

      const restoreTo = async (restoreName: string, gtid: string) => {
        const t0 = Date.now();
        await client.create<MySQLRestore>(RS, {
          apiVersion: MySQLRestoreKind.apiVersion, kind: MySQLRestoreKind.kind, metadata: { name: restoreName, namespace: ns },
          spec: { instanceRef: { name: "pitr-target" }, databases: ["app"], source: { backupRef: { name: "pitr-full" } }, pointInTime: { archiveRef: { name: "orders-pitr" }, gtid } },
        });
        const restore = await restoreFinished(client, ns, restoreName);
        expect(findCondition(restore.status?.conditions, "Ready"), JSON.stringify(restore.status)).toMatchObject({ status: "True", reason: "Completed" });
        expect(restore.status?.pointInTime).toMatchObject({ backup: "pitr-full", backupPosition, lastReplayedGtid: gtid });
        console.log(`pitr across a switchover and a failover: restore to ${gtid} Completed in ${Date.now() - t0} ms, ${restore.status?.pointInTime?.transactions} transactions from ${restore.status?.pointInTime?.binlogFiles} files`);
        const [rows] = await targetConn!.query<mysql.RowDataPacket[]>("SELECT id FROM app.writes ORDER BY id");
        return { restore, ids: rows.map((r) => Number(r.id)) };
      };

      const last = await restoreTo("pitr-last", end);
      expect(last.restore.status?.pointInTime?.transactions).toBeGreaterThan(0);
      expect(last.restore.status?.pointInTime?.binlogFiles).toBeGreaterThanOrEqual(replayed.length);
      expect(last.ids).toEqual([...primaryIds].sort((a, b) => a - b));
      const [[targetSum]] = await targetConn.query<mysql.RowDataPacket[]>("CHECKSUM TABLE app.writes");
      expect(targetSum?.Checksum).toBe(primarySum?.Checksum);

      // One application session writes in order: the rows up to a write are those with an id up to it.
      for (const [restoreName, point] of [["pitr-before-switchover", beforeSwitchover], ["pitr-before-loss", beforeLoss]] as const) {
        const middle = await restoreTo(restoreName, writer.gtids.get(point) ?? "");
        expect(middle.ids).toEqual([...primaryIds].filter((id) => id <= point).sort((a, b) => a - b));
        expect(writer.acknowledged.filter((id) => id <= point && !middle.ids.includes(id))).toEqual([]);
      }
    } finally {
      await targetConn?.end();
      process.kill(target.pid, "SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  }, 400_000);
});
