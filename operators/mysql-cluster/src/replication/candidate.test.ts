import { describe, expect, it } from "vitest";
import { chooseCandidate, promotionSafety, receivedOf, type ReplicaProgress } from "./candidate.ts";
import { errantTransactions } from "./gtid.ts";

const replica = (ordinal: number, received: string, executed = received): ReplicaProgress => ({ ordinal, name: `db-${ordinal}`, received, executed });
/** A choice or a safety verdict as one line, to match on. */
const line = (x: object): string => JSON.stringify(x);
const facts = { semiSyncActive: true, unreachableReplicas: [], lastKnownPrimary: "0-1000-10", oldPrimary: "db-0" };

describe("the failover candidate", () => {
  it("is the replica that received everything any other did, even if it applied less", () => {
    const choice = chooseCandidate("MariaDB", [replica(1, "0-1000-12", "0-1000-9"), replica(2, "0-1000-11")]);
    expect(choice).toMatchObject({ kind: "chosen", replica: { ordinal: 1 } });
  });

  it("on a tie, is the one that applied more, then the lowest ordinal", () => {
    expect(chooseCandidate("MariaDB", [replica(1, "0-1000-12", "0-1000-9"), replica(2, "0-1000-12")])).toMatchObject({ replica: { ordinal: 2 } });
    expect(chooseCandidate("MariaDB", [replica(2, "0-1000-12"), replica(1, "0-1000-12")])).toMatchObject({ replica: { ordinal: 1 } });
  });

  it("takes spec.primary only when it has everything the others received", () => {
    const replicas = [replica(1, "0-1000-12"), replica(2, "0-1000-11")];
    expect(chooseCandidate("MariaDB", replicas, 1)).toMatchObject({ kind: "chosen", replica: { ordinal: 1 } });
    expect(line(chooseCandidate("MariaDB", replicas, 2))).toMatch(/"kind":"none".*db-2, which lacks/);
    expect(chooseCandidate("MariaDB", replicas, 5)).toMatchObject({ kind: "none" });
  });

  it("is none when no replica answers", () => {
    expect(chooseCandidate("MariaDB", [])).toEqual({ kind: "none", message: "no replica answers" });
  });

  it("merges the I/O position with what was executed (an I/O position is empty after a restart)", () => {
    expect(receivedOf(undefined, "0-1000-5")).toBe("0-1000-5");
    // Named once when the replica applied everything it received (the FailedOver Event quotes it).
    expect(receivedOf("0-1000-29", "0-1000-29")).toBe("0-1000-29");
    expect(receivedOf("0-1000-7", "0-1000-5")).toBe("0-1000-7,0-1000-5");
    expect(chooseCandidate("MariaDB", [replica(1, receivedOf("0-1000-7", "0-1000-5")), replica(2, receivedOf("", "0-1000-6"))])).toMatchObject({ replica: { ordinal: 1 } });
  });
});

describe("whether a promotion keeps every acknowledged write", () => {
  it("is safe with semi-sync active, every replica answering and the primary's last known position received", () => {
    expect(promotionSafety("MariaDB", replica(1, "0-1000-12"), facts)).toMatchObject({ safe: true });
  });

  it("is not when the candidate lacks the primary's last known position, in either mode", () => {
    for (const semiSyncActive of [true, false]) {
      expect(line(promotionSafety("MariaDB", replica(1, "0-1000-8"), { ...facts, semiSyncActive }))).toMatch(/"safe":false.*beyond 0-1000-8 \(what db-1 received\): db-0 had executed 0-1000-10/);
    }
  });

  it("is not with semi-sync when a replica that may have acknowledged does not answer", () => {
    expect(line(promotionSafety("MariaDB", replica(1, "0-1000-12"), { ...facts, unreachableReplicas: ["db-2"] }))).toMatch(/"safe":false.*beyond 0-1000-12.*by db-2 only/);
  });

  it("goes ahead asynchronously but names what is lost: everything beyond what the candidate received", () => {
    expect(promotionSafety("MariaDB", replica(1, "0-1000-12"), { ...facts, semiSyncActive: false })).toMatchObject({
      safe: true,
      mayLose: "every transaction db-0 committed beyond 0-1000-12 (what db-1 received): commits were not waiting for replicas (asynchronous)",
    });
    expect(promotionSafety("MariaDB", replica(1, "0-1000-12"), facts)).not.toHaveProperty("mayLose");
  });
});

describe("errant transactions", () => {
  it("are each origin's transactions beyond the primary's history", () => {
    expect(errantTransactions("MariaDB", "0-1000-10,0-1001-4", "0-1000-11,0-1001-4")).toEqual(["0-1000-11"]);
    expect(errantTransactions("MariaDB", "0-1000-10,0-1001-4", "0-1000-9")).toEqual([]);
    expect(errantTransactions("MariaDB", "0-1000-10", "0-1002-1")).toEqual(["0-1002-1"]);
    expect(errantTransactions("MariaDB", "", "")).toEqual([]);
  });

  it("are MySQL intervals the primary lacks", () => {
    const uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
    expect(errantTransactions("MySQL", `${uuid}:1-10`, `${uuid}:1-12`)).toEqual([`${uuid}:1-12`]);
    expect(errantTransactions("MySQL", `${uuid}:1-10`, `${uuid}:1-9`)).toEqual([]);
  });
});
