// Reading a binlog archive back from S3 the way a point-in-time restore would:
// the index, then every file it lists, each checked against the index (size,
// SHA-256, first and last GTID, count) and read with the operator's own event
// reader. What the archiving suites assert on: the files chain, and every
// GTID appears exactly once, one by one in each domain.
import { GetObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { messageOf } from "@stateward/core";
import mysql from "mysql2/promise";
import {
  BackupStore,
  BinlogArchiver,
  TransactionAssembler,
  archiveStorage,
  formatGtid,
  parseArchiveIndex,
  parsePosition,
  readBinlogFile,
  type ArchiveIndex,
  type ArchiveProgress,
  MySQLBinlogArchiveKind,
  type MySQLBinlogArchive,
} from "@stateward/operator-mysql-backup";
import type { MariaDBEndpoint, S3Endpoint } from "../harness/index.ts";

export interface ArchiveContents {
  index: ArchiveIndex;
  /** GTIDs of every archived transaction, in file order. */
  gtids: string[];
  /** Each file's bytes, in index order. */
  files: Buffer[];
}

/** A server's @@gtid_binlog_pos: what an archive of it holds once caught up. */
export async function binlogPosition(ep: Pick<MariaDBEndpoint, "host" | "port" | "user" | "password">): Promise<string> {
  const conn = await mysql.createConnection({ host: ep.host, port: ep.port, user: ep.user, password: ep.password });
  try {
    const [rows] = await conn.query<mysql.RowDataPacket[]>("SELECT @@gtid_binlog_pos AS p");
    return String(rows[0]?.p ?? "");
  } finally {
    await conn.end();
  }
}

/** A MySQLBinlogArchive of `instance` into the environment's bucket under `prefix` (credentials from the Secret "s3-creds"), rotating every 5 s. */
export function archiveManifest(s3: S3Endpoint, ns: string, name: string, instance: string, prefix: string): MySQLBinlogArchive {
  return {
    apiVersion: MySQLBinlogArchiveKind.apiVersion, kind: MySQLBinlogArchiveKind.kind, metadata: { name, namespace: ns },
    spec: {
      instanceRef: { name: instance },
      rotation: { maxFileAgeSeconds: 5 },
      storage: { s3: { bucket: s3.bucket, prefix, endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentialsSecretRef: { name: "s3-creds" } } },
    },
  };
}

/**
 * The archiver on `prefix` of the environment's bucket, as the operator runs it but with short
 * rotation, check and retry times, streaming from whatever `target()` names at each connection.
 */
export function startArchiver(s3: S3Endpoint, prefix: string, target: () => MariaDBEndpoint, { serverId = 4_000_000_123, maxFileAgeMs = 1_500 } = {}) {
  const controller = new AbortController();
  const reports: ArchiveProgress[] = [];
  const store = new BackupStore({
    endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, bucket: s3.bucket, prefix,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
  const archiver = new BinlogArchiver({
    storage: archiveStorage(store),
    target: () => {
      const { host, port, user, password } = target();
      return Promise.resolve({ host, port, user, password });
    },
    serverId,
    rotation: { maxFileAgeMs },
    heartbeatMs: 1_000,
    primaryCheckMs: 500,
    retry: { initialMs: 200, maxMs: 2_000 },
    signal: controller.signal,
    onProgress: (p) => reports.push(p),
  });
  const done = archiver.run();
  return {
    archiver,
    reports,
    async stop(): Promise<void> {
      controller.abort();
      await done;
      store.destroy();
    },
  };
}

export async function getObject(s3: S3Client, bucket: string, key: string): Promise<Buffer> {
  const res = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return Buffer.from(await (res.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
}

/**
 * The archive's index.json (in `folder`, no trailing slash), which a running archive rewrites as it goes. A
 * read racing a rewrite once got, from the test S3 server, a body and a checksum header of different
 * versions ("Checksum mismatch … x-amz-checksum-crc32", refused by the SDK): such a read is made again, a
 * few times. (S3 itself replaces an object atomically.)
 */
export async function readArchiveIndex(s3: S3Client, bucket: string, folder: string): Promise<ArchiveIndex> {
  for (let attempt = 1; ; attempt++) {
    try {
      return parseArchiveIndex(await getObject(s3, bucket, `${folder}/index.json`));
    } catch (err) {
      if (attempt >= 5 || !messageOf(err).includes("Checksum mismatch")) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** The archive in `folder` (no trailing slash); throws when a file does not match what the index says of it. */
export async function readArchive(s3: S3Client, bucket: string, folder: string): Promise<ArchiveContents> {
  const index = await readArchiveIndex(s3, bucket, folder);
  const gtids: string[] = [];
  const files: Buffer[] = [];
  for (const f of index.files) {
    const bytes = await getObject(s3, bucket, `${folder}/${f.key}`);
    const sha = createHash("sha256").update(bytes).digest("hex");
    if (bytes.length !== f.size || sha !== f.sha256) throw new Error(`${f.key}: ${bytes.length} bytes, SHA-256 ${sha}; the index says ${f.size}, ${f.sha256}`);
    const assembler = new TransactionAssembler();
    const inFile = readBinlogFile(bytes).flatMap((e) => {
      const item = assembler.push(e);
      return item.kind === "transaction" ? [formatGtid(item.transaction.gtid)] : [];
    });
    if (inFile[0] !== f.firstGtid || inFile.at(-1) !== f.lastGtid || inFile.length !== f.transactions) {
      throw new Error(`${f.key} holds ${inFile.length} transactions ${inFile[0]} … ${inFile.at(-1)}; the index says ${f.transactions}, ${f.firstGtid} … ${f.lastGtid}`);
    }
    gtids.push(...inFile);
    files.push(bytes);
  }
  return { index, gtids, files };
}

/** Files whose startPosition is not the previous file's endPosition (the index's startPosition for the first): none in a whole archive. */
export function breaksInChain(index: ArchiveIndex): string[] {
  const breaks: string[] = [];
  let previous = index.startPosition;
  for (const f of index.files) {
    if (f.startPosition !== previous) breaks.push(`${f.key} starts at "${f.startPosition}", the archive before it ends at "${previous}"`);
    previous = f.endPosition;
  }
  return breaks;
}

/**
 * What is wrong with `gtids` as the transactions after `start` up to `end`: each domain's sequence
 * numbers one by one, none twice, ending at `end`. Empty when nothing is.
 */
export function sequenceFaults(gtids: string[], start: string, end: string): string[] {
  const faults: string[] = [];
  const seen = new Set<string>();
  const last = new Map([...parsePosition(start).values()].map((g) => [g.domain, g.seq]));
  for (const text of gtids) {
    const [g] = parsePosition(text).values();
    if (!g) continue;
    if (seen.has(text)) faults.push(`${text} archived twice`);
    seen.add(text);
    const expected = (last.get(g.domain) ?? 0n) + 1n;
    if (g.seq !== expected) faults.push(`${text} after sequence number ${expected - 1n} of domain ${g.domain}`);
    last.set(g.domain, g.seq);
  }
  for (const g of parsePosition(end).values()) {
    if (last.get(g.domain) !== g.seq) faults.push(`domain ${g.domain} ends at ${last.get(g.domain) ?? 0n}, not at ${formatGtid(g)}`);
  }
  return faults;
}
