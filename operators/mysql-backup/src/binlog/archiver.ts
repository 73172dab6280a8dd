// The archiving loop: stream from the archive's position, assemble whole
// transactions, write and rotate files, and on any failure (connection lost,
// a switchover, S3 down, a GTID gap) report it, keep what is complete, and
// connect again — to whatever server `target()` names then — from what S3
// holds. It runs until its signal aborts; nothing is uploaded after that (a
// manager that lost leadership must not write: the new leader resumes from
// the index).
import { setTimeout as sleep } from "node:timers/promises";
import { messageOf } from "@stateward/core";
import { BackupError } from "../errors.ts";
import type { MySQLConnectionOptions } from "../engine/connection.ts";
import { describeLocation, type BackupStore } from "../storage/s3.ts";
import { ArchiveWriter, type ArchiveStorage, type RotationOptions } from "./archive-writer.ts";
import { BinlogStream, binlogStateAt, currentBinlogPosition, serverIdAt, type BinlogSource } from "./binlog-stream.ts";
import { BinlogFormatError, type BinlogEvent } from "./events.ts";
import { describeDivergence, divergence, formatPosition } from "./gtid.ts";
import { selectPrunable, type KeptBackup, type RetentionChoice } from "./retention.ts";
import { TransactionAssembler } from "./transactions.ts";
import type { ArchivedFile } from "./archive-index.ts";

/** What the archive has done so far, for status and metrics. */
export interface ArchiveProgress {
  /** Whether a stream is open now. */
  streaming: boolean;
  /** The server streamed from now (or last). */
  source?: BinlogSource;
  /** GTID state where the archive begins (undefined until its index was read). */
  startPosition?: string;
  /** GTID state after the last transaction in S3. */
  archivedPosition: string;
  /** The last GTID in S3 and its event time (ISO 8601). */
  lastArchivedGtid?: string;
  lastArchivedTime?: string;
  /** Files the index lists. */
  files: number;
  /** Seconds since the oldest transaction received but not in S3 yet was written on the server; 0 when there is none. */
  lagSeconds: number;
  /** The failure that interrupted the stream last, until a transaction after it is taken (a gap stays until then). */
  error?: BackupError;
}

export interface BinlogArchiverOptions {
  storage: ArchiveStorage;
  /** The server to stream from, asked at every (re)connection: a cluster's primary of the moment. */
  target: () => Promise<MySQLConnectionOptions>;
  /** Announced as the replica's server id (see BinlogStreamOptions.serverId). */
  serverId: number;
  rotation?: RotationOptions;
  heartbeatMs?: number;
  /**
   * How often to check that `target()` still reaches the server the stream
   * comes from. Defaults to 10 000 ms. A switchover leaves the old primary
   * streaming (as a replica it logs the new primary's transactions too), but
   * the archive follows the primary: when `target()` (a cluster's primary
   * Service) reaches another server, the stream reconnects there, from what S3
   * holds, so nothing is skipped or doubled.
   */
  primaryCheckMs?: number;
  /**
   * Waits between attempts after a failure, doubling from `initialMs` to
   * `maxMs`. Defaults to 1 000 ms and 60 000 ms: a switchover is over in
   * seconds, and a lasting fault (a GTID gap) is retried once a minute.
   */
  retry?: { initialMs?: number; maxMs?: number };
  /** Deleting files no kept backup needs (see retention.ts); off when absent. */
  retention?: RetentionOptions;
  signal: AbortSignal;
  /** Called when the progress changes (connected, a file archived, a failure). */
  onProgress?: (progress: ArchiveProgress) => void;
  now?: () => number;
}

export interface RetentionOptions {
  /** The Completed backups of the archived server now; asked at each pass. */
  keptBackups: () => KeptBackup[];
  /** Files whose last transaction is younger than this stay. */
  minimumAgeMs: number;
  /** How often a pass runs at most (between the archive's other steps). Defaults to 60 000 ms. */
  everyMs?: number;
  /** After files were deleted (the index first, then the objects). */
  onPruned?: (files: ArchivedFile[], choice: RetentionChoice) => void;
  /** A pass that failed (S3): the stream goes on, the next pass tries again. Files the index no longer names may be left. */
  onFailed?: (err: BackupError) => void;
}

/** Archive storage in a folder of S3 (keys relative to it). */
export function archiveStorage(store: BackupStore): ArchiveStorage {
  return {
    put: (key, body, contentType, signal) => store.bucket.putBytes(store.key(key), body, contentType, signal),
    async get(key) {
      try {
        return await store.bucket.getBytes(store.key(key), 256 * 1024 * 1024);
      } catch (err) {
        if (err instanceof BackupError && err.reason === "ObjectNotFound") return undefined;
        throw err;
      }
    },
    delete: (keys, signal) => store.bucket.deleteKeys(keys.map((k) => store.key(k)), signal),
  };
}

/** Failures that a reconnection at once would only meet again. */
/**
 * How long before a heartbeat's arrival the archive is taken as current
 * (index.json currentAt): the heartbeat left the server a little earlier,
 * and binlog times are the server's clock, not this process's.
 */
const CURRENT_MARGIN_MS = 1_000;

const LASTING_FAULTS = new Set(["ArchiveDiverged", "GtidGap", "GtidDuplicate", "InvalidBinlog", "BinlogUnavailable", "DatabaseAccessDenied", "StorageAccessDenied", "BucketNotFound", "InvalidArchiveIndex"]);

function asBackupError(err: unknown): BackupError {
  if (err instanceof BackupError) return err;
  if (err instanceof BinlogFormatError) return new BackupError("InvalidBinlog", err.message, { retryable: true });
  return new BackupError("DatabaseError", messageOf(err), { cause: err });
}

export class BinlogArchiver {
  private writer: ArchiveWriter | undefined;
  private source: BinlogSource | undefined;
  private streaming = false;
  private error: BackupError | undefined;
  private lastRetentionPass = 0;
  private readonly now: () => number;
  private readonly options: BinlogArchiverOptions;

  constructor(options: BinlogArchiverOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
  }

  progress(): ArchiveProgress {
    const index = this.writer?.index;
    const last = index?.files.at(-1);
    const pending = this.writer?.oldestPendingTimestamp;
    return {
      streaming: this.streaming,
      ...(this.source ? { source: this.source } : {}),
      ...(index ? { startPosition: index.startPosition } : {}),
      archivedPosition: this.writer ? formatPosition(this.writer.archivedPosition) : "",
      ...(last ? { lastArchivedGtid: last.lastGtid, lastArchivedTime: last.lastEventTime } : {}),
      files: index?.files.length ?? 0,
      lagSeconds: pending === undefined ? 0 : Math.max(0, Math.round(this.now() / 1000 - pending)),
      ...(this.error ? { error: this.error } : {}),
    };
  }

  private report(): void {
    this.options.onProgress?.(this.progress());
  }

  /** Runs until the signal aborts; failures are reported through onProgress and retried. */
  async run(): Promise<void> {
    const { signal } = this.options;
    const initialMs = this.options.retry?.initialMs ?? 1_000;
    const maxMs = this.options.retry?.maxMs ?? 60_000;
    let wait = initialMs;
    while (!signal.aborted) {
      let connected = false;
      try {
        this.writer ??= await ArchiveWriter.open(this.options.storage, async () => currentBinlogPosition(await this.options.target()), {
          ...this.options.rotation,
          now: this.now,
          signal,
        });
        await this.streamOnce(this.writer, () => (connected = true));
      } catch (err) {
        if (signal.aborted) break;
        const failure = await this.explain(asBackupError(err));
        // Following the primary is not a failure.
        if (failure.reason !== "PrimaryChanged") this.error = failure;
      }
      this.streaming = false;
      if (signal.aborted) break;
      this.report();
      // A stream that ran and broke (a switchover, a restarted server) is retried at once; a fault that
      // stays (a gap, a refused login, S3 down) waits longer each time.
      const lasting = this.error !== undefined && LASTING_FAULTS.has(this.error.reason);
      wait = connected && !lasting ? initialMs : Math.min(wait * 2, maxMs);
      await sleep(wait, undefined, { signal }).catch(() => undefined);
    }
    this.writer?.discard();
    this.streaming = false;
  }

  /**
   * A server that refuses the archive's position (MariaDB's 1236: "not in the master's binlog") may
   * lack what the archive holds: after a failover, transactions the old primary sent the archive
   * before any replica had them. Said as such (ArchiveDiverged, naming them), not as a binlog that
   * is unavailable: streaming on would number the new primary's history after transactions it
   * never had.
   */
  private async explain(failure: BackupError): Promise<BackupError> {
    if (failure.reason !== "BinlogUnavailable" || !this.writer || !this.source) return failure;
    try {
      const found = divergence(this.writer.archivedPosition, await binlogStateAt(await this.options.target()));
      if (found.length === 0) return failure;
      return new BackupError("ArchiveDiverged", describeDivergence(found, `server ${this.source.serverId} at ${this.source.endpoint}`), { cause: failure });
    } catch {
      // Unreachable again: the server's own words stand.
      return failure;
    }
  }

  /** One connection's stream, until it fails. */
  private async streamOnce(writer: ArchiveWriter, onConnected: () => void): Promise<never> {
    const { signal } = this.options;
    writer.discard();
    const target = await this.options.target();
    const stream = await BinlogStream.open({
      connection: target,
      serverId: this.options.serverId,
      position: formatPosition(writer.archivedPosition),
      ...(this.options.heartbeatMs !== undefined ? { heartbeatMs: this.options.heartbeatMs } : {}),
      signal,
    });
    this.source = stream.source;
    this.streaming = true;
    onConnected();
    this.report();
    const assembler = new TransactionAssembler();
    const checker = setInterval(() => {
      this.options
        .target()
        .then(serverIdAt)
        .then((id) => {
          if (id !== stream.source.serverId) {
            stream.abort(
              new BackupError("PrimaryChanged", `the primary moved from server ${stream.source.serverId} to server ${id}; the stream follows it`, { retryable: true }),
            );
          }
        })
        // Unreachable for a moment (a failover under way): the stream itself says when it breaks.
        .catch(() => undefined);
    }, this.options.primaryCheckMs ?? 10_000);
    checker.unref();
    // The next event, as a promise that never rejects: it may stay pending across turns of the
    // loop (the rotation timer won), and a rejection nobody awaits would take the process down.
    let pending: Promise<{ event: BinlogEvent | undefined } | { error: unknown }> | undefined;
    // One timer per rotation due time, not one per event.
    let rotation: { at: number; fired: Promise<"due" | "cancelled">; cancel: AbortController } | undefined;
    try {
      for (;;) {
        pending ??= stream.next().then(
          (event) => ({ event }),
          (error: unknown) => ({ error }),
        );
        const due = writer.dueAt;
        if (rotation && rotation.at !== due) {
          rotation.cancel.abort();
          rotation = undefined;
        }
        if (!rotation && due !== undefined) {
          const cancel = new AbortController();
          const fired = sleep(Math.max(0, due - this.now()), "due" as const, { ref: false, signal: cancel.signal }).catch(() => "cancelled" as const);
          rotation = { at: due, fired, cancel };
        }
        const outcome = await (rotation ? Promise.race([pending, rotation.fired]) : pending);
        if (outcome === "due" || outcome === "cancelled") {
          rotation = undefined;
          await this.archive(() => writer.rotateIfDue());
          continue;
        }
        pending = undefined;
        if ("error" in outcome) throw outcome.error;
        const { event } = outcome;
        if (!event) throw new BackupError("ConnectionLost", `${stream.source.endpoint} ended the binlog stream`, { retryable: true });
        const item = assembler.push(event);
        if (item.kind === "transaction") {
          await this.archive(() => writer.append(item.transaction, stream.source));
          // The stream goes on where the archive ends: whatever interrupted it is over.
          if (this.error) {
            this.error = undefined;
            this.report();
          }
        } else if (item.kind === "heartbeat") {
          await this.archive(() => writer.rotateIfDue());
          // The server had nothing more to send: when nothing waits for upload, the archive is current.
          // Not a moment ago, but CURRENT_MARGIN_MS before: the heartbeat's way here, and clocks a little apart.
          await this.archive(() => writer.markCurrent(CURRENT_MARGIN_MS));
        }
      }
    } catch (err) {
      rotation?.cancel.abort();
      stream.close();
      if (signal.aborted) throw err;
      // What is open holds whole, checked transactions: keep it.
      await this.archive(() => writer.flush()).catch(() => writer.discard());
      throw err;
    } finally {
      clearInterval(checker);
      stream.close();
    }
  }

  /** Runs a writer step; reports progress when it archived a file. Then a retention pass, when one is due. */
  private async archive(step: () => Promise<unknown>): Promise<void> {
    const files = this.writer?.index.files.length;
    await step();
    if (this.writer?.index.files.length !== files) {
      this.error = undefined;
      this.report();
    }
    await this.retain();
  }

  /** Deletes the files no kept backup needs (index first, then objects); a failure is reported, not thrown. */
  private async retain(): Promise<void> {
    const retention = this.options.retention;
    const writer = this.writer;
    if (!retention || !writer || this.now() - this.lastRetentionPass < (retention.everyMs ?? 60_000)) return;
    this.lastRetentionPass = this.now();
    try {
      const choice = selectPrunable(writer.index, retention.keptBackups(), this.now(), retention.minimumAgeMs);
      if (choice.files.length === 0) return;
      const dropped = await writer.prune(choice.files.length);
      if (dropped.length === 0) return;
      retention.onPruned?.(dropped, choice);
      this.report();
    } catch (err) {
      if (this.options.signal.aborted) throw err;
      retention.onFailed?.(asBackupError(err));
    }
  }
}

/** `s3://bucket/folder/`, for status. */
export function archiveLocation(store: BackupStore): string {
  return describeLocation(store.bucket.bucket, store.folder);
}
