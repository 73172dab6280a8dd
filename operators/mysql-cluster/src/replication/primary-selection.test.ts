import { describe, expect, it } from "vitest";
import { choosePrimary, type Candidate } from "./primary-selection.ts";
import { historyContains } from "./gtid.ts";

const pod = (n: number) => `db-${n}`;
const reachable = (ordinal: number, history: string, replica = false): Candidate => ({ ordinal, kind: "reachable", history, replica });

describe("MariaDB binlog states", () => {
  it("sees two diverged servers that a per-domain position cannot", () => {
    // Same highest sequence in domain 0, written by different servers: each lacks the other's.
    expect(historyContains("MariaDB", "0-1001-4,0-1000-5", "0-1001-5")).toBe(false);
    expect(historyContains("MariaDB", "0-1001-5,0-1000-3", "0-1001-4,0-1000-5")).toBe(false);
    expect(historyContains("MariaDB", "0-1000-3,0-1001-9", "0-1000-3,0-1001-7")).toBe(true);
    expect(historyContains("MariaDB", "", "")).toBe(true);
  });
});

describe("choosing the primary without status", () => {
  it("picks pod 0 of a new cluster", () => {
    expect(choosePrimary("MariaDB", [reachable(0, ""), { ordinal: 1, kind: "absent" }, { ordinal: 2, kind: "absent" }], pod)).toMatchObject({ kind: "chosen", ordinal: 0 });
  });

  it("picks the server that has everything, wherever it is", () => {
    expect(choosePrimary("MariaDB", [reachable(0, "0-1000-3,0-1001-7", true), reachable(1, "0-1000-3,0-1001-9"), reachable(2, "0-1000-3,0-1001-8", true)], pod)).toMatchObject({ kind: "chosen", ordinal: 1 });
  });

  it("prefers the server that is not a replica among equals", () => {
    expect(choosePrimary("MariaDB", [reachable(0, "0-1000-3,0-1001-9", true), reachable(1, "0-1000-3,0-1001-9"), reachable(2, "0-1000-3,0-1001-9", true)], pod)).toMatchObject({ kind: "chosen", ordinal: 1 });
  });

  it("promotes nothing when the servers diverged, naming each history", () => {
    const s = choosePrimary("MariaDB", [reachable(0, "0-1001-4,0-1000-5", true), reachable(1, "0-1000-3,0-1001-5")], pod);
    expect(s).toMatchObject({ kind: "unknown", reason: "Diverged" });
    expect(s.kind === "unknown" && s.message).toMatch(/db-0 has 0-1001-4,0-1000-5; db-1 has 0-1000-3,0-1001-5.*spec\.primary/);
  });

  it("waits for a server with a volume that does not answer", () => {
    const s = choosePrimary("MariaDB", [reachable(0, ""), { ordinal: 1, kind: "unreachable", why: "connection refused" }], pod);
    expect(s).toMatchObject({ kind: "unknown", reason: "MembersUnreachable" });
    expect(s.kind === "unknown" && s.message).toMatch(/db-1 \(connection refused\)/);
  });

  it("compares MySQL GTID sets exactly", () => {
    const u = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
    expect(choosePrimary("MySQL", [reachable(0, `${u}:1-5`, true), reachable(1, `${u}:1-9`)], pod)).toMatchObject({ kind: "chosen", ordinal: 1 });
  });
});
