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

describe("nextDueTime", () => {
  it("finds a yearly schedule far ahead", () => {
    expect(nextDueTime("0 0 1 1 *", "UTC", new Date("2026-01-01T00:00:00Z"))?.toISOString()).toBe("2027-01-01T00:00:00.000Z");
  });

  it("refuses an expression that can never match (Feb 30th) instead of searching forever", () => {
    expect(() => nextDueTime("0 0 30 2 *", "UTC", new Date("2026-01-01T00:00:00Z"))).toThrow(ScheduleError);
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
