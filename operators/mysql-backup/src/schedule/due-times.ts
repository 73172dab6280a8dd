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
  /** The wall clock read as if it were UTC, in ms: `local - t` is the zone's offset at t (whole seconds). */
  local: number;
}

/** Wall-clock time in a zone, formatted once per instant. */
function wallClock(format: Intl.DateTimeFormat, ms: number): WallTime {
  const p: Record<string, string> = {};
  for (const part of format.formatToParts(ms)) p[part.type] = part.value;
  const hour = Number(p.hour) % 24;
  const local = Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), hour, Number(p.minute), Number(p.second)) + mod(ms, 1000);
  return { key: `${p.year}-${p.month}-${p.day} ${hour}:${p.minute}:${p.second}`, hour, local };
}

function mod(a: number, m: number): number {
  return ((a % m) + m) % m;
}

const HOUR = 3_600_000;
/**
 * How far back a repeated wall time's first occurrence is looked for: the largest fall-back since 1972 is
 * Antarctica/Troll's two hours (+02 to +00); Australia/Lord_Howe's is half an hour.
 */
const FALL_BACK_LOOKBACK = 3 * HOUR;

export interface DueTimeOptions {
  /** Stop looking after this many results. Defaults to 1000. */
  limit?: number;
}

/**
 * Every due time t with after < t <= until, in order (second precision).
 * The scan skips hours that cannot match, so a yearly schedule costs one step per hour scanned plus one per
 * minute of its matching hours (~30,000 steps per year), not half a million.
 *
 * Steps are taken on the zone's wall clock, not UTC's: a skipped hour jumps to the next local hh:00:00 and
 * a matching hour steps through local whole minutes (seconds), whatever the zone's offset — +05:45
 * (Asia/Kathmandu), +08:45 (Australia/Eucla), +12:45/+13:45 (Pacific/Chatham), even one with seconds. Where the
 * offset changes between two steps (DST, or a zone changing its standard time) the scan goes back to the
 * first instant with the new offset (a bisection to the second, a dozen reads per transition), so a wall
 * time right after a transition that happens mid-hour (Chatham's at 02:45) is not jumped over.
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
  const offsetAt = (ms: number) => wallClock(format, ms).local - ms;
  const task = cron.createTask(expression, () => undefined, { timezone: timeZone });
  const out: Date[] = [];
  try {
    const start = after.getTime();
    const end = until.getTime();
    // The instant last looked at and the zone's offset there.
    let prev = start;
    let prevOffset = offsetAt(start);
    // First candidate: the next whole step of the wall clock after `after`.
    let t = start - mod(start + prevOffset, step) + step;
    while (t <= end && out.length < limit) {
      let wall = wallClock(format, t);
      if (wall.local - t !== prevOffset) {
        // The offset changed in (prev, t]: look from the first instant with the new offset, which a jump or
        // a step under the old offset may have passed (one change per jump: zones change at most twice a year).
        // On whole seconds (offsets change at one): `after` may carry milliseconds, and a gap that is not
        // a whole number of seconds would leave the halving stuck one second short of its end.
        let lo = Math.floor(prev / 1000) * 1000;
        let hi = t;
        while (hi - lo > 1000) {
          const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
          if (offsetAt(mid) === prevOffset) lo = mid;
          else hi = mid;
        }
        if (hi < t) {
          t = hi;
          wall = wallClock(format, t);
        }
      }
      prev = t;
      prevOffset = wall.local - t;
      if (!hours.has(wall.hour)) {
        // Jump to the next hh:00:00 on the zone's clock.
        t += HOUR - mod(wall.local, HOUR);
        continue;
      }
      if (task.match(new Date(t)) && !repeated(format, t, wall)) out.push(new Date(t));
      t += step - mod(wall.local, step);
    }
  } finally {
    void task.destroy();
  }
  return out;
}

/**
 * Whether the wall time at t already happened (its second occurrence after clocks fall back). A fall-back
 * by d shows as an offset d larger a little earlier; the wall time then read the same d earlier.
 */
function repeated(format: Intl.DateTimeFormat, t: number, wall: WallTime): boolean {
  const before = t - FALL_BACK_LOOKBACK;
  const d = wallClock(format, before).local - before - (wall.local - t);
  return d > 0 && wallClock(format, t - d).key === wall.key;
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
