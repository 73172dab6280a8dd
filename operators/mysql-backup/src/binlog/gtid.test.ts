import { describe, expect, it } from "vitest";
import { advance, continuity, describeDiscontinuity, formatGtid, formatPosition, parseGtid, parsePosition } from "./gtid.ts";

describe("GTIDs", () => {
  it("reads and writes domain-server-sequence, with 64-bit sequence numbers", () => {
    const g = parseGtid("1-4294967295-18446744073709551615");
    expect(g).toEqual({ domain: 1, server: 4294967295, seq: 18446744073709551615n });
    expect(formatGtid(g)).toBe("1-4294967295-18446744073709551615");
  });

  it("refuses what is not a MariaDB GTID (a MySQL uuid:n, out of range numbers)", () => {
    expect(() => parseGtid("3E11FA47-71CA-11E1-9E33-C80AA9429562:23")).toThrow(/not a MariaDB GTID/);
    expect(() => parseGtid("0-4294967296-1")).toThrow(/not a MariaDB GTID/);
    expect(() => parseGtid("0-1-18446744073709551616")).toThrow(/not a MariaDB GTID/);
  });

  it("reads a position as the server prints it (spaces, newlines) and writes it in domain order", () => {
    const p = parsePosition("1-2-7,\n 0-1-100");
    expect(formatPosition(p)).toBe("0-1-100,1-2-7");
    expect(formatPosition(parsePosition(""))).toBe("");
    expect(() => parsePosition("0-1-5,0-2-6")).toThrow(/names domain 0 twice/);
  });

  it("accepts only the next sequence number of a domain", () => {
    const p = parsePosition("0-1-100,1-2-7");
    expect(continuity(p, parseGtid("0-1-101"))).toEqual({ ok: true });
    // A switchover changes the server id, not the numbering.
    expect(continuity(p, parseGtid("0-3-101"))).toEqual({ ok: true });
    expect(continuity(p, parseGtid("1-2-8"))).toEqual({ ok: true });
    // A new domain starts at 1.
    expect(continuity(p, parseGtid("5-1-1"))).toEqual({ ok: true });
  });

  it("calls a skipped sequence number a gap and a repeated one a duplicate, naming both GTIDs", () => {
    const p = parsePosition("0-1-100");
    const gap = continuity(p, parseGtid("0-1-102"));
    expect(gap).toMatchObject({ ok: false, kind: "gap", expected: 101n });
    if (gap.ok) throw new Error("unreachable");
    expect(describeDiscontinuity(p, gap)).toBe("GTID gap: the server sent 0-1-102 after 0-1-100; sequence number 101 is missing from the stream");
    const dup = continuity(p, parseGtid("0-2-100"));
    expect(dup).toMatchObject({ ok: false, kind: "duplicate" });
    if (dup.ok) throw new Error("unreachable");
    expect(describeDiscontinuity(p, dup)).toMatch(/duplicate GTID: the server sent 0-2-100 after 0-1-100/);
    const newDomain = continuity(p, parseGtid("3-1-9"));
    expect(newDomain).toMatchObject({ ok: false, kind: "gap", expected: 1n });
  });

  it("advances one domain and leaves the others", () => {
    const p = advance(parsePosition("0-1-100,1-2-7"), parseGtid("1-3-8"));
    expect(formatPosition(p)).toBe("0-1-100,1-3-8");
  });
});
