// A point-in-time replay of more than 100 MB of archived binlog within the chart's memory limit:
// the replay runs alone in a process with the chart's NODE_OPTIONS, in a memory cgroup of the
// chart's limit (as in a pod), and must use well under it. It used to read each file whole and
// parse it into an array of all its events: 229 MiB charged for 94 MB of binlog, growing with
// the archive's rotation size; docs/performance.md, finding 7.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot, startMariaDB, stopMariaDB, type MariaDBEndpoint } from "../../harness/index.ts";
import { removeChartScratch } from "../../support/chart.ts";
import { chartMemoryDefaults } from "../../support/chart-memory.ts";
import { createMemoryCgroup, memoryCgroupUnavailable, type MemoryCgroup } from "../../support/memory-cgroup.ts";
import { selectValue } from "../../support/select-value.ts";

const unavailable = memoryCgroupUnavailable();
if (unavailable) console.warn(`point-in-time replay memory test skipped: ${unavailable}`);

/** Single-row transactions (half INSERTs, half UPDATEs, as the point-in-time benchmark writes): ~113 MB of ROW binlog. */
const TRANSACTIONS = 300_000;
const WRITERS = 4;
const MiB = 2 ** 20;
const TABLE = "CREATE TABLE orders (id INT PRIMARY KEY, customer VARCHAR(64), qty INT, at DATETIME, price DECIMAL(10,2), note VARCHAR(255))";

let dir: string;
let source: (MariaDBEndpoint & { pid: number }) | undefined;
let target: (MariaDBEndpoint & { pid: number }) | undefined;
let cgroup: MemoryCgroup | undefined;

const connect = (ep: MariaDBEndpoint, database?: string) =>
  mysql.createConnection({ host: ep.host, port: ep.port, user: ep.user, password: ep.password, multipleStatements: true, ...(database ? { database } : {}) });
const login = (ep: MariaDBEndpoint) => ({ host: ep.host, port: ep.port, user: ep.user, password: ep.password });

const value = (ep: MariaDBEndpoint, sql: string): Promise<string> => selectValue(() => connect(ep), sql);

/** WRITERS clients, 100 autocommitted statements per round trip. */
async function write(ep: MariaDBEndpoint): Promise<void> {
  const per = TRANSACTIONS / WRITERS;
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      const c = await connect(ep, "m");
      try {
        for (let k = 0; k < per; k += 100) {
          const statements: string[] = [];
          for (let j = k; j < k + 100; j++) {
            const id = w * per + j;
            statements.push(j % 2 === 0 ? `INSERT INTO orders VALUES (${id}, 'bench-writer', ${j % 7}, NOW(), ${(j % 1000) / 10}, 'written during the point-in-time replay memory test')` : `UPDATE orders SET qty = qty + 1 WHERE id = ${id - 1}`);
          }
          await c.query(statements.join(";"));
        }
      } finally {
        await c.end();
      }
    }),
  );
}

beforeAll(async () => {
  if (unavailable) return;
  dir = mkdtempSync(join(tmpdir(), "sw-pitr-memory-"));
  const fast = ["--binlog-format=ROW", "--sync-binlog=0", "--innodb-flush-log-at-trx-commit=0"];
  [source, target] = await Promise.all([
    startMariaDB({ dir: join(dir, "source"), args: ["--log-bin=mysql-bin", "--server-id=1", "--max-binlog-size=20M", ...fast] }),
    startMariaDB({ dir: join(dir, "target"), args: ["--server-id=2", ...fast] }),
  ]);
  for (const ep of [source, target]) {
    const c = await connect(ep);
    await c.query(`CREATE DATABASE m; USE m; ${TABLE}`);
    await c.end();
  }
}, 120_000);

afterAll(async () => {
  for (const ep of [source, target]) if (ep) await stopMariaDB(ep).catch(() => undefined);
  await cgroup?.remove().catch(() => undefined);
  if (dir) rmSync(dir, { recursive: true, force: true });
  removeChartScratch();
});

describe.skipIf(unavailable !== undefined)("point-in-time replay within the chart's memory limit", () => {
  it("replays more than 100 MB of binlog using well under the limit", async () => {
    const src = source as MariaDBEndpoint;
    const after = await value(src, "SELECT @@gtid_binlog_pos");
    await write(src);
    const until = await value(src, "SELECT @@gtid_binlog_pos");
    await value(src, "FLUSH BINARY LOGS");
    const data = join(dir, "source", "data");
    const files = readdirSync(data).filter((f) => /^mysql-bin\.\d+$/.test(f)).sort().map((f) => join(data, f));
    const bytes = files.reduce((n, f) => n + statSync(f).size, 0);
    expect(bytes).toBeGreaterThan(100e6);

    const chart = await chartMemoryDefaults();
    cgroup = createMemoryCgroup(chart.limitBytes);
    const run = cgroup.wrap(process.execPath, [join(repoRoot, "e2e", "support", "binlog-replay-process.ts")]);
    const job = { target: login(target as MariaDBEndpoint), files, after, untilGtid: until };
    const child = spawn(run.command, run.args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NODE_OPTIONS: chart.nodeOptions, REPLAY_JOB: JSON.stringify(job) } });
    let out = "";
    let errors = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (errors += d.toString()));
    const exit = await new Promise<string>((resolve) => child.once("exit", (code, signal) => resolve(signal ?? `code ${code}`)));
    const usage = cgroup.usage();
    const result = out ? (JSON.parse(out) as { transactions: number; seconds: number; peakRssBytes: number }) : undefined;
    console.info(`replay of ${(bytes / 1e6).toFixed(0)} MB / ${TRANSACTIONS} transactions in a ${chart.limit} cgroup (${chart.nodeOptions}): ${result?.seconds ?? "?"} s, cgroup peak ${(usage.peakBytes / MiB).toFixed(0)} MiB, process peak RSS ${((result?.peakRssBytes ?? 0) / MiB).toFixed(0)} MiB`);
    expect(exit, errors).toBe("code 0");
    expect(usage.oomKills).toBe(0);
    expect(result?.transactions).toBe(TRANSACTIONS);
    expect(await value(target as MariaDBEndpoint, "SELECT COUNT(*) FROM m.orders")).toBe(String(TRANSACTIONS / 2));
    // Well under the limit: the process's start plus one read, a transaction and the young generation's garbage.
    expect(usage.peakBytes).toBeLessThan(0.3 * chart.limitBytes);
  }, 180_000);
});
