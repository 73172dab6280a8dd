// How benchmark results are shown (a table on stdout) and kept (JSON under
// e2e/bench/results/, git-ignored): one file per run, named after the
// benchmark and the time, plus <name>-latest.json for the last passing run.
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, release, totalmem } from "node:os";
import { join } from "node:path";
import type { BenchResult, BenchRow } from "./benchmark.ts";

export const resultsDir = join(import.meta.dirname, "results");

export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  memoryBytes: number;
  node: string;
  kubernetes: string;
  os: string;
}

export function machineInfo(kubernetes: string): MachineInfo {
  const list = cpus();
  return {
    cpus: list.length,
    cpuModel: list[0]?.model.trim() ?? "unknown",
    memoryBytes: totalmem(),
    node: process.version,
    kubernetes,
    os: `${process.platform} ${release()} ${process.arch}`,
  };
}

export interface BenchReport {
  benchmark: string;
  description: string;
  startedAt: string;
  durationSeconds: number;
  passed: boolean;
  machine: MachineInfo;
  rows: BenchRow[];
  failures: string[];
  details?: Record<string, unknown>;
}

/** Rounds to what a reader can compare at a glance: 3 significant digits, whole numbers above 100. */
export function formatNumber(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Number.isInteger(n) || Math.abs(n) >= 100) return Math.round(n).toLocaleString("en-US");
  return Number(n.toPrecision(3)).toString();
}

/** Fills in ratio = value / reference where the benchmark gave a non-zero reference. */
export function withRatios(rows: BenchRow[]): BenchRow[] {
  return rows.map((r) => (r.ratio === undefined && r.reference ? { ...r, ratio: r.value / r.reference } : r));
}

export function table(rows: BenchRow[]): string {
  const header = ["metric", "value", "unit", "reference", "ratio"];
  const cells = rows.map((r) => [
    r.metric,
    formatNumber(r.value),
    r.unit,
    r.reference === undefined ? "" : formatNumber(r.reference),
    r.ratio === undefined ? "" : `${r.ratio.toFixed(2)}x`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? "").length)));
  // Numbers right-aligned, words left-aligned.
  const right = [false, true, false, true, true];
  const line = (c: string[]) => c.map((v, i) => (right[i] ? v.padStart(widths[i] ?? 0) : v.padEnd(widths[i] ?? 0))).join(" | ").trimEnd();
  const notes = rows.filter((r) => r.note).map((r) => `  ${r.metric}: ${r.note ?? ""}`);
  return [line(header), widths.map((w) => "-".repeat(w)).join("-|-"), ...cells.map(line), ...(notes.length ? ["", ...notes] : [])].join("\n");
}

/**
 * Writes <name>-<timestamp>.json, and <name>-latest.json when the run
 * passed, so "latest" is always a baseline worth comparing with. The time is
 * ISO 8601 in its basic format (20260102T030405Z): no colons, which some
 * tools and file systems refuse in file names.
 */
export function writeReport(report: BenchReport): string[] {
  mkdirSync(resultsDir, { recursive: true });
  const stamp = report.startedAt.replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  const body = `${JSON.stringify(report, null, 2)}\n`;
  const files = [join(resultsDir, `${report.benchmark}-${stamp}.json`)];
  if (report.passed) files.push(join(resultsDir, `${report.benchmark}-latest.json`));
  for (const file of files) writeFileSync(file, body);
  return files;
}

/** Rounds the rows' numbers for the JSON (float noise helps nobody). */
export function rounded(result: BenchResult): BenchRow[] {
  const round = (n: number | undefined) => (n === undefined ? undefined : Number(n.toPrecision(6)));
  return withRatios(result.rows).map((r) => ({ ...r, value: round(r.value) ?? r.value, reference: round(r.reference), ratio: round(r.ratio) }));
}
