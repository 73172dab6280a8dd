import { describe, expect, it } from "vitest";
import { BackgroundTasks } from "./background.ts";

describe("BackgroundTasks", () => {
  it("runs one task per key, aborts them at stop and waits for their cleanup", async () => {
    const tasks = new BackgroundTasks();
    const log: string[] = [];
    const started = tasks.start("ns/b1", "backup", async (signal) => {
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve()));
      await new Promise((r) => setTimeout(r, 20));
      log.push("b1 recorded its interruption");
    }, () => undefined);
    expect(started).toBe(true);
    expect(tasks.start("ns/b1", "backup", () => Promise.resolve(), () => undefined)).toBe(false);
    expect(tasks.isRunning("ns/b1")).toBe(true);
    expect(await tasks.stop(1_000)).toBe(true);
    expect(log).toEqual(["b1 recorded its interruption"]);
    expect(tasks.isRunning("ns/b1")).toBe(false);
    expect(tasks.start("ns/b2", "backup", () => Promise.resolve(), () => undefined)).toBe(false);
  });

  it("gives up waiting at the timeout and reports escaped errors", async () => {
    const tasks = new BackgroundTasks();
    const errors: unknown[] = [];
    tasks.start("stuck", "x", () => new Promise(() => undefined), () => undefined);
    tasks.start("bad", "y", () => Promise.reject(new Error("boom")), (e) => errors.push(e));
    await new Promise((r) => setTimeout(r, 10));
    expect((errors[0] as Error).message).toBe("boom");
    expect(await tasks.stop(50)).toBe(false);
  });
});

describe("BackgroundTasks.cancel", () => {
  it("aborts one task and waits for it, leaving the others running", async () => {
    const tasks = new BackgroundTasks();
    const aborted: string[] = [];
    for (const key of ["a", "b"]) {
      tasks.start(key, key, (signal) => new Promise<void>((resolve) => signal.addEventListener("abort", () => {
        aborted.push(key);
        resolve();
      })), () => undefined);
    }
    await tasks.cancel("a");
    expect(aborted).toEqual(["a"]);
    expect(tasks.isRunning("b")).toBe(true);
    await tasks.stop(1_000);
    expect(aborted).toEqual(["a", "b"]);
  });
});
