// Due times of a cron schedule in an IANA time zone, computed from state (the
// last schedule time) rather than from timers — so a restart, a leader change
// or a timer that fires twice never changes which instants are due.
//
// Syntax is node-cron's (it parses and validates the expressions):
// five fields (minute hour day-of-month month day-of-week), an optional
// leading seconds field, names (MON, JAN), ranges, steps, lists, and macros
// such as @daily and @hourly. Day-of-month and day-of-week must BOTH match
// (node-cron's rule; Vixie cron ORs them when both are restricted).
//
// Daylight-saving time, in the schedule's zone:
// - a wall-clock time that does not exist (spring forward, e.g. 02:30 on the
//   night clocks jump from 02:00 to 03:00) is skipped;
// - a wall-clock time that happens twice (fall back) is due once, at its
//   first occurrence.
import cron from "node-cron";

export class ScheduleError extends Error {
  override name = "ScheduleError";
}

/** Throws ScheduleError with a message a user can act on. */
export function validateSchedule(expression: string, timeZone: string): void {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone });
  } catch {
    throw new ScheduleError(`unknown time zone "${timeZone}"; use an IANA name such as Europe/Berlin or UTC`);
  }
  const detail = cron.validateDetailed(expression);
  if (!detail.valid) {
    const why = detail.errors.map((e) => `${e.field}: ${e.message}`).join("; ");
    throw new ScheduleError(`invalid cron expression "${expression}": ${why || "not understood"}`);
  }
}

interface WallTime {
  key: string;
  hour: number;
}

/** Wall-clock time in a zone, formatted once per instant. */
function wallClock(format: Intl.DateTimeFormat, ms: number): WallTime {
  const p: Record<string, string> = {};
  for (const part of format.formatToParts(ms)) p[part.type] = part.value;
  const hour = Number(p.hour) % 24;
  return { key: `${p.year}-${p.month}-${p.day} ${hour}:${p.minute}:${p.second}`, hour };
}

export interface DueTimeOptions {
  /** Stop looking after this many results. Defaults to 1000. */
  limit?: number;
}

/**
 * Every due time t with after < t <= until, in order (second precision).
 * The scan skips hours that cannot match, so a yearly schedule costs ~9,000
 * steps per year scanned, not half a million.
 */
export function dueTimesBetween(expression: string, timeZone: string, after: Date, until: Date, opts: DueTimeOptions = {}): Date[] {
  validateSchedule(expression, timeZone);
  const limit = opts.limit ?? 1000;
  const fields = cron.parse(expression);
  const hours = new Set(fields.hour);
  const everySecond = !(fields.second.length === 1 && fields.second[0] === 0);
  const step = everySecond ? 1000 : 60_000;
  const format = new Intl.DateTimeFormat("en-US", {
    timeZone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
  });
  const task = cron.createTask(expression, () => undefined, { timezone: timeZone });
  const out: Date[] = [];
  try {
    // First candidate: the next whole step after `after`.
    let t = Math.floor(after.getTime() / step) * step + step;
    const end = until.getTime();
    while (t <= end && out.length < limit) {
      const wall = wallClock(format, t);
      if (!hours.has(wall.hour)) {
        // Jump to the next whole UTC hour (zones differ from UTC by whole or half hours; the scan re-checks each hour).
        const nextHalfHour = Math.floor(t / 1_800_000) * 1_800_000 + 1_800_000;
        t = nextHalfHour;
        continue;
      }
      if (task.match(new Date(t))) {
        // The second occurrence of a repeated wall time (fall back) reads the same one hour earlier.
        const repeated = wallClock(format, t - 3_600_000).key === wall.key;
        if (!repeated) out.push(new Date(t));
      }
      t += step;
    }
  } finally {
    void task.destroy();
  }
  return out;
}

/** The first due time strictly after `after`, looking at most `horizonDays` ahead (default 366 × 4 + 1, a leap cycle). */
export function nextDueTime(expression: string, timeZone: string, after: Date, horizonDays = 366 * 4 + 1): Date | undefined {
  // Widen the window step by step so frequent schedules stay cheap.
  for (const days of [1, 31, horizonDays]) {
    const found = dueTimesBetween(expression, timeZone, after, new Date(after.getTime() + days * 86_400_000), { limit: 1 });
    if (found[0]) return found[0];
  }
  return undefined;
}
