import { describe, expect, it } from "vitest";
import { SnapshotLockTimeoutError, readGtidPosition, takeConsistentSnapshot, type SnapshotSession } from "./snapshot.ts";

/** A session that records its statements; `fail` makes the statements starting with a key reject. */
function session(log: string[], name: string, fail: Record<string, Error> = {}): SnapshotSession {
  return {
    query: (sql) => {
      log.push(`${name}: ${sql}`);
      const failure = Object.entries(fail).find(([prefix]) => sql.startsWith(prefix));
      if (failure) return Promise.reject(failure[1]);
      if (sql.includes("max_statement_time AS t")) return Promise.resolve([{ t: "0.000000" }]);
      if (sql.includes("gtid_binlog_pos")) return Promise.resolve([{ gtid: "0-1-42" }]);
      return Promise.resolve([]);
    },
  };
}

describe("takeConsistentSnapshot", () => {
  it("locks, opens every reader's snapshot, reads while locked, then releases", async () => {
    const log: string[] = [];
    const control = session(log, "control");
    const taken = await takeConsistentSnapshot(control, { flavor: "MariaDB", lockWaitSeconds: 5, readers: [session(log, "r1")] }, () => readGtidPosition(control, "MariaDB"));
    expect(taken.value).toBe("0-1-42");
    expect(log).toEqual([
      "control: SET SESSION lock_wait_timeout = ?",
      "control: SELECT @@SESSION.max_statement_time AS t",
      "control: SET SESSION max_statement_time = ?",
      "control: FLUSH TABLES WITH READ LOCK",
      "control: SET SESSION max_statement_time = ?",
      "r1: SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
      "r1: START TRANSACTION WITH CONSISTENT SNAPSHOT",
      "control: SELECT @@GLOBAL.gtid_binlog_pos AS gtid",
      "control: UNLOCK TABLES",
    ]);
  });

  it("says so when the lock is not granted in time, and never runs the rest", async () => {
    const log: string[] = [];
    const timeout = Object.assign(new Error("Lock wait timeout exceeded"), { errno: 1205 });
    const control = session(log, "control", { FLUSH: timeout });
    await expect(takeConsistentSnapshot(control, { flavor: "MySQL", lockWaitSeconds: 2 }, () => Promise.resolve(1))).rejects.toBeInstanceOf(SnapshotLockTimeoutError);
    expect(log.at(-1)).toBe("control: FLUSH TABLES WITH READ LOCK");
  });

  it("releases the lock when reading fails, and hands a failed release to onUnlockFailed", async () => {
    const log: string[] = [];
    const unlockFailed: unknown[] = [];
    const control = session(log, "control", { UNLOCK: new Error("gone") });
    const taken = await takeConsistentSnapshot(control, { flavor: "MySQL", lockWaitSeconds: 2, onUnlockFailed: (e) => unlockFailed.push(e) }, () => Promise.resolve("x"));
    expect(taken.value).toBe("x");
    expect(unlockFailed).toHaveLength(1);
    await expect(takeConsistentSnapshot(session(log, "c2"), { flavor: "MySQL", lockWaitSeconds: 2 }, () => Promise.reject(new Error("read failed")))).rejects.toThrow("read failed");
    expect(log.at(-1)).toBe("c2: UNLOCK TABLES");
  });
});
