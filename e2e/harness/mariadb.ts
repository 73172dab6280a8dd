// MariaDB for the tests: the machine's server on 127.0.0.1:3306 when it
// answers, otherwise one of our own; plus throw-away `mariadbd` instances on
// free ports for tests that need several servers (replication, clusters).
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import mysql from "mysql2/promise";
import { freePort } from "./ports.ts";
import { EnvironmentError, logTail, startProcess, stopPid, waitUntilReady, type RunningProcess } from "./process.ts";

const run = promisify(execFile);

export interface MariaDBEndpoint {
  host: string;
  port: number;
  user: string;
  password: string;
  /** Present when the harness started this server; undefined for the machine's own. */
  pid?: number;
  logFile?: string;
}

/** True when root can log in and run a query. */
export async function canConnect(ep: Pick<MariaDBEndpoint, "host" | "port" | "user" | "password">): Promise<boolean> {
  try {
    const conn = await mysql.createConnection({ ...ep, connectTimeout: 2_000 });
    await conn.query("SELECT 1");
    await conn.end();
    return true;
  } catch {
    return false;
  }
}

export interface MariaDBInstanceOptions {
  /** Folder for the data directory, socket and log. */
  dir: string;
  detached?: boolean;
  /** Extra server options, e.g. ["--server-id=2", "--log-bin=mysql-bin"]. */
  args?: string[];
  /** Root password to set; defaults to empty. */
  rootPassword?: string;
  /** An option file read instead of none (as a container reads its my.cnf); command-line options still win. */
  defaultsFile?: string;
}

/**
 * Initializes a fresh data directory and starts `mariadbd` on a free
 * loopback port. Root can then log in over TCP from 127.0.0.1.
 */
export async function startMariaDB(opts: MariaDBInstanceOptions): Promise<MariaDBEndpoint & { pid: number }> {
  const datadir = join(opts.dir, "data");
  // A Unix socket path holds at most 107 bytes: a deep folder gets its socket in a short temporary one.
  const socket = join(opts.dir, "mysqld.sock").length > 100 ? join(mkdtempSync(join(tmpdir(), "sw-")), "mysqld.sock") : join(opts.dir, "mysqld.sock");
  const logFile = join(opts.dir, "mariadbd.log");
  // Temporary tables and sort files stay in the server's own folder: the machine's /tmp is shared with
  // every other MariaDB here, and a bootstrap whose temporary table vanished from it failed a CI run.
  const tmp = join(opts.dir, "tmp");
  mkdirSync(tmp, { recursive: true });
  // A data directory that was initialized before is started as it is (a restarted server keeps its data).
  // The marker is written only after install-db succeeded: a half-initialized directory starts over.
  const initialized = join(opts.dir, "initialized");
  if (!existsSync(initialized)) {
    rmSync(datadir, { recursive: true, force: true });
    mkdirSync(datadir, { recursive: true });
    try {
      await run("mariadb-install-db", [
        "--no-defaults", `--datadir=${datadir}`, `--tmpdir=${tmp}`, "--auth-root-authentication-method=normal",
        "--skip-test-db", "--user=root",
      ]);
    } catch (err) {
      throw new EnvironmentError(`mariadb-install-db failed for ${datadir}: ${(err as { stderr?: string }).stderr ?? String(err)}`);
    }
    writeFileSync(initialized, "");
  }
  const port = await freePort();
  const proc: RunningProcess = startProcess({
    name: `mariadbd:${port}`,
    command: "mariadbd",
    args: [
      opts.defaultsFile ? `--defaults-file=${opts.defaultsFile}` : "--no-defaults", `--datadir=${datadir}`, `--port=${port}`, "--bind-address=127.0.0.1",
      `--socket=${socket}`, `--pid-file=${join(opts.dir, "mariadbd.pid")}`, `--log-error=${logFile}`, `--tmpdir=${tmp}`,
      "--user=root", "--innodb-buffer-pool-size=64M", "--innodb-log-file-size=48M",
      "--skip-name-resolve", ...(opts.args ?? []),
    ],
    logFile: join(opts.dir, "stdout.log"),
    detached: opts.detached ?? false,
  });
  // All or nothing: a server left running after a failed start would hold its data directory's
  // locks and socket, and the next start on the same data (a retry, a restarted pod) would fail or,
  // worse, reach the old server through the socket while its own never listens.
  try {
    return await setUp(proc, socket, logFile, port, opts.rootPassword ?? "");
  } catch (err) {
    await stopPid(proc.pid, 30_000);
    throw err;
  }
}

/** Waits for a just-started server and gives root a TCP login from 127.0.0.1. */
async function setUp(proc: RunningProcess, socket: string, logFile: string, port: number, password: string): Promise<MariaDBEndpoint & { pid: number }> {
  const viaSocket = async () => {
    const conn = await mysql.createConnection({ socketPath: socket, user: "root", password: "" });
    return conn;
  };
  await waitUntilReady({ ...proc, logFile }, async () => {
    const conn = await viaSocket();
    await conn.end();
    return true;
  }, 60_000);
  // install-db creates root@localhost only; tests connect over TCP from 127.0.0.1.
  const conn = await viaSocket();
  try {
    // Set-up is not data: kept out of the binary log, as the official image's entrypoint does, so replicas never receive it.
    await conn.query("SET SESSION sql_log_bin = 0");
    await conn.query("CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY ?", [password]);
    // install-db may have made the account already (without a password): set it either way.
    await conn.query("ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY ?", [password]);
    await conn.query("GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION");
    await conn.end();
  } catch (err) {
    conn.destroy();
    throw err;
  }
  return { host: "127.0.0.1", port, user: "root", password, pid: proc.pid, logFile };
}

/** Stops a harness-started server; the machine's own server is left alone. */
export async function stopMariaDB(ep: MariaDBEndpoint): Promise<void> {
  if (ep.pid !== undefined) await stopPid(ep.pid, 30_000);
}

/**
 * The main MariaDB of the environment: 127.0.0.1:3306 (root, empty password)
 * when reachable, otherwise — or when `own` — a server of our own under `dir`.
 */
export async function ensureMariaDB(dir: string, detached: boolean, own = false): Promise<MariaDBEndpoint> {
  const machine = { host: "127.0.0.1", port: 3306, user: "root", password: "" };
  if (!own && (await canConnect(machine))) return machine;
  try {
    return await startMariaDB({ dir, detached });
  } catch (err) {
    const log = join(dir, "mariadbd.log");
    throw new EnvironmentError(`no MariaDB on 127.0.0.1:3306 and starting one failed: ${(err as Error).message}\n${logTail(log)}`);
  }
}
