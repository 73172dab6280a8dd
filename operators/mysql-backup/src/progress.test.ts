import { describe, expect, it } from "vitest";
import { progressReporter } from "./progress.ts";

describe("progressReporter", () => {
  it("reports a copy at most once a second unless forced", () => {
    const progress = { done: 0 };
    const seen: { done: number }[] = [];
    let clock = 5000;
    const report = progressReporter(progress, (p) => seen.push(p), () => clock);
    report();
    progress.done = 1;
    clock += 999;
    report();
    report(true);
    progress.done = 2;
    clock += 1000;
    report();
    expect(seen).toEqual([{ done: 0 }, { done: 1 }, { done: 2 }]);
    expect(seen[0]).not.toBe(progress);
  });

  it("does nothing without onProgress", () => {
    expect(() => progressReporter({ done: 0 }, undefined)(true)).not.toThrow();
  });
});
