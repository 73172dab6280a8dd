// MySQLBinlogArchive: a stream that never ends, so it is not a reconcile's
// work. The reconcile only decides: start the archiver as a background task
// of the manager (core's BackgroundTasks, aborted on shutdown and, with a
// LeadershipLostError, the moment this manager stops leading), restart it when
// the spec changed, stop it when the object is deleted. The task itself writes
// the status (position, lag, Ready) and the Events (a GTID gap, the server it
// streams from). A new leader's first reconcile starts the stream again, and
// the archiver resumes from the index in S3: nothing the old leader had not
// uploaded is lost (it is still in the server's binlog), nothing is doubled.
import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import {
  LeadershipLostError,
  isBeingDeleted,
  type BackgroundTasks,
  type Cache,
  type EventRecorder,
  type KubeClient,
  type Leadership,
  type Metrics,
  type ObjectGauge,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
} from "@stateward/core";
import { MySQLInstanceKind, type MySQLConnector, type MySQLInstance, type SecretReader } from "@stateward/mysql";
import { MySQLBackupKind, MySQLBinlogArchiveKind, type MySQLBackup, type MySQLBinlogArchive } from "../api.ts";
import { BinlogArchiver, archiveLocation, archiveStorage, type ArchiveProgress, type KeptBackup, type RetentionOptions } from "../binlog/index.ts";
import { BackupError } from "../errors.ts";
import { BackupStore } from "../storage/s3.ts";
import { engineConnection } from "./connection.ts";
import { describeFailure } from "./failures.ts";
import { writeRunStatus } from "./run-status.ts";
import { backupFolder, resolveS3 } from "./s3-settings.ts";

export interface BinlogArchiveDeps {
  client: KubeClient;
  cache: Cache;
  events: EventRecorder;
  tasks: BackgroundTasks;
  connector: MySQLConnector;
  secrets: SecretReader;
  metrics: Metrics;
  /** Fences a new leader's first stream: the previous leader may still be uploading until its lease certainly expired. */
  leadership: Leadership;
}

/**
 * How often a running archive refreshes its status (lag) between the moments
 * it reports by itself (a file archived, a failure). Status is written only
 * when it changed, so an idle, caught-up archive writes nothing.
 */
const STATUS_REFRESH_MS = 15_000;

/** A server id no cluster member uses (mysql-cluster numbers its members from 1000): 4 000 000 000 + a hash of the object. */
export function defaultServerId(namespace: string, name: string): number {
  const hash = createHash("sha256").update(`${namespace}/${name}`).digest().readUInt32BE(0);
  return 4_000_000_000 + (hash % 294_967_295);
}

/** "server 1001 at host:3306" */
function sourceOf(p: ArchiveProgress): string | undefined {
  return p.source ? `server ${p.source.serverId} at ${p.source.endpoint}` : undefined;
}

/** The status fields and the Ready condition that an archive's progress makes. */
export function archiveStatus(p: ArchiveProgress, location: string): { fields: Record<string, unknown>; ready: { status: "True" | "False"; reason: string; message: string } } {
  const source = sourceOf(p);
  const ready = p.error
    ? { status: "False" as const, reason: p.error.reason, message: `${p.error.message}; retrying` }
    : p.streaming
      ? { status: "True" as const, reason: "Archiving", message: `Streaming from ${source ?? "the server"}; archived up to "${p.archivedPosition}"` }
      : { status: "False" as const, reason: "Connecting", message: "Connecting to the server" };
  return {
    fields: {
      location,
      ...(p.startPosition !== undefined ? { startPosition: p.startPosition } : {}),
      archivedPosition: p.archivedPosition,
      ...(p.lastArchivedGtid ? { lastArchivedGtid: p.lastArchivedGtid, lastArchivedTime: p.lastArchivedTime } : {}),
      lagSeconds: p.lagSeconds,
      files: p.files,
      ...(source ? { source } : {}),
    },
    ready,
  };
}

/** The backups a point-in-time restore may start from: Completed MySQLBackups of the same MySQLInstance, in the namespace. */
export function keptBackups(backups: readonly MySQLBackup[], instance: string): KeptBackup[] {
  return backups
    .filter((b) => b.spec.instanceRef.name === instance && b.status?.phase === "Completed")
    .map((b) => ({ name: b.metadata.name ?? "", position: b.status?.position?.gtid }));
}

export class BinlogArchiveReconciler implements Reconciler {
  private readonly d: BinlogArchiveDeps;
  /** The generation each running task was started for. */
  private readonly started = new Map<string, number>();
  private readonly lag: ObjectGauge;
  private readonly forget: (obj: { namespace: string; name: string }) => void;

  constructor(deps: BinlogArchiveDeps) {
    this.d = deps;
    const m = deps.metrics.objects("mysqlbinlogarchive");
    this.lag = m.gauge("lag_seconds", "Seconds since the oldest transaction received but not yet stored in S3 was written on the server (status.lagSeconds).");
    this.forget = (obj) => m.forget(obj);
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const ns = req.namespace ?? "";
    const key = `binlog-archive/${ns}/${req.name}`;
    const archive = this.d.cache.get<MySQLBinlogArchive>(MySQLBinlogArchiveKind.resource, ns, req.name);
    if (!archive || isBeingDeleted(archive)) {
      // The archive in S3 stays: it is what a point-in-time restore reads.
      await this.d.tasks.cancel(key);
      this.started.delete(key);
      this.forget({ namespace: ns, name: req.name });
      return undefined;
    }
    const generation = archive.metadata.generation ?? 0;
    if (this.d.tasks.isRunning(key)) {
      if (this.started.get(key) === generation) return undefined;
      ctx.log.info("binlog archive spec changed: restarting its stream", { archive: `${ns}/${req.name}` });
      await this.d.tasks.cancel(key);
    }
    const instanceName = archive.spec.instanceRef.name;
    if (!this.d.cache.get<MySQLInstance>(MySQLInstanceKind.resource, ns, instanceName)) {
      await this.notReady(archive, "InstanceNotFound", `MySQLInstance ${instanceName} not found in namespace ${ns}`);
      return { requeueAfter: 30_000 };
    }
    let store: BackupStore;
    try {
      const s3 = await resolveS3(ns, archive.spec.storage.s3, this.d.secrets);
      store = new BackupStore({ ...s3, prefix: backupFolder(archive.spec.storage.s3.prefix, ns, req.name) });
    } catch (err) {
      const f = describeFailure(err);
      await this.notReady(archive, f.reason, f.message);
      await this.d.events.record(archive, "Warning", f.reason, f.message);
      return { requeueAfter: 30_000 };
    }
    this.started.set(key, generation);
    this.d.tasks.start(
      key,
      `binlog archive ${ns}/${req.name}`,
      (signal) => this.run(archive, store, signal, ctx),
      (err) => ctx.log.error("binlog archive task failed unexpectedly", { err }),
    );
    return undefined;
  }

  private async notReady(archive: MySQLBinlogArchive, reason: string, message: string): Promise<void> {
    const c = archive.status?.conditions?.find((x) => x.type === "Ready");
    if (c?.reason === reason && c.message === message && c.observedGeneration === archive.metadata.generation) return;
    await writeRunStatus(this.d.client, MySQLBinlogArchiveKind.resource, archive.metadata.namespace ?? "", archive.metadata.name ?? "", {}, { status: "False", reason, message });
  }

  /** The background task: the archiver, and the status and Events it reports. */
  private async run(archive: MySQLBinlogArchive, store: BackupStore, signal: AbortSignal, ctx: ReconcileContext): Promise<void> {
    const ns = archive.metadata.namespace ?? "";
    const name = archive.metadata.name ?? "";
    const location = archiveLocation(store);
    const rotation = archive.spec.rotation;
    let lastSource: string | undefined;
    let lastError: string | undefined;
    let writing: Promise<void> = Promise.resolve();
    let archiver: BinlogArchiver | undefined;

    const publish = (p: ArchiveProgress): void => {
      if (signal.aborted) return;
      writing = writing.then(async () => {
        if (signal.aborted) return;
        const source = sourceOf(p);
        if (p.streaming && source && source !== lastSource) {
          lastSource = source;
          await this.d.events.record(archive, "Normal", "Streaming", `Archiving the binary log of ${source} after GTID position "${p.archivedPosition}" to ${location}`);
        }
        const errorKey = p.error ? `${p.error.reason}: ${p.error.message}` : undefined;
        if (p.error && errorKey !== lastError) {
          await this.d.events.record(archive, "Warning", p.error.reason, p.error.message);
        }
        lastError = errorKey;
        this.lag.set({ namespace: ns, name }, p.lagSeconds);
        const { fields, ready } = archiveStatus(p, location);
        await writeRunStatus(this.d.client, MySQLBinlogArchiveKind.resource, ns, name, fields, ready);
      }).catch((err: unknown) => ctx.log.warn("could not write the binlog archive's status", { archive: `${ns}/${name}`, err: describeFailure(err).message }));
    };

    // A stopped archive stores nothing more, not even from an upload that has not seen the abort yet.
    const refuse = () => store.bucket.refuseWrites(signal.reason instanceof Error ? signal.reason : new Error("the binlog archive was stopped"));
    signal.addEventListener("abort", refuse, { once: true });
    const refresh = setInterval(() => archiver && publish(archiver.progress()), STATUS_REFRESH_MS);
    const event = (type: "Normal" | "Warning", reason: string, message: string): void => {
      writing = writing
        .then(async () => {
          await this.d.events.record(archive, type, reason, message);
        })
        .catch(() => undefined);
    };
    const retention: RetentionOptions | undefined =
      archive.spec.retention?.policy === "SinceOldestBackup"
        ? {
            keptBackups: () => keptBackups(this.d.cache.list<MySQLBackup>(MySQLBackupKind.resource, { namespace: ns }), archive.spec.instanceRef.name),
            minimumAgeMs: (archive.spec.retention.minimumAgeHours ?? 24) * 3_600_000,
            onPruned: (files, choice) =>
              event(
                "Normal",
                "Pruned",
                `Deleted ${files.length} archived file(s) ${files[0]?.key} … ${files.at(-1)?.key} (up to GTID position "${files.at(-1)?.endPosition}"), which no kept backup needs; the archive now starts at "${files.at(-1)?.endPosition}"${choice.oldestBackup ? ` (the oldest kept backup is ${choice.oldestBackup})` : ""}`,
              ),
            onFailed: (err) => event("Warning", "PruneFailed", `Could not delete archived files no kept backup needs (retried later): ${err.message}`),
          }
        : undefined;
    try {
      // A new leader streams once the previous one has certainly stopped: both would write the same next file.
      const fenceMs = this.d.leadership.previousLeaderFenceMs();
      if (fenceMs > 0) {
        ctx.log.info("binlog archive waits until the previous leader has certainly stopped", { archive: `${ns}/${name}`, waitMs: fenceMs });
        await sleep(fenceMs, undefined, { signal });
      }
      archiver = new BinlogArchiver({
        storage: archiveStorage(store),
        target: async () => {
          // The instance as it is now: a cluster's published instance names the primary's Service.
          const instance = this.d.cache.get<MySQLInstance>(MySQLInstanceKind.resource, ns, archive.spec.instanceRef.name);
          if (!instance) throw new BackupError("DatabaseUnreachable", `MySQLInstance ${archive.spec.instanceRef.name} not found in namespace ${ns}`, { retryable: true });
          return engineConnection(await this.d.connector.connectionSettings(instance));
        },
        serverId: archive.spec.serverId ?? defaultServerId(ns, name),
        rotation: {
          ...(rotation?.maxFileBytes !== undefined ? { maxFileBytes: rotation.maxFileBytes } : {}),
          ...(rotation?.maxFileAgeSeconds !== undefined ? { maxFileAgeMs: rotation.maxFileAgeSeconds * 1000 } : {}),
        },
        ...(retention ? { retention } : {}),
        signal,
        onProgress: publish,
      });
      await archiver.run();
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      signal.removeEventListener("abort", refuse);
      clearInterval(refresh);
      store.destroy();
      if (signal.reason instanceof LeadershipLostError) ctx.log.warn("binlog archive stopped: this manager lost leadership", { archive: `${ns}/${name}` });
      await writing;
    }
  }
}
