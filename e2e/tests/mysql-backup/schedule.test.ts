// MySQLBackupSchedule through Kubernetes: an every-few-seconds schedule
// produces one backup per due time, retention keeps exactly the expected
// set in the API server and the bucket — never a backup a restore has yet to
// finish with — suspend stops it, and resuming does not create a burst for the
// suspended period. A due time whose status write failed keeps its backup:
// Replace does not replace it with itself. Deleting a schedule keeps its backups.
import { ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";
import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";
import { Manager, builtin, captureLogs, type KubeObject } from "@stateward/core";
import { MySQLInstanceKind } from "@stateward/mysql";
import { databaseUserOperator } from "@stateward/operator-database-user";
import {
  MySQLBackupKind,
  MySQLBackupScheduleKind,
  MySQLRestoreKind,
  SCHEDULE_LABEL,
  backupNameFor,
  createMySQLBackupOperator,
  type MySQLBackup,
  type MySQLBackupSchedule,
  type MySQLRestore,
} from "@stateward/operator-mysql-backup";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { KubeConfig } from "@kubernetes/client-node";
import { TcpProxy, s3Client } from "../../harness/index.ts";
import { eventsAbout } from "../../support/events.ts";
import { deleteNamespace, freshNamespace, kubeConfigFrom, testClient, waitGone } from "../../support/kube.ts";
import { refuseWrites, statusFieldUnchanged } from "../../support/refused-writes.ts";
import { waitFor } from "../../support/wait.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const BK = MySQLBackupKind.resource;
const SC = MySQLBackupScheduleKind.resource;
const RS = MySQLRestoreKind.resource;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const suffix = randomBytes(3).toString("hex");
const db = `bksched_${suffix}`;
const root = { host: env.mysql.host, port: env.mysql.port, user: env.mysql.user, password: env.mysql.password };
let ns: string;
let manager: Manager;
let s3: S3Client;

async function backupsOf(name: string): Promise<MySQLBackup[]> {
  return (await client.list<MySQLBackup>(BK, { namespace: ns, labelSelector: `${SCHEDULE_LABEL}=${name}` })).items;
}

async function folders(): Promise<Set<string>> {
  const out = await s3.send(new ListObjectsV2Command({ Bucket: env.s3.bucket, Prefix: `sched-${suffix}/${ns}/` }));
  return new Set((out.Contents ?? []).map((o) => (o.Key ?? "").split("/")[2] ?? ""));
}

beforeAll(async () => {
  s3 = s3Client(env.s3);
  ns = await freshNamespace(client, "sched");
  manager = new Manager({ kubeConfig: kubeConfigFrom(env.kubeconfig), namespaces: [ns], logger: captureLogs().logger, gracefulShutdownMs: 10_000 })
    .load(databaseUserOperator, createMySQLBackupOperator());
  await manager.start();
  const conn = await mysql.createConnection(root);
  await conn.query(`CREATE DATABASE ${db}`);
  await conn.query(`CREATE TABLE ${db}.t (id INT PRIMARY KEY, v VARCHAR(20))`);
  await conn.query(`INSERT INTO ${db}.t VALUES (1, 'a'), (2, 'b')`);
  await conn.end();
  await client.create(builtin.secret, { metadata: { name: "mysql-admin", namespace: ns }, stringData: { username: root.user, password: root.password } } as KubeObject);
  await client.create(builtin.secret, { metadata: { name: "s3-creds", namespace: ns }, stringData: { AWS_ACCESS_KEY_ID: env.s3.accessKeyId, AWS_SECRET_ACCESS_KEY: env.s3.secretAccessKey } } as KubeObject);
  await client.create(MySQLInstanceKind.resource, {
    apiVersion: MySQLInstanceKind.apiVersion, kind: MySQLInstanceKind.kind, metadata: { name: "db", namespace: ns },
    spec: { host: root.host, port: root.port, adminSecretRef: { name: "mysql-admin" } },
  } as KubeObject);
}, 120_000);

afterAll(async () => {
  await manager?.stop();
  const conn = await mysql.createConnection(root);
  await conn.query(`DROP DATABASE IF EXISTS ${db}`);
  await conn.end();
  s3?.destroy();
  await deleteNamespace(client, ns);
});

describe("MySQLBackupSchedule", () => {
  it("creates one backup per due time, keeps the last 2 in the API and the bucket, stops when suspended, resumes without a burst", async () => {
    await client.create(SC, {
      apiVersion: MySQLBackupScheduleKind.apiVersion, kind: MySQLBackupScheduleKind.kind, metadata: { name: "every3s", namespace: ns },
      spec: {
        schedule: "*/3 * * * * *",
        retention: { keepLast: 2 },
        backupTemplate: {
          instanceRef: { name: "db" }, databases: [db], deletionPolicy: "Delete",
          storage: { s3: { bucket: env.s3.bucket, prefix: `sched-${suffix}`, endpoint: env.s3.endpoint, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } },
        },
      },
    });

    // Backups appear on time, each named after its due time (a multiple of 3 s).
    const created = new Set<string>();
    await waitFor("4 scheduled backups", async () => {
      for (const b of await backupsOf("every3s")) created.add(b.metadata.name ?? "");
      return created.size >= 4 ? true : undefined;
    }, 40_000, 200);
    for (const name of created) expect(Number(name.slice(-2)) % 3).toBe(0);

    // Retention: at most 2 Completed remain, in the API server and in the bucket.
    const settled = await waitFor("retention applied", async () => {
      const list = await backupsOf("every3s");
      const completed = list.filter((b) => b.status?.phase === "Completed");
      return completed.length === 2 ? completed : undefined;
    }, 30_000, 200);
    const kept = new Set(settled.map((b) => b.metadata.name ?? ""));
    const inBucket = await waitFor("bucket pruned", async () => {
      const f = await folders();
      const completedNow = new Set((await backupsOf("every3s")).map((b) => b.metadata.name ?? ""));
      return [...f].every((x) => completedNow.has(x)) ? f : undefined;
    }, 30_000, 250);
    expect([...kept].some((k) => inBucket.has(k))).toBe(true);

    // Suspend: nothing new for 7 s.
    await client.patch(SC, ns, "every3s", { spec: { suspend: true } });
    await new Promise((r) => setTimeout(r, 1_500));
    const before = new Set((await backupsOf("every3s")).map((b) => b.metadata.name ?? ""));
    const sched = await client.get<MySQLBackupSchedule>(SC, ns, "every3s");
    await new Promise((r) => setTimeout(r, 7_000));
    const during = (await backupsOf("every3s")).map((b) => b.metadata.name ?? "").filter((n) => !before.has(n));
    expect(during).toEqual([]);
    expect(sched.status?.conditions?.find((c) => c.type === "Ready")?.reason).toBe("Suspended");

    // Resume: at most one backup for the suspended period (the latest due time), then the regular rhythm.
    const resumedAt = Date.now();
    await client.patch(SC, ns, "every3s", { spec: { suspend: false } });
    await new Promise((r) => setTimeout(r, 1_000));
    // Counted by due time (in the name, UTC): a regular due time right after resuming is no burst.
    const dueTime = (name: string) => {
      const m = /-(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec(name);
      return m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])) : Number.NaN;
    };
    const burst = (await client.list<MySQLBackup>(BK, { namespace: ns, labelSelector: `${SCHEDULE_LABEL}=every3s` })).items
      .map((b) => b.metadata.name ?? "")
      .filter((name) => !before.has(name))
      .filter((name) => dueTime(name) < Math.floor(resumedAt / 1000) * 1000);
    expect(burst.length, `backups for due times in the suspended period: ${burst.join(", ")}`).toBeLessThanOrEqual(1);
  });

  it("keeps a backup a restore has yet to finish with past its retention, and prunes it once the restore is done", async () => {
    const storage = { s3: { bucket: env.s3.bucket, prefix: `sched-${suffix}`, endpoint: env.s3.endpoint, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } };
    const template = { instanceRef: { name: "db" }, databases: [db], deletionPolicy: "Delete" as const, storage };
    // The oldest backup of the schedule (made by hand, labelled as its own), and a restore of it that has not
    // finished: it waits for an instance that does not exist yet.
    await client.create(BK, { apiVersion: MySQLBackupKind.apiVersion, kind: MySQLBackupKind.kind, metadata: { name: "oldest", namespace: ns, labels: { [SCHEDULE_LABEL]: "keep1" } }, spec: template });
    await waitFor("oldest Completed", async () => ((await client.get<MySQLBackup>(BK, ns, "oldest")).status?.phase === "Completed" ? true : undefined), 30_000, 200);
    expect(await folders()).toContain("oldest");
    await client.create(RS, { apiVersion: MySQLRestoreKind.apiVersion, kind: MySQLRestoreKind.kind, metadata: { name: "needs-oldest", namespace: ns }, spec: { instanceRef: { name: "not-yet" }, source: { backupRef: { name: "oldest" } } } });
    await waitFor("the restore pending", async () => ((await client.get<MySQLRestore>(RS, ns, "needs-oldest")).status?.phase === "Pending" ? true : undefined));

    await client.create(SC, {
      apiVersion: MySQLBackupScheduleKind.apiVersion, kind: MySQLBackupScheduleKind.kind, metadata: { name: "keep1", namespace: ns },
      spec: { schedule: "*/3 * * * * *", retention: { keepLast: 1 }, backupTemplate: template },
    });
    try {
      // Retention runs (a scheduled backup is pruned too) while the restore's backup stays, in the API and the bucket.
      const events = () => eventsAbout(client, ns, { name: "keep1" });
      await waitFor("a scheduled backup pruned", async () => ((await events()).some((e) => e.reason === "Pruned" && !e.note?.includes("oldest")) ? true : undefined), 40_000, 250);
      expect((await client.get<MySQLBackup>(BK, ns, "oldest")).status?.phase).toBe("Completed");
      expect(await folders()).toContain("oldest");
      expect((await events()).find((e) => e.reason === "PruneDeferred")?.note).toBe("Kept MySQLBackup oldest past its retention for now: MySQLRestore needs-oldest has not finished with it");

      // The restore gone, the backup goes at the next pass, with its stored objects.
      await client.delete(RS, ns, "needs-oldest");
      await waitGone(client, BK, ns, "oldest", 30_000);
      await waitFor("oldest's folder deleted", async () => (!(await folders()).has("oldest") ? true : undefined), 30_000, 250);
    } finally {
      await client.delete(SC, ns, "keep1");
    }
  });
});

describe("bad schedules", () => {
  const template = {
    instanceRef: { name: "db" }, databases: [db],
    storage: { s3: { bucket: env.s3.bucket, endpoint: env.s3.endpoint, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } },
  };
  const schedule = (name: string, spec: Record<string, unknown>) =>
    ({ apiVersion: MySQLBackupScheduleKind.apiVersion, kind: MySQLBackupScheduleKind.kind, metadata: { name, namespace: ns }, spec: { backupTemplate: template, ...spec } }) as MySQLBackupSchedule;

  it("refuses what the schema can see at apply time, and reports the rest as Ready=False InvalidSchedule", async () => {
    await expect(client.create(SC, schedule("one-word", { schedule: "daily" }))).rejects.toThrow(/spec\.schedule/);
    for (const [name, spec, why] of [
      ["bad-zone", { schedule: "0 3 * * *", timeZone: "Mars/Olympus" }, /unknown time zone "Mars\/Olympus"/],
      ["bad-minute", { schedule: "61 * * * *" }, /invalid cron expression "61 \* \* \* \*"/],
    ] as const) {
      await client.create(SC, schedule(name, spec));
      const got = await waitFor(`${name} InvalidSchedule`, async () => {
        const o = await client.get<MySQLBackupSchedule>(SC, ns, name);
        const c = o.status?.conditions?.find((x) => x.type === "Ready");
        return c?.reason === "InvalidSchedule" ? c : undefined;
      });
      expect(got.status).toBe("False");
      expect(got.message).toMatch(why);
      expect(await backupsOf(name)).toEqual([]);
    }
  });

  it("refuses a name longer than 63 characters at apply time (each backup carries it in a label), and schedules under one of 63", async () => {
    const tooLong = `long-${"x".repeat(59)}`;
    await expect(client.create(SC, schedule(tooLong, { schedule: "*/3 * * * * *" }))).rejects.toThrow(/metadata\.name is longer than 63 characters, the longest label value/);
    const longest = tooLong.slice(0, 63);
    await client.create(SC, schedule(longest, { schedule: "*/3 * * * * *" }));
    try {
      const made = await waitFor(`a backup of ${longest}`, async () => (await backupsOf(longest))[0], 30_000, 200);
      expect(made.metadata.name).toMatch(new RegExp(`^${longest}-\\d{14}$`));
    } finally {
      // Nothing of it left running for the tests after this one.
      await client.patch(SC, ns, longest, { spec: { suspend: true } });
      await waitFor(`${longest}'s backups finished`, async () => ((await backupsOf(longest)).every((b) => b.status?.phase === "Completed" || b.status?.phase === "Failed") ? true : undefined), 30_000, 200);
      await client.delete(SC, ns, longest);
    }
  });
});

describe("concurrency policies, with a deliberately slow backup", () => {
  it("Forbid skips due times while a backup runs, Allow runs them alongside, Replace deletes the running ones first", async () => {
    // A table lock held by the test makes each backup wait for its global read lock: Running for as long as we like.
    const holder = await mysql.createConnection(root);
    await holder.query(`LOCK TABLES ${db}.t WRITE`);
    const name = "slow";
    const backups = async () => (await backupsOf(name)).filter((x) => !x.metadata.deletionTimestamp);
    try {
      await client.create(SC, {
        apiVersion: MySQLBackupScheduleKind.apiVersion, kind: MySQLBackupScheduleKind.kind, metadata: { name, namespace: ns },
        spec: {
          schedule: "*/3 * * * * *", concurrencyPolicy: "Forbid",
          backupTemplate: {
            instanceRef: { name: "db" }, databases: [db],
            storage: { s3: { bucket: env.s3.bucket, prefix: `sched-${suffix}`, endpoint: env.s3.endpoint, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } },
          },
        },
      });
      const first = await waitFor("the first backup Running", async () => (await backups()).find((x) => x.status?.phase === "Running"), 30_000, 200);
      await new Promise((r) => setTimeout(r, 7_000));
      expect((await backups()).map((x) => x.metadata.name)).toEqual([first.metadata.name]);
      expect((await eventsAbout(client, ns, { name })).some((e) => e.reason === "SkippedConcurrent")).toBe(true);

      await client.patch(SC, ns, name, { spec: { concurrencyPolicy: "Allow" } });
      await waitFor("a second backup alongside the first", async () => ((await backups()).length >= 2 ? true : undefined), 15_000, 200);
      const running = (await backups()).map((x) => x.metadata.name ?? "");
      expect(running).toContain(first.metadata.name);

      await client.patch(SC, ns, name, { spec: { concurrencyPolicy: "Replace" } });
      await waitFor("the running backups replaced", async () => {
        const now = (await backups()).map((x) => x.metadata.name ?? "");
        return now.length >= 1 && running.every((r) => !now.includes(r)) ? true : undefined;
      }, 20_000, 200);
    } finally {
      await client.patch(SC, ns, name, { spec: { suspend: true } }).catch(() => undefined);
      await holder.query("UNLOCK TABLES");
      await holder.end();
    }
  });
});

describe("deleting a schedule", () => {
  it("keeps its backups and what they stored, also one an earlier release made with an owner reference", async () => {
    const name = "dropped";
    await client.create(SC, {
      apiVersion: MySQLBackupScheduleKind.apiVersion, kind: MySQLBackupScheduleKind.kind, metadata: { name, namespace: ns },
      spec: {
        schedule: "*/3 * * * * *",
        backupTemplate: {
          instanceRef: { name: "db" }, databases: [db], deletionPolicy: "Delete",
          storage: { s3: { bucket: env.s3.bucket, prefix: `sched-${suffix}`, endpoint: env.s3.endpoint, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } },
        },
      },
    });
    const completed = await waitFor("two backups Completed", async () => {
      const done = (await backupsOf(name)).filter((b) => b.status?.phase === "Completed");
      return done.length >= 2 ? done : undefined;
    }, 40_000, 200);
    await client.patch(SC, ns, name, { spec: { suspend: true } });
    const sched = await client.get<MySQLBackupSchedule>(SC, ns, name);
    // As an earlier release created them: owned by the schedule, which the garbage collector follows.
    const older = completed[0]!;
    await client.patch(BK, ns, older.metadata.name ?? "", {
      metadata: { ownerReferences: [{ apiVersion: MySQLBackupScheduleKind.apiVersion, kind: MySQLBackupScheduleKind.kind, name, uid: sched.metadata.uid ?? "", controller: true, blockOwnerDeletion: true }] },
    });
    await client.patch(SC, ns, name, { metadata: { annotations: { touched: "1" } } }); // a pass of the schedule
    await waitFor("the owner reference taken off", async () => {
      const b = await client.get<MySQLBackup>(BK, ns, older.metadata.name ?? "");
      return (b.metadata.ownerReferences ?? []).length === 0 ? true : undefined;
    }, 15_000, 200);
    const kept = new Set((await backupsOf(name)).map((b) => b.metadata.name ?? ""));

    await client.delete(SC, ns, name);
    await waitGone(client, SC, ns, name);
    await sleep(5_000); // the garbage collector's time to act, were they owned
    const after = await backupsOf(name);
    expect(new Set(after.map((b) => b.metadata.name ?? ""))).toEqual(kept);
    expect(after.every((b) => b.metadata.deletionTimestamp === undefined)).toBe(true);
    const stored = await folders();
    for (const b of completed) expect(stored.has(b.metadata.name ?? "")).toBe(true);
  });
});

describe("a due time whose status write failed", () => {
  it("keeps its backup running: Replace does not replace a due time's backup with itself", async () => {
    const name = "unrec";
    const label = "test.stateward.io/status-refused";
    const policy = `schedule-status-refused-${suffix}`;
    const template = { instanceRef: { name: "db" }, databases: [db], storage: { s3: { bucket: env.s3.bucket, prefix: `sched-${suffix}`, endpoint: env.s3.endpoint, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } } };
    // Every status write recording a due time as done is refused, as if the manager stopped right after
    // creating its backup. (Others go through: the wake-up for the first due time is written as before.)
    // In force once a probe schedule in a namespace no manager watches is refused such a status write.
    const probeNs = await freshNamespace(client, "sched-probe");
    await client.create(SC, { apiVersion: MySQLBackupScheduleKind.apiVersion, kind: MySQLBackupScheduleKind.kind, metadata: { name: "probe", namespace: probeNs, labels: { [label]: suffix } }, spec: { schedule: "0 0 1 1 *", suspend: true, backupTemplate: template } });
    const refused = await refuseWrites(
      client,
      { name: policy, resource: "mysqlbackupschedules/status", allowedWhen: statusFieldUnchanged("lastScheduleTime"), message: "status writes refused by the test", label: { key: label, value: suffix } },
      async () => client.updateStatus(SC, { ...(await client.get<MySQLBackupSchedule>(SC, probeNs, "probe")), status: { lastScheduleTime: new Date().toISOString() } }),
    );
    // The backup waits for its global read lock behind the test's table lock: Running until unlocked.
    const holder = await mysql.createConnection(root);
    await holder.query(`LOCK TABLES ${db}.t WRITE`);
    try {
      // Due every 30 s: the failed reconcile is retried many times before the next due time.
      await client.create(SC, {
        apiVersion: MySQLBackupScheduleKind.apiVersion, kind: MySQLBackupScheduleKind.kind, metadata: { name, namespace: ns, labels: { [label]: suffix } },
        spec: { schedule: "*/30 * * * * *", concurrencyPolicy: "Replace", backupTemplate: template },
      });
      const created = await waitFor("the due time's backup created", async () => {
        const said = await eventsAbout(client, ns, { name });
        const event = said.find((e) => e.reason === "BackupCreated");
        if (event) return event;
        throw new Error(`events: ${said.map((e) => `${e.reason}: ${e.note}`).join("; ") || "none"}; backups: ${(await backupsOf(name)).map((b) => b.metadata.name).join(", ") || "none"}`);
      }, 40_000, 200);
      const due = new Date(/for the due time (\S+)$/.exec(created.note ?? "")?.[1] ?? "");
      const first = await client.get<MySQLBackup>(BK, ns, backupNameFor(name, due)).catch(() => undefined);
      expect(first, "the due time's backup, right after it was created").toBeDefined();
      expect(first?.metadata.deletionTimestamp, "the due time's backup, right after it was created: not being deleted").toBeUndefined();
      await sleep(8_000);
      expect(Date.now(), "checked before the next due time").toBeLessThan(due.getTime() + 30_000);
      // Before, each retry saw the due time again and replaced its backup with itself: deleted, and not made again.
      const now = await backupsOf(name);
      expect(now.map((b) => [b.metadata.name, b.metadata.deletionTimestamp !== undefined])).toEqual([[backupNameFor(name, due), false]]);
      expect(now[0]?.metadata.uid, "the same backup, not one made again").toBe(first?.metadata.uid);
    } finally {
      await refused.lift();
      await client.patch(SC, ns, name, { spec: { suspend: true } }).catch(() => undefined);
      await deleteNamespace(client, probeNs).catch(() => undefined);
      await holder.query("UNLOCK TABLES");
      await holder.end();
    }
  }, 120_000);
});

describe("MySQLBackupSchedule with two managers", () => {
  it("creates exactly one backup for the due time at which the leader vanished (never zero, never two)", async () => {
    const lease = { namespace: ns, name: "sched-le", leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 };
    const apiPort = Number(new URL(env.server).port);
    const proxies: TcpProxy[] = [];
    const managers: Manager[] = [];
    const start = async (identity: string) => {
      const proxy = new TcpProxy({ host: "127.0.0.1", port: apiPort });
      proxies.push(proxy);
      const port = await proxy.start();
      // The same identity, through the proxy.
      const exported = JSON.parse(kubeConfigFrom(env.kubeconfig).exportConfig()) as { clusters: { cluster: { server: string } }[] };
      for (const c of exported.clusters) c.cluster.server = `https://127.0.0.1:${port}`;
      const via = new KubeConfig();
      via.loadFromString(JSON.stringify(exported));
      const m = new Manager({ kubeConfig: via, namespaces: [ns], logger: captureLogs().logger, gracefulShutdownMs: 5_000, leaderElection: { ...lease, identity } })
        .load(databaseUserOperator, createMySQLBackupOperator());
      managers.push(m);
      await m.start();
      return { m, proxy };
    };
    // The first manager of this file stops, so only the two contenders run.
    await manager.stop();
    const a = await start("a");
    const b = await start("b");
    try {
      const leader = await waitFor("a leader", () => (a.m.isLeader() ? a : b.m.isLeader() ? b : undefined), 10_000);
      const follower = leader === a ? b : a;
      await client.create(SC, {
        apiVersion: MySQLBackupScheduleKind.apiVersion, kind: MySQLBackupScheduleKind.kind, metadata: { name: "every10s", namespace: ns },
        spec: {
          schedule: "*/10 * * * * *", concurrencyPolicy: "Allow",
          backupTemplate: {
            instanceRef: { name: "db" }, databases: [db], deletionPolicy: "Delete",
            storage: { s3: { bucket: env.s3.bucket, prefix: `sched-${suffix}`, endpoint: env.s3.endpoint, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } },
          },
        },
      });
      // Wait for the first backup, then cut the leader off 300 ms before the next due time.
      await waitFor("first backup", async () => ((await backupsOf("every10s")).length > 0 ? true : undefined), 30_000, 200);
      const nextDue = Math.ceil(Date.now() / 10_000) * 10_000;
      const cutAt = nextDue - 300;
      await new Promise((r) => setTimeout(r, Math.max(0, cutAt - Date.now())));
      leader.proxy.block();
      const dueName = backupNameFor("every10s", new Date(nextDue));
      await waitFor("the follower leads", () => (follower.m.isLeader() ? true : undefined), 15_000, 100);
      const got = await waitFor(`backup ${dueName}`, async () => (await backupsOf("every10s")).find((x) => x.metadata.name === dueName), 15_000, 200);
      expect(got.metadata.annotations?.["stateward.io/scheduled-at"]).toBe(new Date(nextDue).toISOString().replace(/\.\d{3}Z$/, "Z"));
      // One per due time: every name is a distinct multiple of 10 s, with no gap between the first and the last.
      await new Promise((r) => setTimeout(r, 2_000));
      const dues = (await backupsOf("every10s")).map((x) => Date.parse(x.metadata.annotations?.["stateward.io/scheduled-at"] ?? "")).sort((x, y) => x - y);
      expect(new Set(dues).size).toBe(dues.length);
      for (let i = 1; i < dues.length; i++) expect(dues[i]! - dues[i - 1]!).toBe(10_000);
    } finally {
      await client.delete(SC, ns, "every10s").catch(() => undefined);
      for (const m of managers) await m.stop().catch(() => undefined);
      for (const p of proxies) await p.stop();
    }
  });
});
