import { describe, expect, it } from "vitest";
import { settledWithin } from "./bounded-wait.ts";

describe("settledWithin", () => {
  it("is true when the work fulfils or rejects in time", async () => {
    expect(await settledWithin(Promise.resolve("done"), 1_000)).toBe(true);
    expect(await settledWithin(Promise.reject(new Error("failed")), 1_000)).toBe(true);
  });

  it("is false when the time runs out, and does not wait longer", async () => {
    const started = Date.now();
    expect(await settledWithin(new Promise(() => undefined), 30)).toBe(false);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("leaves no timer behind once the work settled", async () => {
    const before = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    await settledWithin(Promise.resolve(), 60_000);
    expect(process.getActiveResourcesInfo().filter((r) => r === "Timeout").length).toBe(before);
  });
});
