// Writes whole transactions into standard binlog files and uploads each
// closed file, then the index that lists it. A file is
//
//   \xfebin | Format_description (the source's) | Gtid_list (state before) | the transactions' events
//
// with every event's log position rewritten to its offset in this file (and
// its checksum recomputed), as in a binlog file the server wrote itself.
// Every transaction is checked against the archive's GTID position first: a
// gap or a duplicate is thrown, never written.
import { createHash } from "node:crypto";
import { BackupError } from "../errors.ts";
import {
  archiveIndexFileName,
  archivedFileKey,
  newArchiveIndex,
  nextFileNumber,
  parseArchiveIndex,
  type ArchiveIndex,
  type ArchivedFile,
} from "./archive-index.ts";
import { BINLOG_MAGIC, archiveFormatDescription, gtidListEvent, relocate, sameFormat, type FormatDescription } from "./events.ts";
import { advance, continuity, describeDiscontinuity, formatGtid, formatPosition, parsePosition, type Gtid, type GtidPosition } from "./gtid.ts";
import type { Transaction } from "./transactions.ts";

/** Where the archive's objects go; keys are relative to the archive's folder. */
export interface ArchiveStorage {
  /** Stores an object; with `signal`, an upload under way when it aborts is cancelled. */
  put(key: string, body: Buffer, contentType: string, signal?: AbortSignal): Promise<void>;
  /** The object's bytes, or undefined when there is none. */
  get(key: string): Promise<Buffer | undefined>;
  /** Deletes objects (none there is no failure). */
  delete(keys: readonly string[], signal?: AbortSignal): Promise<void>;
}

export interface RotationOptions {
  /**
   * Close a file once it holds this many bytes. Defaults to 64 MiB: what one
   * file costs in memory while it fills (it is uploaded in one request), and
   * few enough objects under a heavy write load. A transaction is never split,
   * so a file can exceed this by its last transaction.
   */
  maxFileBytes?: number;
  /**
   * Close a file this long after its first transaction arrived. Defaults to
   * 60 000 ms: what a lost server can take with it (the archive's recovery
   * point), at 1440 objects a day under a steady trickle of writes.
   */
  maxFileAgeMs?: number;
}

export interface ArchiveWriterOptions extends RotationOptions {
  /** The clock (ms since the epoch). Defaults to Date.now. */
  now?: () => number;
  /** Aborts uploads under way and refuses new ones: a stopped archive (a lost leadership) stores nothing more. */
  signal?: AbortSignal;
}

export const defaultMaxFileBytes = 64 * 1024 * 1024;
export const defaultMaxFileAgeMs = 60_000;

/** The server the events are streamed from. */
export interface SourceInfo {
  serverId: number;
  /** host:port */
  endpoint: string;
}

interface OpenFile {
  number: number;
  parts: Buffer[];
  size: number;
  format: FormatDescription;
  source: SourceInfo;
  startPosition: GtidPosition;
  position: GtidPosition;
  firstGtid: Gtid;
  lastGtid: Gtid;
  firstTimestamp: number;
  lastTimestamp: number;
  transactions: number;
  openedAt: number;
}

/** Header seconds as the index writes times (ISO 8601, whole seconds). */
export const isoSeconds = (seconds: number): string => new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");

export class ArchiveWriter {
  private indexState: ArchiveIndex;
  private archived: GtidPosition;
  private file: OpenFile | undefined;
  private readonly maxFileBytes: number;
  private readonly maxFileAgeMs: number;

  private readonly storage: ArchiveStorage;
  private readonly now: () => number;
  private readonly signal: AbortSignal | undefined;

  private constructor(storage: ArchiveStorage, index: ArchiveIndex, options: ArchiveWriterOptions) {
    this.storage = storage;
    this.now = options.now ?? Date.now;
    this.signal = options.signal;
    const rotation = options;
    this.indexState = index;
    this.archived = parsePosition(index.position);
    this.maxFileBytes = rotation.maxFileBytes ?? defaultMaxFileBytes;
    this.maxFileAgeMs = rotation.maxFileAgeMs ?? defaultMaxFileAgeMs;
  }

  /**
   * Opens the archive whose index is in `storage`, or starts one at
   * `startPosition()` (asked only when there is no index yet; the new index
   * is written at once, so a restart resumes there, not at a later position).
   */
  static async open(storage: ArchiveStorage, startPosition: () => Promise<string>, options: ArchiveWriterOptions = {}): Promise<ArchiveWriter> {
    const now = options.now ?? Date.now;
    const bytes = await storage.get(archiveIndexFileName);
    let index: ArchiveIndex;
    if (bytes) {
      index = parseArchiveIndex(bytes);
    } else {
      index = newArchiveIndex(formatPosition(parsePosition(await startPosition())), new Date(now()));
      options.signal?.throwIfAborted();
      await storage.put(archiveIndexFileName, indexBytes(index), "application/json", options.signal);
    }
    return new ArchiveWriter(storage, index, options);
  }

  /** The index as last uploaded. */
  get index(): ArchiveIndex {
    return this.indexState;
  }

  /** GTID state after the last transaction in S3: where a stream resumes. */
  get archivedPosition(): GtidPosition {
    return this.archived;
  }

  /** GTID state after the last transaction received (archived or not). */
  get position(): GtidPosition {
    return this.file?.position ?? this.archived;
  }

  /** The header time (seconds) of the oldest transaction not in S3 yet, if any: the archive's lag starts there. */
  get oldestPendingTimestamp(): number | undefined {
    return this.file?.firstTimestamp;
  }

  /** Bytes waiting in the open file. */
  get pendingBytes(): number {
    return this.file?.size ?? 0;
  }

  /**
   * Adds a whole transaction. Closes and uploads the open file first when the
   * transaction comes from another server or format, and after it when the
   * file reached its size.
   * @throws BackupError GtidGap or GtidDuplicate, writing nothing.
   */
  async append(tx: Transaction, source: SourceInfo): Promise<void> {
    const position = this.position;
    const check = continuity(position, tx.gtid);
    if (!check.ok) {
      throw new BackupError(check.kind === "gap" ? "GtidGap" : "GtidDuplicate", describeDiscontinuity(position, check));
    }
    if (this.file && (!sameFormat(this.file.format, tx.format) || this.file.source.serverId !== source.serverId || this.file.source.endpoint !== source.endpoint)) {
      await this.flush();
    }
    const file = this.file ?? this.startFile(tx, source);
    for (const event of tx.events) {
      const bytes = relocate(event, file.size, tx.format.checksum);
      file.parts.push(bytes);
      file.size += bytes.length;
    }
    file.position = advance(file.position, tx.gtid);
    file.lastGtid = tx.gtid;
    file.lastTimestamp = tx.lastTimestamp;
    file.transactions++;
    if (file.size >= this.maxFileBytes) await this.flush();
  }

  /** Closes and uploads the open file when it is older than the rotation age. */
  async rotateIfDue(): Promise<void> {
    if (this.file && this.now() - this.file.openedAt >= this.maxFileAgeMs) await this.flush();
  }

  /** When the open file falls due for rotation by age (ms since the epoch), if there is one. */
  get dueAt(): number | undefined {
    return this.file ? this.file.openedAt + this.maxFileAgeMs : undefined;
  }

  /**
   * The stream told that the server has nothing more to send (a heartbeat,
   * received `heldSinceMs` ago at most): with no received transaction waiting
   * for upload, everything the server had written by then is in S3, and the
   * index records it (currentAt, archive-index.ts). A pending transaction
   * blocks it: the archive is current again only once it is uploaded and the
   * next heartbeat comes.
   * @returns whether currentAt moved.
   */
  async markCurrent(heldSinceMs: number): Promise<boolean> {
    if (this.file) return false;
    const at = this.now() - heldSinceMs;
    const previous = this.indexState.currentAt ? Date.parse(this.indexState.currentAt) : -Infinity;
    if (at <= previous) return false;
    this.signal?.throwIfAborted();
    const index: ArchiveIndex = { ...this.indexState, updatedAt: new Date(this.now()).toISOString(), currentAt: new Date(at).toISOString() };
    await this.storage.put(archiveIndexFileName, indexBytes(index), "application/json", this.signal);
    this.indexState = index;
    return true;
  }

  /** Drops the open file (nothing of it is uploaded): the next stream starts again from archivedPosition. */
  discard(): void {
    this.file = undefined;
  }

  /** Uploads the open file, then the index naming it. On failure the file is dropped: resume from archivedPosition. */
  async flush(): Promise<ArchivedFile | undefined> {
    const file = this.file;
    if (!file) return undefined;
    this.file = undefined;
    const body = Buffer.concat(file.parts, file.size);
    const entry: ArchivedFile = {
      key: archivedFileKey(file.number),
      sha256: createHash("sha256").update(body).digest("hex"),
      size: body.length,
      startPosition: formatPosition(file.startPosition),
      endPosition: formatPosition(file.position),
      firstGtid: formatGtid(file.firstGtid),
      lastGtid: formatGtid(file.lastGtid),
      transactions: file.transactions,
      firstEventTime: isoSeconds(file.firstTimestamp),
      lastEventTime: isoSeconds(file.lastTimestamp),
      serverId: file.source.serverId,
      source: file.source.endpoint,
      serverVersion: file.format.serverVersion,
    };
    this.signal?.throwIfAborted();
    await this.storage.put(entry.key, body, "application/octet-stream", this.signal);
    this.signal?.throwIfAborted();
    const index: ArchiveIndex = {
      ...this.indexState,
      updatedAt: new Date(this.now()).toISOString(),
      position: entry.endPosition,
      files: [...this.indexState.files, entry],
    };
    await this.storage.put(archiveIndexFileName, indexBytes(index), "application/json", this.signal);
    this.indexState = index;
    this.archived = file.position;
    return entry;
  }

  /**
   * Drops the first `count` files from the archive: the index without them
   * is uploaded first (so no index ever names a deleted file), then their
   * objects are deleted. The archive begins where the first file left
   * starts. The newest file is never dropped (the next file's number comes
   * from it). Called between the writer's other steps, never beside a flush.
   * @returns the dropped files.
   */
  async prune(count: number): Promise<ArchivedFile[]> {
    const files = this.indexState.files;
    const n = Math.min(count, files.length - 1);
    if (n <= 0) return [];
    const dropped = files.slice(0, n);
    const kept = files.slice(n);
    const index: ArchiveIndex = {
      ...this.indexState,
      updatedAt: new Date(this.now()).toISOString(),
      startPosition: (kept[0] as ArchivedFile).startPosition,
      files: kept,
    };
    this.signal?.throwIfAborted();
    await this.storage.put(archiveIndexFileName, indexBytes(index), "application/json", this.signal);
    this.indexState = index;
    this.signal?.throwIfAborted();
    await this.storage.delete(
      dropped.map((f) => f.key),
      this.signal,
    );
    return dropped;
  }

  private startFile(tx: Transaction, source: SourceInfo): OpenFile {
    const parts: Buffer[] = [BINLOG_MAGIC];
    let size = BINLOG_MAGIC.length;
    const fde = archiveFormatDescription(tx.format, size);
    parts.push(fde);
    size += fde.length;
    const list = gtidListEvent([...this.archived.values()].sort((a, b) => a.domain - b.domain), {
      timestamp: tx.firstTimestamp,
      serverId: tx.format.event.header.serverId,
      offset: size,
      checksum: tx.format.checksum,
    });
    parts.push(list);
    size += list.length;
    this.file = {
      number: nextFileNumber(this.indexState),
      parts,
      size,
      format: tx.format,
      source,
      startPosition: this.archived,
      position: this.archived,
      firstGtid: tx.gtid,
      lastGtid: tx.gtid,
      firstTimestamp: tx.firstTimestamp,
      lastTimestamp: tx.lastTimestamp,
      transactions: 0,
      openedAt: this.now(),
    };
    return this.file;
  }
}

function indexBytes(index: ArchiveIndex): Buffer {
  return Buffer.from(`${JSON.stringify(index, null, 2)}\n`);
}
