// One backup run's settings (its options checked, with their defaults) and
// the state its phases share (BackupRun); the phases are in backup.ts.
import type { Logger } from "@stateward/core";
import { SYSTEM_DATABASES as systemDatabases } from "@stateward/mysql";
import { MySQLSession } from "./connection.ts";
import { abortedError, throwIfAborted } from "./errors.ts";
import { BackupError } from "../errors.ts";
import { validateIdentifier } from "./sql.ts";
import { parseCompression, type Compression } from "../storage/compression.ts";
import { BackupStore, type S3Location } from "../storage/s3.ts";
import type { BackupOptions, BackupProgress } from "./backup.ts";
import { Uploads } from "./uploads.ts";
import { progressReporter } from "../progress.ts";

const defaults = {
  compression: "gzip" as Compression,
  parallelism: 2,
  objectSize: 64 * 1024 * 1024,
  statementSize: 1024 * 1024,
  lockWaitTimeoutSeconds: 60,
};

function positive(value: number | undefined, fallback: number, what: string, max = Number.MAX_SAFE_INTEGER): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < 1 || v > max) throw new BackupError("InvalidOptions", `${what} must be an integer between 1 and ${max}`);
  return v;
}

/** The options, checked and with their defaults. */
export interface BackupSettings {
  compression: Compression;
  parallelism: number;
  objectSize: number;
  statementSize: number;
  lockWait: number;
}

/** What the phases of one run share: the folder, the uploads and connections to undo on failure, warnings, progress. */
export class BackupRun {
  readonly options: BackupOptions;
  readonly settings: BackupSettings;
  readonly store: BackupStore;
  readonly signal: AbortSignal | undefined;
  readonly log: Logger | undefined;
  readonly uploads: Uploads;
  readonly warnings: string[] = [];
  /** Work started in parallel, awaited (briefly) before a failed backup's objects are deleted. */
  readonly running: Promise<unknown>[] = [];
  readonly progress: BackupProgress = { phase: "snapshot", tablesTotal: 0, tablesDone: 0, rows: 0, bytes: 0, storedBytes: 0 };
  private readonly sessions: MySQLSession[] = [];
  /** Calls onProgress about once a second, or now when `force`. */
  readonly report: (force?: boolean) => void;

  constructor(options: BackupOptions, settings: BackupSettings, store: BackupStore) {
    this.options = options;
    this.settings = settings;
    this.store = store;
    this.signal = options.signal;
    this.log = options.logger;
    this.uploads = new Uploads(store, settings.compression, options.compressionLevel, options.upload ?? {});
    this.report = progressReporter(this.progress, options.onProgress);
  }

  /** A new connection to the source, dropped by stopAll. */
  async connect(): Promise<MySQLSession> {
    const session = await MySQLSession.open(this.options.source);
    this.sessions.push(session);
    return session;
  }

  /** Closes connections that are done. */
  async close(...sessions: MySQLSession[]): Promise<void> {
    for (const s of sessions) {
      await s.close();
      this.sessions.splice(this.sessions.indexOf(s), 1);
    }
  }

  // Aborting (or the first failure) drops every connection, which ends any
  // query in flight at once; the phase running then fails and cleans up.
  stopAll(): void {
    for (const s of this.sessions) s.destroy();
  }

  // An abort also cuts the S3 requests in flight: lib-storage does not pass an abort on to a PUT
  // already sent, which would complete after the backup was told to stop (a manager that lost
  // leadership would still be writing). The client opens new connections for the cleanup.
  readonly onAbort = (): void => {
    this.stopAll();
    this.store.bucket.refuseWrites(abortedError("the backup", this.signal));
    this.store.bucket.client.destroy();
  };

  throwIfAborted(): void {
    throwIfAborted(this.signal, "the backup");
  }
}

/** The options with their defaults; throws InvalidOptions before anything is touched. */
export function checkOptions(options: BackupOptions): BackupSettings {
  const settings: BackupSettings = {
    compression: options.compression === undefined ? defaults.compression : parseCompression(options.compression),
    parallelism: positive(options.parallelism, defaults.parallelism, "parallelism", 64),
    objectSize: positive(options.objectSize, defaults.objectSize, "objectSize"),
    statementSize: positive(options.statementSize, defaults.statementSize, "statementSize", 64 * 1024 * 1024),
    lockWait: positive(options.lockWaitTimeoutSeconds, defaults.lockWaitTimeoutSeconds, "lockWaitTimeoutSeconds", 31_536_000),
  };
  for (const db of options.databases ?? []) {
    validateIdentifier(db, "database");
    if (systemDatabases.has(db.toLowerCase())) {
      throw new BackupError("InvalidOptions", `database ${db} belongs to the server itself and is not backed up`);
    }
  }
  return settings;
}

export function openFolder(storage: S3Location): BackupStore {
  const store = new BackupStore(storage);
  if (store.prefix === "") {
    store.destroy();
    throw new BackupError("InvalidOptions", "the backup's S3 prefix is empty: a backup needs a folder of its own");
  }
  return store;
}
