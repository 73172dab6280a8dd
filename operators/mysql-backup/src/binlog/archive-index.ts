// index.json: what a binlog archive holds. An archive is a folder
//
//   <prefix>/<namespace>/<archive name>/index.json
//   <prefix>/<namespace>/<archive name>/binlog.000001
//   <prefix>/<namespace>/<archive name>/binlog.000002   ...
//
// where each binlog.NNNNNN is a standard binary-log file (`mariadb-binlog`
// reads it as it is) holding whole transactions only, and the index lists
// them in order with what a point-in-time restore needs to choose and verify
// them: SHA-256 and size, the GTID state before and after, the first and last
// GTID, and the first and last event times. A file is uploaded before the
// index names it, so every file the index lists is complete; a file the index
// does not list (a manager stopped between the two uploads) is overwritten by
// the next one of that number.
//
// `currentAt` (optional, added after formatVersion 1 without a bump: older
// readers ignore it, and an older writer keeps it as it was, which stays
// true) is a moment at which the archive held everything the server had
// written: the stream had told that the server had nothing more to send (a
// heartbeat) while no received transaction was waiting for upload. A point
// in time at or before it is archived even when no transaction is later
// than it (an idle server).
import { BackupError } from "../errors.ts";
import { parsePosition } from "./gtid.ts";

export const archiveIndexFileName = "index.json";
export const archiveIndexFormat = "stateward.io/binlog-archive";
/** Bumped on any change an older reader would misread. */
export const archiveIndexFormatVersion = 1;

export interface ArchivedFile {
  /** Key relative to the archive's folder, e.g. "binlog.000001". */
  key: string;
  /** Hex SHA-256 of the stored bytes. */
  sha256: string;
  size: number;
  /** GTID state (last GTID per domain) before the file's first transaction, e.g. "0-1-100". */
  startPosition: string;
  /** GTID state after its last transaction. */
  endPosition: string;
  /** GTIDs of its first and last transactions. */
  firstGtid: string;
  lastGtid: string;
  transactions: number;
  /** Header times (ISO 8601, whole seconds: what the binlog records) of the first and last events. */
  firstEventTime: string;
  lastEventTime: string;
  /** @@server_id and address of the server the events were streamed from (the primary of the moment). */
  serverId: number;
  source: string;
  /** The source's version, from its Format_description event. */
  serverVersion: string;
}

export interface ArchiveIndex {
  format: typeof archiveIndexFormat;
  formatVersion: typeof archiveIndexFormatVersion;
  createdAt: string;
  updatedAt: string;
  /** GTID state where the archive begins: its first transaction is the one after it. */
  startPosition: string;
  /** GTID state after the last archived transaction (startPosition while no file is archived). */
  position: string;
  files: ArchivedFile[];
  /** ISO 8601 (ms): the archive held every transaction the server had written by then (see the file comment). */
  currentAt?: string;
}

export function newArchiveIndex(startPosition: string, now: Date): ArchiveIndex {
  const at = now.toISOString();
  return { format: archiveIndexFormat, formatVersion: archiveIndexFormatVersion, createdAt: at, updatedAt: at, startPosition, position: startPosition, files: [] };
}

function invalid(what: string): BackupError {
  return new BackupError("InvalidArchiveIndex", `the binlog archive's ${archiveIndexFileName} is not valid: ${what}`);
}

function checkPosition(value: unknown, field: string): string {
  if (typeof value !== "string") throw invalid(`${field} is not a string`);
  try {
    parsePosition(value);
  } catch (err) {
    throw invalid(`${field}: ${(err as Error).message}`);
  }
  return value;
}

/** Parses and checks an index; the files must chain (each starts where the previous ended). */
export function parseArchiveIndex(bytes: Buffer): ArchiveIndex {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString("utf8"));
  } catch (err) {
    throw invalid(`not JSON (${(err as Error).message})`);
  }
  const index = value as Partial<ArchiveIndex> | null;
  if (typeof index !== "object" || index === null) throw invalid("not an object");
  if (index.format !== archiveIndexFormat) throw invalid(`format is ${JSON.stringify(index.format)}, not "${archiveIndexFormat}"`);
  if (index.formatVersion !== archiveIndexFormatVersion) throw invalid(`formatVersion ${String(index.formatVersion)} is not ${archiveIndexFormatVersion}; a newer Stateward wrote it`);
  const startPosition = checkPosition(index.startPosition, "startPosition");
  const position = checkPosition(index.position, "position");
  if (!Array.isArray(index.files)) throw invalid("files is not a list");
  let chained = startPosition;
  for (const [i, f] of index.files.entries()) {
    if (typeof f?.key !== "string" || !/^binlog\.\d{6,}$/.test(f.key)) throw invalid(`file ${i + 1} has no valid key`);
    if (typeof f.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(f.sha256) || typeof f.size !== "number") throw invalid(`${f.key} has no valid sha256 or size`);
    if (checkPosition(f.startPosition, `${f.key}.startPosition`) !== chained) throw invalid(`${f.key} starts at ${f.startPosition}, but the archive before it ends at ${chained}`);
    chained = checkPosition(f.endPosition, `${f.key}.endPosition`);
  }
  if (position !== chained) throw invalid(`position ${position} is not where the last file ends (${chained})`);
  if (index.currentAt !== undefined && (typeof index.currentAt !== "string" || !Number.isFinite(Date.parse(index.currentAt)))) throw invalid("currentAt is not a time");
  return index as ArchiveIndex;
}

/** The key of the `n`-th (1-based) file: the server's own naming, so a downloaded folder looks like a binlog directory. */
export function archivedFileKey(n: number): string {
  return `binlog.${String(n).padStart(6, "0")}`;
}

/** The number the next file gets. */
export function nextFileNumber(index: ArchiveIndex): number {
  const last = index.files.at(-1);
  return last ? Number(last.key.slice("binlog.".length)) + 1 : 1;
}
