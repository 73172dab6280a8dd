// MySQLBackupSchedule: what is due comes from state in the API server —
// `status.lastScheduleTime` and the deterministic name of each due time's
// backup. A manager restart, a leader change or a wake-up that comes twice
// therefore creates exactly one MySQLBackup per due time: a second attempt
// meets AlreadyExists.
//
// The controller wakes for the next due time through one mechanism only: the
// reconcile's `requeueAfter`, a delayed add on the controller's own queue
// (wakeDelayMs). It goes away with the controller when the manager stops or
// loses leadership, and every reconcile (a spec change, a change of one of its
// backups, a new leader's first pass) sets it again from state.
//
// A schedule's backups are found by their label, not owned: deleting the
// schedule keeps them (see disown).
import {
  isAlreadyExists,
  isNotFound,
  kubeTime,
  readyStatus,
  writeStatus,
  type Cache,
  type Clock,
  type EventRecorder,
  type KubeClient,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
} from "@stateward/core";
import { MySQLBackupKind, MySQLBackupScheduleKind, type MySQLBackup, type MySQLBackupSchedule } from "../api.ts";
import type { ScheduleMetrics } from "./metrics.ts";
import { restoresReading } from "./restore-index.ts";
import { ScheduleError, dueTimesBetween, nextDueTime, validateSchedule } from "../schedule/due-times.ts";

/** Every backup a schedule creates carries this label with the schedule's name. */
export const SCHEDULE_LABEL = "stateward.io/backup-schedule";
const RT = MySQLBackupScheduleKind.resource;
const BK = MySQLBackupKind.resource;

/** `<schedule>-<yyyymmddhhmmss>` in UTC: one name per due time. */
export function backupNameFor(schedule: string, due: Date): string {
  return `${schedule}-${kubeTime(due).replace(/[-:TZ]/g, "")}`;
}

export function parseAge(text: string): number {
  const m = /^([0-9]+)(s|m|h|d)$/.exec(text);
  if (!m) throw new ScheduleError(`invalid maxAge "${text}"; use e.g. 720h or 30d`);
  return Number(m[1]) * { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as "s" | "m" | "h" | "d"];
}

/**
 * Completed backups to delete: beyond `keepLast` (newest first) or older
 * than `maxAge` — never the newest Completed one. Failed or running backups
 * are never counted and never deleted here.
 */
export function backupsToPrune(backups: readonly MySQLBackup[], retention: MySQLBackupSchedule["spec"]["retention"], now: Date): MySQLBackup[] {
  if (!retention) return [];
  const completed = backups
    .filter((b) => b.status?.phase === "Completed")
    .sort((a, b) => (b.status?.completionTime ?? "").localeCompare(a.status?.completionTime ?? ""));
  const maxAgeMs = retention.maxAge ? parseAge(retention.maxAge) : undefined;
  return completed.filter((b, i) => {
    if (i === 0) return false;
    if (retention.keepLast !== undefined && i >= retention.keepLast) return true;
    const done = Date.parse(b.status?.completionTime ?? "");
    return maxAgeMs !== undefined && Number.isFinite(done) && now.getTime() - done > maxAgeMs;
  });
}

/**
 * A due time is a whole second; a wake-up that came a moment before it (the
 * queue's timer and the wall clock are different clocks) would find nothing
 * due and wait again, so the wake is set this much after it.
 */
const WAKE_MARGIN_MS = 250;

/** How long after `now` the controller wakes for the due time `next`: just after it. */
export function wakeDelayMs(next: Date, now: Date): number {
  return Math.max(0, next.getTime() - now.getTime()) + WAKE_MARGIN_MS;
}

export interface ScheduleReconcilerDeps {
  client: KubeClient;
  cache: Cache;
  events: EventRecorder;
  clock: Clock;
  metrics: ScheduleMetrics;
}

export class ScheduleReconciler implements Reconciler {
  private readonly d: ScheduleReconcilerDeps;

  constructor(deps: ScheduleReconcilerDeps) {
    this.d = deps;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const ns = req.namespace ?? "";
    const sched = this.d.cache.get<MySQLBackupSchedule>(RT, ns, req.name);
    if (!sched) {
      this.d.metrics.forget({ namespace: ns, name: req.name });
      return undefined;
    }
    if (sched.metadata.deletionTimestamp) return undefined;
    const spec = sched.spec;
    const tz = spec.timeZone ?? "UTC";
    try {
      validateSchedule(spec.schedule, tz);
      if (spec.retention?.maxAge) parseAge(spec.retention.maxAge);
    } catch (err) {
      if (!(err instanceof ScheduleError)) throw err;
      await this.writeStatus(sched, {}, { status: "False", reason: "InvalidSchedule", message: err.message });
      await this.d.events.record(sched, "Warning", "InvalidSchedule", err.message);
      return undefined;
    }
    const now = this.d.clock.now();
    const owned = this.d.cache.list<MySQLBackup>(BK, { namespace: ns }).filter((b) => b.metadata.labels?.[SCHEDULE_LABEL] === req.name);
    for (const b of owned) await this.disown(sched, b);
    const active = owned.filter((b) => b.status?.phase !== "Completed" && b.status?.phase !== "Failed");
    const last = new Date(sched.status?.lastScheduleTime ?? sched.metadata.creationTimestamp ?? kubeTime(now));
    let lastScheduleTime = sched.status?.lastScheduleTime;

    if (!spec.suspend) {
      const due = dueTimesBetween(spec.schedule, tz, last, now, { limit: 100_000 });
      const latest = due[due.length - 1];
      if (latest) {
        lastScheduleTime = kubeTime(latest);
        if (due.length > 1) {
          await this.d.events.record(sched, "Warning", "MissedSchedules", `${due.length - 1} earlier due times were missed (no manager ran, or the schedule was suspended); only the latest, ${kubeTime(latest)}, is considered`);
        }
        const lateSeconds = (now.getTime() - latest.getTime()) / 1000;
        const deadline = spec.startingDeadlineSeconds ?? 300;
        if (owned.some((b) => b.metadata.name === backupNameFor(req.name, latest))) {
          // This due time's backup exists: an earlier pass made it, and its lastScheduleTime is not seen
          // (the status write after the create failed, or the cache is behind it). It is this due time's
          // backup, not one to replace or to wait for: nothing more is done for it.
        } else if (lateSeconds > deadline) {
          await this.d.events.record(sched, "Warning", "MissedDeadline", `Skipped the backup due at ${kubeTime(latest)}: ${Math.round(lateSeconds)} s late, more than startingDeadlineSeconds (${deadline})`);
        } else if (active.length > 0 && (spec.concurrencyPolicy ?? "Forbid") === "Forbid") {
          await this.d.events.record(sched, "Normal", "SkippedConcurrent", `Skipped the backup due at ${kubeTime(latest)}: ${active.map((b) => b.metadata.name).join(", ")} still running (concurrencyPolicy Forbid)`);
        } else {
          if (spec.concurrencyPolicy === "Replace") {
            for (const b of active) await this.d.client.delete(BK, ns, b.metadata.name ?? "").catch((err: unknown) => {
              if (!isNotFound(err)) throw err;
            });
          }
          await this.createBackup(sched, latest, ctx);
        }
      }
    }

    for (const b of backupsToPrune(owned, spec.retention, now)) {
      // A backup a restore still needs stays until the restore is done: pruned at a later pass (the next due
      // time, or the next change of a backup of this schedule), never from under the restore reading it.
      const readers = restoresReading(this.d.cache, ns, b.metadata.name ?? "");
      if (readers.length > 0) {
        const names = readers.map((r) => r.metadata.name ?? "").join(", ");
        await this.d.events.record(sched, "Normal", "PruneDeferred", `Kept MySQLBackup ${b.metadata.name ?? ""} past its retention for now: MySQLRestore ${names} has not finished with it`);
        continue;
      }
      await this.d.client.delete(BK, ns, b.metadata.name ?? "").catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
      await this.d.events.record(sched, "Normal", "Pruned", `Deleted MySQLBackup ${b.metadata.name} (retention)`);
    }

    const next = spec.suspend ? undefined : nextDueTime(spec.schedule, tz, now);
    const newest = owned
      .filter((b) => b.status?.phase === "Completed")
      .sort((a, b) => (b.status?.completionTime ?? "").localeCompare(a.status?.completionTime ?? ""))[0];
    this.d.metrics.observe(sched, newest, now);
    await this.writeStatus(
      sched,
      {
        ...(lastScheduleTime ? { lastScheduleTime } : {}),
        ...(next ? { nextScheduleTime: kubeTime(next) } : {}),
        ...(newest ? { lastSuccessfulBackup: newest.metadata.name, lastSuccessfulTime: newest.status?.completionTime } : {}),
        active: active.map((b) => b.metadata.name ?? "").sort(),
      },
      spec.suspend
        ? { status: "True", reason: "Suspended", message: "The schedule is suspended; no backups are created" }
        : { status: "True", reason: "Scheduled", message: next ? `Next backup due at ${kubeTime(next)}` : "No further due time within four years" },
    );
    // The one wake-up for the next due time (see the file comment); suspended, a spec change wakes it.
    return next ? { requeueAfter: wakeDelayMs(next, now) } : undefined;
  }

  private async createBackup(sched: MySQLBackupSchedule, due: Date, ctx: ReconcileContext): Promise<void> {
    const ns = sched.metadata.namespace ?? "";
    const name = backupNameFor(sched.metadata.name ?? "", due);
    try {
      await this.d.client.create<MySQLBackup>(BK, {
        apiVersion: MySQLBackupKind.apiVersion,
        kind: MySQLBackupKind.kind,
        metadata: {
          name,
          namespace: ns,
          labels: { ...(sched.metadata.labels ?? {}), [SCHEDULE_LABEL]: sched.metadata.name ?? "" },
          annotations: { "stateward.io/scheduled-at": kubeTime(due) },
        },
        spec: structuredClone(sched.spec.backupTemplate),
      });
      ctx.log.info("scheduled backup created", { backup: name, due: kubeTime(due) });
      await this.d.events.record(sched, "Normal", "BackupCreated", `Created MySQLBackup ${name} for the due time ${kubeTime(due)}`);
    } catch (err) {
      // Another leader (or a wake-up that came twice) already created this due time's backup.
      if (!isAlreadyExists(err)) throw err;
    }
  }

  /**
   * Takes this schedule's owner reference off a backup an earlier release created with one. The garbage
   * collector deletes what a deleted object owns: deleting (or re-creating) a schedule deleted every backup it
   * had made, and with deletionPolicy Delete their stored data too — a whole backup history, gone with a
   * `kubectl delete` of the object that only says when to take backups. A backup is the user's data: it
   * stays until it is deleted itself or pruned by retention.
   */
  private async disown(sched: MySQLBackupSchedule, backup: MySQLBackup): Promise<void> {
    const refs = backup.metadata.ownerReferences ?? [];
    const others = refs.filter((r) => r.uid !== sched.metadata.uid);
    if (others.length === refs.length) return;
    await this.d.client.patch(BK, backup.metadata.namespace, backup.metadata.name ?? "", {
      metadata: { ownerReferences: others.length > 0 ? others : null, resourceVersion: backup.metadata.resourceVersion },
    });
  }

  /** Written only when it changed; a conflict fails the reconcile, which runs again on the new version. */
  private async writeStatus(sched: MySQLBackupSchedule, fields: Partial<NonNullable<MySQLBackupSchedule["status"]>>, ready: { status: "True" | "False"; reason: string; message: string }): Promise<void> {
    await writeStatus(this.d.client, RT, sched, readyStatus(fields, ready));
  }
}
