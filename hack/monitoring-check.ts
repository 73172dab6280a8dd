// `make monitoring-check` (part of `make test`): the chart's alerting rules and Grafana
// dashboard.
//   - the rules pass `promtool check rules` and their unit tests, hack/monitoring/rules.test.yaml
//     (`promtool test rules`);
//   - the dashboard is valid JSON, and every query of the rules and the dashboard reads only
//     metrics of e2e/support/monitoring-metrics.ts — the ones e2e/tests/monitoring finds exported by
//     a real manager.
//
// Usage: node hack/monitoring-check.ts   (promtool from `hack/build-tools.sh promtool`)
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parse } from "yaml";
import { tools } from "../e2e/harness/tools.ts";
import { exportedMetrics, metricsIn, scrapeSeries, seriesNames } from "../e2e/support/monitoring-metrics.ts";

const root = resolve(import.meta.dirname, "..");
const rulesFile = join(root, "charts/stateward/files/prometheus-rules.yaml");
const dashboardFile = join(root, "charts/stateward/files/grafana-dashboard.json");
const known = new Set([...exportedMetrics.flatMap(seriesNames), ...scrapeSeries]);
const problems: string[] = [];

function checkQuery(where: string, expr: unknown): void {
  if (typeof expr !== "string" || expr.trim() === "") {
    problems.push(`${where}: no query`);
    return;
  }
  for (const name of metricsIn(expr)) if (!known.has(name)) problems.push(`${where}: ${name} is not a metric the operators export (e2e/support/monitoring-metrics.ts)`);
}

const rules = parse(readFileSync(rulesFile, "utf8")) as { groups: { name: string; rules: { alert?: string; record?: string; expr: string }[] }[] };
for (const group of rules.groups) for (const rule of group.rules) checkQuery(`rule ${rule.alert ?? rule.record}`, rule.expr);

interface Panel {
  title?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}
let dashboard: { panels?: Panel[] } | undefined;
try {
  dashboard = JSON.parse(readFileSync(dashboardFile, "utf8")) as { panels?: Panel[] };
} catch (err) {
  problems.push(`${dashboardFile}: not valid JSON: ${(err as Error).message}`);
}
const panels = (list: Panel[]): Panel[] => list.flatMap((p) => [p, ...panels(p.panels ?? [])]);
let queries = 0;
for (const panel of panels(dashboard?.panels ?? [])) {
  for (const target of panel.targets ?? []) {
    queries++;
    checkQuery(`dashboard panel "${panel.title ?? "?"}"`, target.expr);
  }
}
if (dashboard && queries === 0) problems.push("the dashboard has no queries");

const promtool = tools.promtool();
for (const args of [["check", "rules", rulesFile], ["test", "rules", join(root, "hack/monitoring/rules.test.yaml")]]) {
  try {
    execFileSync(promtool, args, { cwd: join(root, "hack/monitoring"), stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const e = err as { stdout?: Buffer; stderr?: Buffer };
    problems.push(`promtool ${args.slice(0, 2).join(" ")} failed:\n${e.stdout?.toString() ?? ""}${e.stderr?.toString() ?? ""}`);
  }
}

if (problems.length > 0) {
  console.error(`monitoring-check: ${problems.length} problem(s):\n${problems.map((p) => `  ${p}`).join("\n")}`);
  process.exit(1);
}
console.log(`monitoring-check: rules and ${queries} dashboard queries read only exported metrics; promtool check and test rules pass`);
