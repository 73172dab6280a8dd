// applySql's order of work, with a stand-in for the connection (the server's
// side is covered by the restore suites in e2e/tests/mysql-backup).
import { describe, expect, it } from "vitest";
import type { MySQLSession } from "../engine/connection.ts";
import { applySql } from "./apply.ts";

/** A session whose statements each take until `finish` is called; records what happened in order. */
function slowSession(fail?: (sql: string) => Error | undefined) {
  const log: string[] = [];
  const pending: (() => void)[] = [];
  let running = 0;
  let maxRunning = 0;
  const session = {
    endpoint: "db:3306",
    execute(sql: string): Promise<void> {
      running++;
      maxRunning = Math.max(maxRunning, running);
      log.push(`run ${sql}`);
      return new Promise((resolve, reject) => {
        pending.push(() => {
          running--;
          const err = fail?.(sql);
          if (err) reject(err);
          else resolve();
        });
      });
    },
  } as unknown as MySQLSession;
  return { session, log, maxRunning: () => maxRunning, finish: () => pending.shift()?.() };
}

/** An input that logs each chunk as it is read, then (with `stall`) never ends. */
async function* chunks(log: string[], parts: string[], stall = false): AsyncGenerator<Buffer> {
  for (const part of parts) {
    log.push(`read ${part.trim()}`);
    yield Buffer.from(part);
  }
  if (stall) await new Promise(() => undefined);
}

const tick = () => new Promise((r) => setTimeout(r, 1));

describe("applySql", () => {
  it("reads the next statements while one runs, and runs them one at a time, in order", async () => {
    const { session, log, finish, maxRunning } = slowSession();
    const done = applySql(chunks(log, ["SELECT 1;\n", "SELECT 2;\n", "SELECT 3;\n"]), { session, source: "test" });
    await tick();
    // The first statement is running and the rest are already read and split.
    expect(log.filter((l) => l.startsWith("run"))).toEqual(["run SELECT 1"]);
    expect(log.filter((l) => l.startsWith("read"))).toEqual(["read SELECT 1;", "read SELECT 2;", "read SELECT 3;"]);
    for (let i = 0; i < 3; i++) {
      finish();
      await tick();
    }
    expect(await done).toEqual({ statements: 3, bytes: 30 });
    expect(log.filter((l) => l.startsWith("run"))).toEqual(["run SELECT 1", "run SELECT 2", "run SELECT 3"]);
    expect(maxRunning()).toBe(1);
  });

  it("sends nothing after a failed statement and stops reading, even from an input gone quiet", async () => {
    const syntax = Object.assign(new Error("You have an error in your SQL syntax"), { code: "ER_PARSE_ERROR", errno: 1064 });
    const { session, log, finish } = slowSession((sql) => (sql === "SELEC 2" ? syntax : undefined));
    const done = applySql(chunks(log, ["SELECT 1;\n", "SELEC 2;\n", "SELECT 3;\n"], true), { session, source: "object t.sql" });
    const outcome = done.then(
      () => "resolved",
      (err: Error) => err.message,
    );
    await tick();
    finish();
    await tick();
    finish();
    expect(await outcome).toBe("the statement at line 2 of object t.sql failed: You have an error in your SQL syntax");
    expect(log.filter((l) => l.startsWith("run"))).toEqual(["run SELECT 1", "run SELEC 2"]);
  });

  it("lets the running statement finish and sends no other when the input fails", async () => {
    const { session, log, finish } = slowSession();
    async function* broken(): AsyncGenerator<Buffer> {
      yield Buffer.from("SELECT 1;\nSELECT 2;\n");
      await tick();
      throw Object.assign(new Error("unexpected end of file"), { code: "Z_BUF_ERROR" });
    }
    const outcome = applySql(broken(), { session, source: "test" }).then(
      () => "resolved",
      (err: Error) => err.message,
    );
    await tick();
    await tick();
    finish();
    expect(await outcome).toBe("unexpected end of file");
    expect(log).toEqual(["run SELECT 1"]);
  });
});
