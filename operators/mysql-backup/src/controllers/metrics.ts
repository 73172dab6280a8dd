// The mysql-backup operator's per-object metrics (README "Monitoring"). Every
// value is read from the object's status, never from memory of what a run
// did: a restarted manager (or a new leader) exports the same values on its
// first pass over the objects.
import type { Metrics, ObjectGauge, ObjectKey } from "@stateward/core";
import type { MySQLBackup, MySQLBackupSchedule } from "../api.ts";
import type { RunStatus } from "./run-status.ts";
import { nextDueTime } from "../schedule/due-times.ts";

/** Seconds since the epoch of a Kubernetes timestamp; undefined when absent or unreadable. */
function epochSeconds(time: unknown): number | undefined {
  const ms = typeof time === "string" ? Date.parse(time) : NaN;
  return Number.isFinite(ms) ? ms / 1000 : undefined;
}

function setOrClear(gauge: ObjectGauge, obj: ObjectKey, value: number | undefined): void {
  if (value === undefined) gauge.clear(obj);
  else gauge.set(obj, value);
}

/** How long a completed backup or restore took and how fast it went: `stateward_<kind>_duration_seconds`, `..._throughput_bytes_per_second`. */
export class RunMetrics {
  private readonly duration: ObjectGauge;
  private readonly throughput: ObjectGauge;
  private readonly forgetObject: (obj: ObjectKey) => void;
  private readonly bytesField: "uncompressedBytes" | "bytes";

  /** `bytesField`: the status field with the bytes of SQL the run produced or applied. */
  constructor(metrics: Metrics, kind: "mysqlbackup" | "mysqlrestore", bytesField: "uncompressedBytes" | "bytes") {
    this.bytesField = bytesField;
    const m = metrics.objects(kind);
    const noun = kind === "mysqlbackup" ? "backup" : "restore";
    this.duration = m.gauge("duration_seconds", `How long the completed ${noun} took (status.durationSeconds).`);
    this.throughput = m.gauge("throughput_bytes_per_second", `Bytes of SQL the completed ${noun} ${noun === "backup" ? "dumped" : "applied"} per second of its duration (at least 1 s).`);
    this.forgetObject = (obj) => m.forget(obj);
  }

  completed(obj: { metadata: ObjectKey; status?: RunStatus }): void {
    const seconds = obj.status?.durationSeconds;
    const bytes = obj.status?.[this.bytesField];
    if (typeof seconds !== "number") return;
    this.duration.set(obj.metadata, seconds);
    if (typeof bytes === "number") this.throughput.set(obj.metadata, bytes / Math.max(seconds, 1));
  }

  forget(obj: ObjectKey): void {
    this.forgetObject(obj);
  }
}

/** Per MySQLBackupSchedule: its newest Completed backup (when and how big) and how often it is due, for "no backup for twice the interval". */
export class ScheduleMetrics {
  private readonly lastSuccess: ObjectGauge;
  private readonly lastSize: ObjectGauge;
  private readonly interval: ObjectGauge;
  private readonly created: ObjectGauge;
  private readonly forgetObject: (obj: ObjectKey) => void;

  constructor(metrics: Metrics) {
    const m = metrics.objects("mysqlbackupschedule");
    this.lastSuccess = m.gauge("last_success_timestamp_seconds", "When the schedule's newest Completed backup completed (seconds since the epoch).");
    this.lastSize = m.gauge("last_success_size_bytes", "Bytes stored in the bucket by the schedule's newest Completed backup.");
    this.interval = m.gauge("interval_seconds", "Seconds between the schedule's next two due times; absent while suspended.");
    this.created = m.gauge("created_timestamp_seconds", "When the schedule was created (seconds since the epoch): the age of a schedule with no Completed backup yet.");
    this.forgetObject = (obj) => m.forget(obj);
  }

  observe(sched: MySQLBackupSchedule, newest: MySQLBackup | undefined, now: Date): void {
    const obj = sched.metadata;
    setOrClear(this.created, obj, epochSeconds(obj.creationTimestamp));
    setOrClear(this.lastSuccess, obj, epochSeconds(newest?.status?.completionTime));
    setOrClear(this.lastSize, obj, newest?.status?.compressedBytes);
    const tz = sched.spec.timeZone ?? "UTC";
    const next = sched.spec.suspend ? undefined : nextDueTime(sched.spec.schedule, tz, now);
    const after = next && nextDueTime(sched.spec.schedule, tz, next);
    setOrClear(this.interval, obj, next && after ? (after.getTime() - next.getTime()) / 1000 : undefined);
  }

  forget(obj: ObjectKey): void {
    this.forgetObject(obj);
  }
}
