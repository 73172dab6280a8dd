import { describe, expect, it } from "vitest";
import { advance, continuity, describeDiscontinuity, describeDivergence, divergence, formatGtid, formatPosition, parseGtid, parsePosition } from "./gtid.ts";

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

describe("divergence: archived transactions a server lacks", () => {
  const state = (text: string) => [...text.split(",").map((g) => parseGtid(g))];

  it("finds nothing when the server holds the archive's last GTID (a replica that logs its source's transactions, or the source itself)", () => {
    expect(divergence(parsePosition("0-21-8"), state("0-21-8"))).toEqual([]);
    expect(divergence(parsePosition("0-21-8"), state("0-21-10,0-23-4"))).toEqual([]);
    expect(divergence(parsePosition("0-21-8,1-5-3"), state("0-21-8,1-5-9"))).toEqual([]);
  });

  it("names what a failover lost: the new primary stopped short of the archive, then numbered on with its own id", () => {
    const found = divergence(parsePosition("0-21-8"), state("0-21-7,0-23-12"));
    expect(found).toEqual([{ archived: parseGtid("0-21-8"), firstMissing: 8n, serverLast: parseGtid("0-23-12") }]);
    expect(describeDivergence(found, "server 23 at 127.0.0.1:3307")).toMatch(
      /^the archive holds transactions that server 23 at 127\.0\.0\.1:3307, the server to stream from now, does not have: 0-21-8 \(its binary log ends at 0-23-12 in that domain\)\. A failover lost them/,
    );
  });

  it("names the range when the server is behind the archive, and a domain it has nothing of", () => {
    expect(divergence(parsePosition("0-21-8,2-21-4"), state("0-21-5"))).toEqual([
      { archived: parseGtid("0-21-8"), firstMissing: 6n, serverLast: parseGtid("0-21-5") },
      { archived: parseGtid("2-21-4"), firstMissing: 1n, serverLast: undefined },
    ]);
    expect(describeDivergence(divergence(parsePosition("0-21-8"), state("0-21-5")), "s")).toContain("sequence numbers 6 to 8 of domain 0 (up to 0-21-8) (its binary log ends at 0-21-5 in that domain)");
  });
});
