// manifest.json: what a backup contains, in restore order, with each object's
// size and SHA-256. Written last, so its presence means "complete"; read back
// (and validated) before any restore.
import type { Flavor as ServerFlavor } from "@stateward/mysql";
import { BackupError } from "../errors.ts";
import { compressions, type Compression } from "./compression.ts";

export const manifestFileName = "manifest.json";
export const manifestFormat = "stateward.io/mysql-backup";
/** Bumped on any change an older reader would misread. */
export const manifestFormatVersion = 1;

/**
 * Restore phases, in order: `schema` (databases, tables, view placeholders),
 * `data` (rows, one or more objects per table), `post-data` (routines,
 * views, triggers, events — after the data, so triggers do not fire on it).
 */
export type ObjectKind = "schema" | "data" | "post-data";
export const objectKinds: readonly ObjectKind[] = ["schema", "data", "post-data"];

export interface ManifestObject {
  /** Key relative to the backup's folder, so a backup can be copied elsewhere and still restored. */
  key: string;
  kind: ObjectKind;
  database: string;
  /** Data objects: the table. */
  table?: string;
  /** Data objects: 1-based part number within the table. */
  part?: number;
  /** Stored (compressed) bytes. */
  size: number;
  uncompressedSize: number;
  /** Data objects: rows in this object. */
  rows?: number;
  /** Hex SHA-256 of the stored (compressed) bytes. */
  sha256: string;
}

/** The server's replication position at the snapshot. */
export interface ReplicationPosition {
  /** Binary log file, e.g. "mysql-bin.000003" (absent when binary logging is off). */
  binlogFile?: string;
  /** Offset in `binlogFile`. */
  binlogPosition?: number;
  /** GTID set: `@@gtid_binlog_pos` on MariaDB, `@@gtid_executed` on MySQL. */
  gtid?: string;
}

/** The manifest's name for the server flavor (the one type, from @stateward/mysql). */
export type { ServerFlavor };

export interface BackupManifest {
  format: typeof manifestFormat;
  formatVersion: typeof manifestFormatVersion;
  /** When the snapshot was taken (ISO 8601): the data is the state of this moment. */
  createdAt: string;
  completedAt: string;
  server: { version: string; flavor: ServerFlavor };
  /** Replication position of the snapshot; null when the server could not tell (binary log off, no privilege). */
  position: ReplicationPosition | null;
  compression: Compression;
  databases: string[];
  /** Every object, in restore order. */
  objects: ManifestObject[];
  totals: { objects: number; size: number; uncompressedSize: number; rows: number };
}

export function serializeManifest(manifest: BackupManifest): Buffer {
  return Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`, "utf8");
}

function invalid(where: string, what: string): BackupError {
  return new BackupError("InvalidManifest", `${where}: ${what}`);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(obj: Record<string, unknown>, field: string, where: string): string {
  const v = obj[field];
  if (typeof v !== "string") throw invalid(where, `"${field}" must be a string`);
  return v;
}

function count(obj: Record<string, unknown>, field: string, where: string): number {
  const v = obj[field];
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) throw invalid(where, `"${field}" must be a non-negative integer`);
  return v;
}

/** A relative key that cannot climb out of the backup's folder. */
function relativeKey(key: string, where: string): string {
  if (key === "" || key.startsWith("/") || key.split("/").some((p) => p === "" || p === "." || p === "..")) {
    throw invalid(where, `"key" ${JSON.stringify(key)} is not a relative object key`);
  }
  return key;
}

function parseObject(raw: unknown, index: number, where: string): ManifestObject {
  const at = `${where}, object ${index + 1}`;
  if (!isRecord(raw)) throw invalid(at, "not an object");
  const kind = str(raw, "kind", at);
  if (!(objectKinds as readonly string[]).includes(kind)) throw invalid(at, `unknown kind "${kind}"`);
  const sha256 = str(raw, "sha256", at);
  if (!/^[0-9a-f]{64}$/.test(sha256)) throw invalid(at, `"sha256" is not a hex SHA-256`);
  const obj: ManifestObject = {
    key: relativeKey(str(raw, "key", at), at),
    kind: kind as ObjectKind,
    database: str(raw, "database", at),
    size: count(raw, "size", at),
    uncompressedSize: count(raw, "uncompressedSize", at),
    sha256,
  };
  if (kind === "data") {
    obj.table = str(raw, "table", at);
    obj.part = count(raw, "part", at);
    obj.rows = count(raw, "rows", at);
  }
  return obj;
}

function parsePosition(raw: unknown, where: string): ReplicationPosition | null {
  if (raw === null || raw === undefined) return null;
  if (!isRecord(raw)) throw invalid(where, `"position" must be an object or null`);
  const pos: ReplicationPosition = {};
  if (raw.binlogFile !== undefined) pos.binlogFile = str(raw, "binlogFile", where);
  if (raw.binlogPosition !== undefined) pos.binlogPosition = count(raw, "binlogPosition", where);
  if (raw.gtid !== undefined) pos.gtid = str(raw, "gtid", where);
  return pos;
}

/**
 * Parses and validates a manifest. `where` names it in errors (its S3 URL).
 * Refuses newer format versions rather than guessing at them.
 */
export function parseManifest(text: string | Buffer, where: string): BackupManifest {
  let raw: unknown;
  try {
    raw = JSON.parse(text.toString());
  } catch (err) {
    throw invalid(where, `not valid JSON (${(err as Error).message})`);
  }
  if (!isRecord(raw)) throw invalid(where, "not a JSON object");
  if (raw.format !== manifestFormat) throw invalid(where, `"format" is not "${manifestFormat}"`);
  const version = raw.formatVersion;
  if (version !== manifestFormatVersion) {
    const newer = typeof version === "number" && version > manifestFormatVersion;
    throw invalid(where, newer ? `format version ${version} was written by a newer Stateward; this one reads version ${manifestFormatVersion}` : `unsupported format version ${String(version)}`);
  }
  const compression = str(raw, "compression", where);
  if (!(compressions as readonly string[]).includes(compression)) throw invalid(where, `unknown compression "${compression}"`);
  const server = raw.server;
  if (!isRecord(server)) throw invalid(where, `"server" must be an object`);
  const flavor = str(server, "flavor", where);
  if (flavor !== "MariaDB" && flavor !== "MySQL") throw invalid(where, `unknown server flavor "${flavor}"`);
  const rawDatabases: unknown = raw.databases;
  if (!Array.isArray(rawDatabases) || !rawDatabases.every((d): d is string => typeof d === "string")) {
    throw invalid(where, `"databases" must be a list of names`);
  }
  const databases: string[] = rawDatabases;
  if (!Array.isArray(raw.objects)) throw invalid(where, `"objects" must be a list`);
  const objects = raw.objects.map((o, i) => parseObject(o, i, where));
  const keys = new Set<string>();
  for (const o of objects) {
    if (keys.has(o.key)) throw invalid(where, `object key "${o.key}" is listed twice`);
    keys.add(o.key);
  }
  const totals = raw.totals;
  if (!isRecord(totals)) throw invalid(where, `"totals" must be an object`);
  return {
    format: manifestFormat,
    formatVersion: manifestFormatVersion,
    createdAt: str(raw, "createdAt", where),
    completedAt: str(raw, "completedAt", where),
    server: { version: str(server, "version", where), flavor },
    position: parsePosition(raw.position, where),
    compression: compression as Compression,
    databases,
    objects,
    totals: {
      objects: count(totals, "objects", where),
      size: count(totals, "size", where),
      uncompressedSize: count(totals, "uncompressedSize", where),
      rows: count(totals, "rows", where),
    },
  };
}
