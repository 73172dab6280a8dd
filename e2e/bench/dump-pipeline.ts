// The reference the mysql-backup benchmark compares MySQLBackup and
// MySQLRestore with: what an operator would script by hand with the stock
// tools, run as processes joined by pipes (no shell):
//
//   backup:  mariadb-dump --single-transaction <db> | gzip -6 | upload to S3
//   restore: download from S3 | gunzip | mariadb <db>
//   binlog:  download the archived binlog files | mariadb-binlog --start-position=<GTID>
//            --stop-position=<GTID> <files> | mariadb (the point-in-time benchmark)
//
// The upload and download use the AWS SDK (@aws-sdk/lib-storage's Upload with
// its defaults: 5 MiB parts, 4 in flight) to the same bucket the operator
// writes to. The password reaches the clients through MYSQL_PWD, never their
// command line (which `ps` shows).
import { GetObjectCommand, HeadObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Transform, type TransformCallback } from "node:stream";
import { pipeline } from "node:stream/promises";
import { cpuSeconds } from "./process-usage.ts";

export interface MariaDBServer {
  host: string;
  port: number;
  user: string;
  password: string;
}

export interface PipelineBackupResult {
  /** Bytes of SQL mariadb-dump wrote. */
  sqlBytes: number;
  /** Bytes of the stored object (gzip's output). */
  storedBytes: number;
  /** From spawning mariadb-dump to the upload's completion. */
  ms: number;
  /** CPU seconds of the pipeline's side: mariadb-dump, gzip, and this process piping and uploading. */
  cpuSeconds: number;
}

export interface PipelineRestoreResult {
  /** Bytes downloaded. */
  storedBytes: number;
  /** From the GET request to the `mariadb` client's exit. */
  ms: number;
  /** CPU seconds of the pipeline's side: gunzip, the mariadb client, and this process downloading. */
  cpuSeconds: number;
}

/** How much of a failed tool's stderr its error shows. */
const stderrTailBytes = 4096;

interface Tool {
  child: ChildProcess;
  /** Resolves when the process exited 0; rejects with its stderr's tail otherwise. */
  done: Promise<void>;
}

function clientEnv(server: MariaDBServer): NodeJS.ProcessEnv {
  const { MYSQL_PWD: _ignored, ...env } = process.env;
  return server.password ? { ...env, MYSQL_PWD: server.password } : env;
}

/** --no-defaults first, so no option file of the machine changes what is measured. */
function clientArgs(server: MariaDBServer): string[] {
  return ["--no-defaults", "--protocol=TCP", `--host=${server.host}`, `--port=${server.port}`, `--user=${server.user}`];
}

function startTool(command: string, args: string[], stdio: StdioOptions, env: NodeJS.ProcessEnv = process.env): Tool {
  const child = spawn(command, args, { stdio, env });
  let stderr = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-stderrTailBytes);
  });
  const done = new Promise<void>((resolve, reject) => {
    child.once("error", (err) => reject(new Error(`${command} could not be started: ${err.message}`)));
    child.once("close", (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${command} exited with ${signal ?? `code ${code}`}${stderr ? `: ${stderr.trim()}` : ""}`));
    });
  });
  // Awaited by the caller; this only keeps an early failure from being "unhandled" meanwhile.
  done.catch(() => undefined);
  return { child, done };
}

/** Counts the bytes passing through. */
class ByteCounter extends Transform {
  bytes = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    callback(null, chunk);
  }
}

function stopAll(tools: Tool[]): void {
  for (const t of tools) if (t.child.exitCode === null && t.child.signalCode === null) t.child.kill("SIGKILL");
}

/** `mariadb-dump --single-transaction <database> | gzip -<level> | upload`, to `bucket/key`. */
export async function pipelineBackup(options: {
  server: MariaDBServer;
  database: string;
  s3: S3Client;
  bucket: string;
  key: string;
  gzipLevel: number;
}): Promise<PipelineBackupResult> {
  const cpu0 = cpuSeconds("self", { children: true });
  const t0 = performance.now();
  const dump = startTool("mariadb-dump", [...clientArgs(options.server), "--single-transaction", options.database], ["ignore", "pipe", "pipe"], clientEnv(options.server));
  const gzip = startTool("gzip", [`-${options.gzipLevel}`], ["pipe", "pipe", "pipe"]);
  const counter = new ByteCounter();
  const { stdout: dumpOut } = dump.child;
  const { stdin: gzipIn, stdout: gzipOut } = gzip.child;
  if (!dumpOut || !gzipIn || !gzipOut) throw new Error("the pipeline's processes have no pipes");
  const upload = new Upload({
    client: options.s3,
    params: { Bucket: options.bucket, Key: options.key, Body: gzipOut, ContentType: "application/gzip" },
  });
  try {
    await Promise.all([pipeline(dumpOut, counter, gzipIn), dump.done, gzip.done, upload.done()]);
  } catch (err) {
    stopAll([dump, gzip]);
    await upload.abort().catch(() => undefined);
    throw err;
  }
  const ms = performance.now() - t0;
  // The children have exited and been waited for, so their CPU time is counted.
  const cpu = cpuSeconds("self", { children: true }) - cpu0;
  const head = await options.s3.send(new HeadObjectCommand({ Bucket: options.bucket, Key: options.key }));
  return { sqlBytes: counter.bytes, storedBytes: head.ContentLength ?? 0, ms, cpuSeconds: cpu };
}

/**
 * `download | gunzip | mariadb <database>`. The database must exist (a dump
 * made without --databases creates none). gunzip's output goes straight
 * into the client's stdin, an OS pipe as a shell would make.
 */
export async function pipelineRestore(options: { server: MariaDBServer; database: string; s3: S3Client; bucket: string; key: string }): Promise<PipelineRestoreResult> {
  const cpu0 = cpuSeconds("self", { children: true });
  const t0 = performance.now();
  const object = await options.s3.send(new GetObjectCommand({ Bucket: options.bucket, Key: options.key }));
  if (!(object.Body instanceof Readable)) throw new Error(`s3://${options.bucket}/${options.key} has no readable body`);
  const body = object.Body;
  const counter = new ByteCounter();
  const gunzip = startTool("gunzip", ["-c"], ["pipe", "pipe", "pipe"]);
  const { stdin: gunzipIn, stdout: gunzipOut } = gunzip.child;
  if (!gunzipIn || !gunzipOut) throw new Error("gunzip has no pipes");
  // In the same tick as gunzip's spawn: Node hands the pipe over before anything was read from it here.
  const client = startTool("mariadb", [...clientArgs(options.server), options.database], [gunzipOut, "ignore", "pipe"], clientEnv(options.server));
  // The client has its own copy of the pipe now; closing ours is what a shell does, and lets gunzip's "close" fire.
  gunzipOut.destroy();
  try {
    await Promise.all([pipeline(body, counter, gunzipIn), gunzip.done, client.done]);
  } catch (err) {
    stopAll([gunzip, client]);
    body.destroy();
    throw err;
  }
  return { storedBytes: counter.bytes, ms: performance.now() - t0, cpuSeconds: cpuSeconds("self", { children: true }) - cpu0 };
}

export interface PipelineBinlogResult {
  /** Bytes of the binlog files downloaded. */
  storedBytes: number;
  /** From the first GET to the `mariadb` client's exit. */
  ms: number;
  /** CPU seconds of the pipeline's side: mariadb-binlog, the mariadb client, and this process downloading. */
  cpuSeconds: number;
}

/**
 * What an operator scripts by hand for the binlog part of a point-in-time
 * recovery: the archived files downloaded (`keys`, in order) into a temporary
 * folder, then `mariadb-binlog --start-position=<after> --stop-position=<until>
 * <files> | mariadb` — every transaction after the GTID state `after` up to
 * and including the GTID `until`, with the source's GTIDs (the target must not
 * run gtid_strict_mode with a later sequence of their domain).
 */
export async function pipelineBinlogReplay(options: { server: MariaDBServer; s3: S3Client; bucket: string; keys: string[]; after: string; until: string }): Promise<PipelineBinlogResult> {
  const cpu0 = cpuSeconds("self", { children: true });
  const t0 = performance.now();
  const dir = mkdtempSync(join(tmpdir(), "bench-binlog-"));
  try {
    let storedBytes = 0;
    const files: string[] = [];
    for (const [i, key] of options.keys.entries()) {
      const object = await options.s3.send(new GetObjectCommand({ Bucket: options.bucket, Key: key }));
      const bytes = Buffer.from((await object.Body?.transformToByteArray()) ?? []);
      const file = join(dir, `binlog.${String(i + 1).padStart(6, "0")}`);
      writeFileSync(file, bytes);
      storedBytes += bytes.length;
      files.push(file);
    }
    const binlog = startTool("mariadb-binlog", [`--start-position=${options.after}`, `--stop-position=${options.until}`, ...files], ["ignore", "pipe", "pipe"]);
    const { stdout } = binlog.child;
    if (!stdout) throw new Error("mariadb-binlog has no stdout");
    const client = startTool("mariadb", clientArgs(options.server), [stdout, "ignore", "pipe"], clientEnv(options.server));
    stdout.destroy();
    try {
      await Promise.all([binlog.done, client.done]);
    } catch (err) {
      stopAll([binlog, client]);
      throw err;
    }
    return { storedBytes, ms: performance.now() - t0, cpuSeconds: cpuSeconds("self", { children: true }) - cpu0 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
