// A binlog archive across the faults of a bad day, on real servers and the
// real S3: the manager archiving it SIGKILLed (a process of its own) while an
// application writes — the next manager resumes from the index without a gap
// or a duplicate and the lag comes back to seconds; and a failover that lost
// a transaction the archive already holds (the old primary sent it to the
// archiver, as to any replica that asks, before a replica had it) — the
// archive says so (ArchiveDiverged, naming it) and archives nothing of the new
// primary's history after it.
import type { S3Client } from "@aws-sdk/client-s3";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import mysql from "mysql2/promise";
import { findCondition } from "@stateward/core";
import { MySQLBackupKind, MySQLBinlogArchiveKind, type MySQLBackup, type MySQLBinlogArchive } from "@stateward/operator-mysql-backup";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startManagerProcess, type ManagerHandle } from "../../bench/manager-handle.ts";
import { s3Client, startMariaDB, type MariaDBEndpoint } from "../../harness/index.ts";
import { createBackupPrerequisites } from "../../support/backup-setup.ts";
import { archiveManifest, binlogPosition, breaksInChain, getObject, readArchive, sequenceFaults, startArchiver } from "../../support/binlog-archive.ts";
import { eventsAbout } from "../../support/events.ts";
import { deleteNamespace, freshNamespace, testClient } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const AR = MySQLBinlogArchiveKind.resource;
const suffix = randomBytes(3).toString("hex");
const prefix = `binlog-resilience-${suffix}`;
const logDir = join(import.meta.dirname, "../../../.stateward/test/logs");
/** The archive's rotation (archiveManifest's): what its lag may reach while a file fills under a steady writer. */
const MAX_FILE_AGE_SECONDS = 5;
let s3: S3Client;
let dir: string;
const servers: (MariaDBEndpoint & { pid: number })[] = [];

const connect = (ep: MariaDBEndpoint) => mysql.createConnection({ host: ep.host, port: ep.port, user: ep.user, password: ep.password });

async function server(name: string, serverId: number, ...args: string[]): Promise<MariaDBEndpoint & { pid: number }> {
  const s = await startMariaDB({ dir: join(dir, name), args: ["--log-bin=mysql-bin", `--server-id=${serverId}`, "--binlog-format=ROW", ...args] });
  servers.push(s);
  return s;
}

/** INSERTs one row every `everyMs` into `table` until stopped: an application's steady trickle. */
function steadyWriter(ep: MariaDBEndpoint, table: string, everyMs = 20) {
  let stopped = false;
  let written = 0;
  const done = (async () => {
    const conn = await connect(ep);
    try {
      while (!stopped) {
        await conn.query(`INSERT INTO ${table} (id) VALUES (?)`, [++written]);
        await sleep(everyMs);
      }
    } finally {
      await conn.end();
    }
  })();
  return {
    written: () => written,
    async stop(): Promise<void> {
      stopped = true;
      await done;
    },
  };
}

beforeAll(() => {
  s3 = s3Client(env.s3);
  dir = mkdtempSync(join(tmpdir(), "sw-binlog-resilience-"));
  mkdirSync(logDir, { recursive: true });
});

afterAll(() => {
  for (const s of servers) {
    try {
      process.kill(s.pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("a MySQLBinlogArchive whose manager is SIGKILLed mid-archive", () => {
  let ns: string;
  let source: MariaDBEndpoint & { pid: number };
  let manager: ManagerHandle | undefined;

  const startManager = (n: number) =>
    startManagerProcess({ kubeconfig: env.kubeconfig, namespace: ns, operators: "mysql-backup" }, join(logDir, `binlog-resilience-${suffix}-manager-${n}.log`), 60_000);

  /** The lag the manager exports for the archive, from its /metrics. */
  async function lagMetric(): Promise<number | undefined> {
    const text = await manager!.scrape();
    const line = text.split("\n").find((l) => l.startsWith("stateward_mysqlbinlogarchive_lag_seconds{") && l.includes(`namespace="${ns}"`) && l.includes('name="orders"'));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
  }

  const archive = () => client.get<MySQLBinlogArchive>(AR, ns, "orders");

  beforeAll(async () => {
    source = await server("killed-manager", 31);
    ns = await freshNamespace(client, "binlog-resilience");
    // The manager installs the CRDs, so it starts before the objects are created.
    manager = await startManager(1);
    await createBackupPrerequisites(client, ns, env, source);
  }, 180_000);

  afterAll(async () => {
    manager?.kill();
    if (ns) await deleteNamespace(client, ns);
  });

  it("resumes from the index: every GTID archived once, the files chained, the lag back to seconds (status and metric)", async () => {
    await client.create<MySQLBinlogArchive>(AR, archiveManifest(env.s3, ns, "orders", "db", prefix));
    const ready = await waitFor("the archive Ready", async () => {
      const a = await archive();
      return findCondition(a.status?.conditions, "Ready")?.status === "True" ? a : undefined;
    }, 60_000, 250);
    const start = ready.status?.startPosition ?? "";
    const admin = await connect(source);
    await admin.query("CREATE DATABASE app");
    await admin.query("CREATE TABLE app.writes (id INT PRIMARY KEY) ENGINE=InnoDB");
    await admin.end();
    const writer = steadyWriter(source, "app.writes");
    try {
      // Archiving under way: files archived, and (a file filling every moment) transactions in memory only.
      await waitFor("files archived while the writer writes", async () => ((await archive()).status?.files ?? 0) >= 2 || undefined, 60_000, 250);
      manager!.kill();
      await waitFor("the manager process gone", () => (manager!.running() ? undefined : true));
      const killedAt = await binlogPosition(source);
      // Down for a while, as a rescheduled Pod is: the writes go on.
      await sleep(5_000);
      const restartedAt = Date.now();
      manager = await startManager(2);
      const startupMs = Date.now() - restartedAt;
      const backlog = await binlogPosition(source);
      // Caught up: everything written up to the new manager's start is in S3.
      const caughtUp = await waitFor("the archive past what was written while no manager ran", async () => {
        const a = await archive();
        const archived = a.status?.archivedPosition ?? "";
        return archived && seqOf(archived) >= seqOf(backlog) ? Date.now() : undefined;
      }, 60_000, 100);
      // The lag while the writer goes on: a file fills for MAX_FILE_AGE_SECONDS, then is stored.
      // status.lagSeconds is written with each stored file (0 then) and every 15 s; how old the newest
      // stored transaction is (now − status.lastArchivedTime, whole seconds) is the recovery point.
      const samples: { status: number; metric: number | undefined; staleMs: number }[] = [];
      for (const until = Date.now() + 20_000; Date.now() < until; ) {
        const a = await archive();
        samples.push({ status: a.status?.lagSeconds ?? -1, metric: await lagMetric(), staleMs: Date.now() - Date.parse(a.status?.lastArchivedTime ?? "") });
        await sleep(250);
      }
      const worst = Math.max(...samples.map((s) => s.status));
      const stalest = Math.max(...samples.map((s) => s.staleMs));
      console.log(
        `manager killed at ${killedAt}; restarted after 5 s down in ${startupMs} ms; archive caught up with ${backlog} ${caughtUp - restartedAt} ms after the restart; ` +
          `over the next 20 s (${samples.length} samples): status.lagSeconds max ${worst}, last ${samples.at(-1)?.status}; newest stored transaction at most ${stalest} ms old`,
      );
      expect(worst).toBeLessThanOrEqual(MAX_FILE_AGE_SECONDS + 3);
      expect(stalest).toBeLessThanOrEqual((MAX_FILE_AGE_SECONDS + 5) * 1000);
      // The metric and the status are set together: read back to back, they agree.
      await waitFor("the metric to agree with status.lagSeconds", async () => {
        const before = await lagMetric();
        const status = (await archive()).status?.lagSeconds;
        const after = await lagMetric();
        return before !== undefined && before === status && after === status ? true : undefined;
      }, 30_000, 100);
    } finally {
      await writer.stop();
    }
    const end = await binlogPosition(source);
    const done = await waitFor("the archive to hold the server's position", async () => {
      const a = await archive();
      return a.status?.archivedPosition === end && a.status.lagSeconds === 0 ? a : undefined;
    }, 60_000, 250);
    expect(await lagMetric()).toBe(0);
    expect(findCondition(done.status?.conditions, "Ready")).toMatchObject({ status: "True", reason: "Archiving" });

    const contents = await readArchive(s3, env.s3.bucket, `${prefix}/${ns}/orders`);
    expect(contents.index).toMatchObject({ startPosition: start, position: end });
    expect(breaksInChain(contents.index)).toEqual([]);
    expect(sequenceFaults(contents.gtids, start, end)).toEqual([]);
    // CREATE DATABASE, CREATE TABLE and one transaction per write.
    expect(contents.gtids.length).toBe(seqOf(end) - seqOf(start));
  }, 300_000);

  it("with retention SinceOldestBackup, deletes the files no kept backup needs (index first), and keeps every one a backup's restore replays", async () => {
    const folder = `${prefix}/${ns}/orders`;
    const before = await readArchive(s3, env.s3.bucket, folder);
    // Nothing is deleted while no backup of the instance completed.
    await client.patch(AR, ns, "orders", { spec: { retention: { policy: "SinceOldestBackup", minimumAgeHours: 0 } } });
    const admin = await connect(source);
    await admin.query("CREATE TABLE app.writes_after (id INT PRIMARY KEY) ENGINE=InnoDB");
    await admin.end();
    const writer = steadyWriter(source, "app.writes_after", 50);
    try {
      await sleep(8_000);
      expect((await readArchive(s3, env.s3.bucket, folder)).index.files.slice(0, before.index.files.length).map((f) => f.key)).toEqual(before.index.files.map((f) => f.key));
      await client.create<MySQLBackup>(MySQLBackupKind.resource, {
        apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name: "full", namespace: ns },
        spec: {
          instanceRef: { name: "db" }, databases: ["app"],
          storage: { s3: { bucket: env.s3.bucket, prefix: `${prefix}-backups`, endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } },
        },
      });
      const backup = await waitFor("the backup Completed", async () => {
        const b = await client.get<MySQLBackup>(MySQLBackupKind.resource, ns, "full");
        if (b.status?.phase === "Failed") throw new Error(`backup failed: ${findCondition(b.status.conditions, "Ready")?.message}`);
        return b.status?.phase === "Completed" ? b : undefined;
      }, 120_000, 250);
      const snapshot = backup.status?.position?.gtid ?? "";
      expect(snapshot).toMatch(/^0-31-\d+$/);
      // A pass runs once a minute at most, between the archive's steps.
      const pruned = await waitFor("the Pruned Event", async () => (await eventsAbout(client, ns, { name: "orders", kind: "MySQLBinlogArchive" })).find((e) => e.reason === "Pruned"), 120_000, 500);
      console.log(`retention: ${pruned.note}`);
    } finally {
      await writer.stop();
    }
    const end = await binlogPosition(source);
    await waitFor("the archive to hold the server's position", async () => ((await archive()).status?.archivedPosition === end ? true : undefined), 60_000, 250);
    const after = await readArchive(s3, env.s3.bucket, (folder));
    const snapshotSeq = seqOf((await client.get<MySQLBackup>(MySQLBackupKind.resource, ns, "full")).status?.position?.gtid ?? "");
    const gone = before.index.files.filter((f) => !after.index.files.some((k) => k.key === f.key));
    expect(gone.length).toBeGreaterThan(0);
    // Only files wholly at or before the backup's snapshot went; the first kept one holds the transaction after it (or starts past it).
    for (const f of gone) expect(seqOf(f.endPosition)).toBeLessThanOrEqual(snapshotSeq);
    expect(seqOf(after.index.startPosition)).toBeLessThanOrEqual(snapshotSeq);
    expect(after.index.startPosition).toBe(after.index.files[0]?.startPosition);
    // Their objects are gone; the archive is still one chain, every GTID once from where it starts now.
    for (const f of gone) await expect(getObject(s3, env.s3.bucket, `${folder}/${f.key}`)).rejects.toThrow();
    expect(breaksInChain(after.index)).toEqual([]);
    expect(sequenceFaults(after.gtids, after.index.startPosition, end)).toEqual([]);
    expect((await archive()).status?.startPosition).toBe(after.index.startPosition);
  }, 300_000);
});

/** The sequence number of domain 0 in a GTID position ("" is 0). */
const seqOf = (position: string): number => (position === "" ? 0 : Number(/(?:^|,)0-\d+-(\d+)/.exec(position)?.[1]));

describe("a binlog archive across a failover that lost an archived transaction", () => {
  it("reports ArchiveDiverged naming the lost transaction, and archives nothing of the new primary's history after it", async () => {
    const folder = `${prefix}/diverged`;
    const primary = await server("old-primary", 41);
    const replica = await server("new-primary", 43, "--log-slave-updates");
    const onReplica = await connect(replica);
    await onReplica.query("CHANGE MASTER TO master_host = ?, master_port = ?, master_user = ?, master_password = ?, master_use_gtid = slave_pos", [
      primary.host, primary.port, primary.user, primary.password,
    ]);
    await onReplica.query("START SLAVE");
    let target: MariaDBEndpoint = primary;
    const archiving = startArchiver(env.s3, `${prefix}/diverged`, () => target, { serverId: 4_000_000_321, maxFileAgeMs: 500 });
    const { archiver, reports } = archiving;
    try {
      await waitFor("the stream to start", () => reports.find((p) => p.streaming), 30_000);
      const onPrimary = await connect(primary);
      await onPrimary.query("CREATE DATABASE app");
      await onPrimary.query("CREATE TABLE app.t (id INT PRIMARY KEY) ENGINE=InnoDB");
      for (let i = 1; i <= 5; i++) await onPrimary.query("INSERT INTO app.t VALUES (?)", [i]);
      const replicated = await binlogPosition(primary);
      await waitFor("the replica and the archive to hold it", async () => {
        const [rows] = await onReplica.query<mysql.RowDataPacket[]>("SELECT @@gtid_slave_pos AS p");
        return rows[0]?.p === replicated && archiver.progress().archivedPosition === replicated ? true : undefined;
      }, 30_000, 100);
      // The replica stops receiving (a slow network, a replica behind): the primary's next commit reaches
      // only the archiver, which streams as any replica does, and the primary is lost then.
      await onReplica.query("STOP SLAVE");
      await onPrimary.query("INSERT INTO app.t VALUES (100)");
      const lost = await binlogPosition(primary);
      await waitFor("the archive to hold the transaction no replica has", () => (archiver.progress().archivedPosition === lost ? true : undefined), 30_000, 100);
      await onPrimary.end().catch(() => undefined);
      process.kill(primary.pid, "SIGKILL");
      // The failover: the replica is promoted and takes writes, numbering on from what it has.
      await onReplica.query("RESET SLAVE ALL");
      target = replica;
      for (let i = 200; i <= 204; i++) await onReplica.query("INSERT INTO app.t VALUES (?)", [i]);
      const failure = await waitFor("the divergence reported", () => reports.find((p) => p.error && p.error.reason !== "ConnectionLost")?.error, 30_000, 100);
      expect(failure.reason).toBe("ArchiveDiverged");
      expect(failure.message).toMatch(
        new RegExp(`^the archive holds transactions that server 43 at ${replica.host}:${replica.port}, the server to stream from now, does not have: ${lost} \\(its binary log ends at 0-43-${seqOf(lost) + 4} in that domain\\)\\. A failover lost them`),
      );
      // It stays so (retried, never streamed past): the new primary's transactions are not numbered after one it never had.
      await sleep(3_000);
      expect(archiver.progress()).toMatchObject({ archivedPosition: lost, error: { reason: "ArchiveDiverged" } });
      const contents = await readArchive(s3, env.s3.bucket, folder);
      expect(contents.index.position).toBe(lost);
      expect(contents.gtids.filter((g) => g.startsWith("0-43-"))).toEqual([]);
      expect(breaksInChain(contents.index)).toEqual([]);
    } finally {
      await archiving.stop();
      await onReplica.end();
    }
  }, 180_000);
});
