import { describe, expect, it } from "vitest";
import { ScheduleError, dueTimesBetween, nextDueTime, validateSchedule } from "./due-times.ts";

const iso = (ds: Date[]) => ds.map((d) => d.toISOString());

describe("dueTimesBetween", () => {
  it("gives every due time of a 5-field schedule in a window, exclusive of the start", () => {
    expect(iso(dueTimesBetween("*/15 * * * *", "UTC", new Date("2026-05-01T10:00:00Z"), new Date("2026-05-01T11:00:00Z")))).toEqual([
      "2026-05-01T10:15:00.000Z", "2026-05-01T10:30:00.000Z", "2026-05-01T10:45:00.000Z", "2026-05-01T11:00:00.000Z",
    ]);
  });

  it("supports a leading seconds field", () => {
    expect(iso(dueTimesBetween("*/20 * * * * *", "UTC", new Date("2026-05-01T10:00:00Z"), new Date("2026-05-01T10:01:00Z")))).toEqual([
      "2026-05-01T10:00:20.000Z", "2026-05-01T10:00:40.000Z", "2026-05-01T10:01:00.000Z",
    ]);
  });

  it("reads the schedule in its time zone: 03:00 in Berlin is 01:00 UTC in summer and 02:00 UTC in winter", () => {
    expect(iso(dueTimesBetween("0 3 * * *", "Europe/Berlin", new Date("2026-07-01T00:00:00Z"), new Date("2026-07-02T23:00:00Z")))).toEqual([
      "2026-07-01T01:00:00.000Z", "2026-07-02T01:00:00.000Z",
    ]);
    expect(iso(dueTimesBetween("@daily", "Europe/Berlin", new Date("2026-12-01T00:00:00Z"), new Date("2026-12-02T00:00:00Z")))).toEqual([
      "2026-12-01T23:00:00.000Z",
    ]);
  });

  it("skips a wall time that does not exist when clocks spring forward (New York, 2026-03-08)", () => {
    const got = dueTimesBetween("30 2 * * *", "America/New_York", new Date("2026-03-07T00:00:00Z"), new Date("2026-03-10T00:00:00Z"));
    // 02:30 EST on the 7th (07:30Z), no 02:30 on the 8th, 02:30 EDT on the 9th (06:30Z).
    expect(iso(got)).toEqual(["2026-03-07T07:30:00.000Z", "2026-03-09T06:30:00.000Z"]);
  });

  it("runs a repeated wall time once when clocks fall back (New York, 2026-11-01)", () => {
    const got = dueTimesBetween("30 1 * * *", "America/New_York", new Date("2026-10-31T00:00:00Z"), new Date("2026-11-03T00:00:00Z"));
    // 01:30 EDT on the 31st (05:30Z); on Nov 1st 01:30 happens at 05:30Z (EDT) and 06:30Z (EST): only the first; then 06:30Z on the 2nd.
    expect(iso(got)).toEqual(["2026-10-31T05:30:00.000Z", "2026-11-01T05:30:00.000Z", "2026-11-02T06:30:00.000Z"]);
  });

  it("keeps hourly schedules regular across both transitions (Berlin)", () => {
    const spring = dueTimesBetween("0 * * * *", "Europe/Berlin", new Date("2026-03-29T00:00:00Z"), new Date("2026-03-29T03:00:00Z"));
    expect(iso(spring)).toEqual(["2026-03-29T01:00:00.000Z", "2026-03-29T02:00:00.000Z", "2026-03-29T03:00:00.000Z"]);
    const autumn = dueTimesBetween("0 * * * *", "Europe/Berlin", new Date("2026-10-24T23:30:00Z"), new Date("2026-10-25T02:30:00Z"));
    // Local 02:00 happens twice (00:00Z CEST and 01:00Z CET): due once.
    expect(iso(autumn)).toEqual(["2026-10-25T00:00:00.000Z", "2026-10-25T02:00:00.000Z"]);
  });
});

describe("dueTimesBetween in zones whose offset is not a whole or half hour", () => {
  // 03:00 at +05:45 is 21:15Z the day before: a scan that jumps between UTC :00 and :30 never sees local :00-:14.
  it("fires 0 3 * * * in Asia/Kathmandu (+05:45) every day", () => {
    expect(iso(dueTimesBetween("0 3 * * *", "Asia/Kathmandu", new Date("2026-05-01T00:00:00Z"), new Date("2026-05-04T00:00:00Z")))).toEqual([
      "2026-05-01T21:15:00.000Z", "2026-05-02T21:15:00.000Z", "2026-05-03T21:15:00.000Z",
    ]);
  });

  it("fires 10 3 * * *, 0 3,4 * * * and @daily in Asia/Kathmandu", () => {
    const after = new Date("2026-05-01T00:00:00Z");
    const until = new Date("2026-05-03T00:00:00Z");
    expect(iso(dueTimesBetween("10 3 * * *", "Asia/Kathmandu", after, until))).toEqual(["2026-05-01T21:25:00.000Z", "2026-05-02T21:25:00.000Z"]);
    expect(iso(dueTimesBetween("0 3,4 * * *", "Asia/Kathmandu", after, until))).toEqual([
      "2026-05-01T21:15:00.000Z", "2026-05-01T22:15:00.000Z", "2026-05-02T21:15:00.000Z", "2026-05-02T22:15:00.000Z",
    ]);
    expect(iso(dueTimesBetween("@daily", "Asia/Kathmandu", after, until))).toEqual(["2026-05-01T18:15:00.000Z", "2026-05-02T18:15:00.000Z"]);
  });

  it("fires every day of a week, once a day (Asia/Kathmandu)", () => {
    const got = dueTimesBetween("0 3 * * *", "Asia/Kathmandu", new Date("2026-05-01T00:00:00Z"), new Date("2026-05-08T00:00:00Z"));
    expect(got).toHaveLength(7);
    expect(got.every((d) => d.toISOString().endsWith("T21:15:00.000Z"))).toBe(true);
  });

  it("fires in Australia/Eucla (+08:45)", () => {
    const after = new Date("2026-05-01T00:00:00Z");
    const until = new Date("2026-05-03T00:00:00Z");
    expect(iso(dueTimesBetween("0 3 * * *", "Australia/Eucla", after, until))).toEqual(["2026-05-01T18:15:00.000Z", "2026-05-02T18:15:00.000Z"]);
    expect(iso(dueTimesBetween("5 9 * * *", "Australia/Eucla", after, until))).toEqual(["2026-05-01T00:20:00.000Z", "2026-05-02T00:20:00.000Z"]);
  });

  it("follows Pacific/Chatham across spring forward (+12:45 to +13:45 at 02:45 local, 2026-09-27)", () => {
    const after = new Date("2026-09-24T00:00:00Z");
    const until = new Date("2026-09-29T00:00:00Z");
    // 03:00 does not exist on the 27th (02:45 becomes 03:45).
    expect(iso(dueTimesBetween("0 3 * * *", "Pacific/Chatham", after, until))).toEqual([
      "2026-09-24T14:15:00.000Z", "2026-09-25T14:15:00.000Z", "2026-09-27T13:15:00.000Z", "2026-09-28T13:15:00.000Z",
    ]);
    // 03:50 does: five minutes after the change.
    expect(iso(dueTimesBetween("50 3 * * *", "Pacific/Chatham", after, until))).toEqual([
      "2026-09-24T15:05:00.000Z", "2026-09-25T15:05:00.000Z", "2026-09-26T14:05:00.000Z", "2026-09-27T14:05:00.000Z", "2026-09-28T14:05:00.000Z",
    ]);
  });

  it("follows Pacific/Chatham across fall back (+13:45 to +12:45 at 03:45 local, 2026-04-05), a repeated 03:00 due once", () => {
    const got = dueTimesBetween("0 3 * * *", "Pacific/Chatham", new Date("2026-04-03T00:00:00Z"), new Date("2026-04-06T00:00:00Z"));
    expect(iso(got)).toEqual(["2026-04-03T13:15:00.000Z", "2026-04-04T13:15:00.000Z", "2026-04-05T14:15:00.000Z"]);
  });

  it("is due once at a wall time repeated by a half-hour fall back (Australia/Lord_Howe, 2026-04-05)", () => {
    const got = dueTimesBetween("45 1 * * *", "Australia/Lord_Howe", new Date("2026-04-03T00:00:00Z"), new Date("2026-04-06T00:00:00Z"));
    // 01:45 +11 on the 4th and 5th; on the 5th 02:00 +11 becomes 01:30 +10:30, so 01:45 comes again at 15:15Z: not due.
    expect(iso(got)).toEqual(["2026-04-03T14:45:00.000Z", "2026-04-04T14:45:00.000Z", "2026-04-05T15:15:00.000Z"]);
  });

  it("is due once at a wall time repeated by a two-hour fall back (Antarctica/Troll, 2026-10-25)", () => {
    const got = dueTimesBetween("30 1 * * *", "Antarctica/Troll", new Date("2026-10-23T12:00:00Z"), new Date("2026-10-26T12:00:00Z"));
    // 01:30 +02 on the 24th and 25th; at 01:00Z on the 25th 03:00 +02 becomes 01:00 +00, so 01:30 comes again at 01:30Z: not due.
    expect(iso(got)).toEqual(["2026-10-23T23:30:00.000Z", "2026-10-24T23:30:00.000Z", "2026-10-26T01:30:00.000Z"]);
  });

  it("does not fire again at the second occurrence when the window starts between the two", () => {
    const got = dueTimesBetween("0 3 * * *", "Pacific/Chatham", new Date("2026-04-04T13:30:00Z"), new Date("2026-04-05T00:00:00Z"));
    expect(iso(got)).toEqual([]);
  });
});

describe("nextDueTime", () => {
  it("finds a yearly schedule far ahead", () => {
    expect(nextDueTime("0 0 1 1 *", "UTC", new Date("2026-01-01T00:00:00Z"))?.toISOString()).toBe("2027-01-01T00:00:00.000Z");
  });

  it("refuses an expression that can never match (Feb 30th) instead of searching forever", () => {
    expect(() => nextDueTime("0 0 30 2 *", "UTC", new Date("2026-01-01T00:00:00Z"))).toThrow(ScheduleError);
  });

  it("finds the next due time in a +05:45 zone (Asia/Kathmandu)", () => {
    expect(nextDueTime("0 3 * * *", "Asia/Kathmandu", new Date("2026-05-01T00:00:00Z"))?.toISOString()).toBe("2026-05-01T21:15:00.000Z");
    expect(nextDueTime("@daily", "Asia/Kathmandu", new Date("2026-05-01T18:15:00Z"))?.toISOString()).toBe("2026-05-02T18:15:00.000Z");
    expect(nextDueTime("0 0 1 1 *", "Asia/Kathmandu", new Date("2026-01-01T00:00:00Z"))?.toISOString()).toBe("2026-12-31T18:15:00.000Z");
  });

  it("ends when asked from an instant with milliseconds just before a clock change (as the reconciler asks, with the clock's now)", () => {
    // Berlin springs forward at 01:00 UTC on 2026-03-29 and falls back at 01:00 UTC on 2026-10-25.
    expect(nextDueTime("* * * * *", "Europe/Berlin", new Date("2026-03-29T00:59:00.250Z"))?.toISOString()).toBe("2026-03-29T01:00:00.000Z");
    // 02:00-02:59 local come again after the change: each was due the first time, so the next is 03:00 CET.
    expect(nextDueTime("* * * * *", "Europe/Berlin", new Date("2026-10-25T00:59:30.250Z"))?.toISOString()).toBe("2026-10-25T02:00:00.000Z");
    expect(nextDueTime("*/5 * * * * *", "Europe/Berlin", new Date("2026-03-29T00:59:59.999Z"))?.toISOString()).toBe("2026-03-29T01:00:00.000Z");
  });

  it("is undefined when nothing is due within the horizon", () => {
    expect(nextDueTime("0 0 1 1 *", "UTC", new Date("2026-01-01T00:00:00Z"), 30)).toBeUndefined();
  });
});

describe("validateSchedule", () => {
  it("names the problem for a bad time zone or expression", () => {
    expect(() => validateSchedule("0 3 * * *", "Mars/Olympus")).toThrow(ScheduleError);
    expect(() => validateSchedule("0 3 * * *", "Mars/Olympus")).toThrow(/unknown time zone "Mars\/Olympus"/);
    expect(() => validateSchedule("61 * * * *", "UTC")).toThrow(/invalid cron expression "61 \* \* \* \*"/);
  });
});
