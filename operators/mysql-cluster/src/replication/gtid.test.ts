import { describe, expect, it } from "vitest";
import { gtidContains, gtidCount, gtidListOfEvent, parseMariaDBPosition, parseMySQLGtidSet } from "./gtid.ts";

const U1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
const U2 = "8b2e0f3c-1a2b-11ee-8c99-0242ac120002";

describe("MariaDB GTID positions", () => {
  it("keeps the highest sequence per domain", () => {
    expect(parseMariaDBPosition("0-1000-5, 1-2000-3,0-1001-7")).toEqual(new Map([[0, 7n], [1, 3n]]));
    expect(parseMariaDBPosition("")).toEqual(new Map());
  });

  it("is caught up when every domain has reached the primary's sequence", () => {
    expect(gtidContains("MariaDB", "0-1000-10", "0-1000-10")).toBe(true);
    expect(gtidContains("MariaDB", "0-1001-11", "0-1000-10")).toBe(true);
    expect(gtidContains("MariaDB", "0-1000-9", "0-1000-10")).toBe(false);
    expect(gtidContains("MariaDB", "0-1000-10", "0-1000-10,1-1000-1")).toBe(false);
    expect(gtidContains("MariaDB", "", "")).toBe(true);
    expect(gtidContains("MariaDB", "", "0-1000-1")).toBe(false);
  });

  it("refuses text that is not a position", () => {
    expect(() => parseMariaDBPosition("0-1000")).toThrow(/not a MariaDB GTID/);
  });

  it("reads a Gtid_list event", () => {
    expect(gtidListOfEvent("[0-1000-12]")).toBe("0-1000-12");
    expect(gtidListOfEvent("[]")).toBe("");
    expect(() => gtidListOfEvent("mysql-bin.000001")).toThrow();
  });
});

describe("MySQL GTID sets", () => {
  it("merges intervals per source", () => {
    expect(parseMySQLGtidSet(`${U1}:1-5:6-9:12,\n${U2}:1-3`)).toEqual(
      new Map([
        [U1, [[1n, 9n], [12n, 12n]]],
        [U2, [[1n, 3n]]],
      ]),
    );
  });

  it("contains a set only when every interval is covered", () => {
    expect(gtidContains("MySQL", `${U1}:1-100`, `${U1}:1-50`)).toBe(true);
    expect(gtidContains("MySQL", `${U1}:1-100,${U2}:1-2`, `${U1}:1-100,${U2}:1-3`)).toBe(false);
    expect(gtidContains("MySQL", `${U1}:1-10:20-30`, `${U1}:5-25`)).toBe(false);
    expect(gtidContains("MySQL", `${U1}:1-10`, "")).toBe(true);
  });
});

describe("progress", () => {
  it("counts transactions", () => {
    expect(gtidCount("MariaDB", "0-1000-10,1-1000-5")).toBe(15n);
    expect(gtidCount("MySQL", `${U1}:1-10:12,${U2}:1-3`)).toBe(14n);
    expect(gtidCount("MariaDB", "")).toBe(0n);
  });
});
