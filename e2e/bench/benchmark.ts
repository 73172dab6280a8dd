// What a benchmark is, for the `make bench` runner (run.ts). A benchmark gets
// the real environment the runner started and returns rows of numbers; the
// runner prints them as a table and writes them as JSON.
import type { EnvironmentInfo } from "../harness/index.ts";

export interface BenchRow {
  /** What was measured, in words a reader of the README understands. */
  metric: string;
  value: number;
  /** "s", "ms", "MiB", "requests", ... ("" for a plain count). */
  unit: string;
  /**
   * A figure to compare `value` with, in the same unit: the least the work
   * could cost (e.g. 3 writes per Widget) or what a plain client takes for
   * the same data. Absent when there is nothing meaningful to compare with.
   */
  reference?: number;
  /** value / reference; the runner fills it in when both are there and reference is not 0. */
  ratio?: number;
  /** What `reference` is, when the metric's name does not say it. */
  note?: string;
}

export interface BenchResult {
  rows: BenchRow[];
  /**
   * Broken promises the numbers revealed (e.g. a restart that wrote to the
   * API server). Non-empty fails the run: the runner prints them after the
   * table and exits non-zero.
   */
  failures: string[];
  /** Extra detail kept in the JSON only (e.g. requests by verb). */
  details?: Record<string, unknown>;
}

export interface Benchmark {
  /** As given on the command line: `node e2e/bench/run.ts core`. */
  name: string;
  /** One line, printed above the table. */
  description: string;
  run(env: EnvironmentInfo): Promise<BenchResult>;
}
