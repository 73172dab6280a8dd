import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { captureLogs } from "../log/index.ts";
import { BackgroundTasks } from "./background.ts";
import { FatalErrorStop, installCrashPolicy } from "./crash-policy.ts";

const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

describe("installCrashPolicy", () => {
  it("logs an unhandled rejection with what was running, stops the tasks with the reason, then exits 1", async () => {
    const proc = new EventEmitter();
    const logs = captureLogs();
    const tasks = new BackgroundTasks();
    const recorded: string[] = [];
    tasks.start("backup/ns/b", "backup ns/b", async (signal) => {
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve()));
      recorded.push((signal.reason as Error).message);
    }, () => undefined);
    const exits: number[] = [];
    installCrashPolicy({
      logger: logs.logger,
      process: proc,
      exit: (code) => exits.push(code),
      stop: (reason) => tasks.stop(1_000, reason),
      inFlight: () => tasks.list().map((t) => t.name),
    });
    proc.emit("unhandledRejection", new Error("StorageUnreachable: upload failed"));
    expect(exits).toEqual([]);
    await tick(20);
    expect(recorded).toEqual(["the manager hit an unexpected error (Error: StorageUnreachable: upload failed) and restarted"]);
    expect(exits).toEqual([1]);
    const line = logs.lines().find((e) => String(e.msg).startsWith("unexpected error"));
    expect(line).toMatchObject({ level: "error", kind: "unhandledRejection", inFlight: ["backup ns/b"] });
  });

  it("exits after graceMs when stopping hangs, and at once on a second error", async () => {
    const proc = new EventEmitter();
    const exits: number[] = [];
    let reason: unknown;
    const remove = installCrashPolicy({
      logger: captureLogs().logger,
      process: proc,
      exit: (code) => exits.push(code),
      stop: (r) => {
        reason = r;
        return new Promise(() => undefined);
      },
      graceMs: 30,
    });
    proc.emit("uncaughtException", "not even an Error");
    expect(reason).toBeInstanceOf(FatalErrorStop);
    proc.emit("uncaughtException", new Error("again"));
    expect(exits).toEqual([1]);
    await tick(60);
    expect(exits).toEqual([1, 1]);
    remove();
    expect(proc.listenerCount("uncaughtException")).toBe(0);
    expect(proc.listenerCount("unhandledRejection")).toBe(0);
  });
});
