// The memory a pod of the chart gets by default: what the tests that run a process "as in a pod"
// (e2e/support/memory-cgroup.ts) limit it to, read from the chart itself so that they follow it.
import { quantityValue } from "@stateward/core";
import { renderChart } from "./chart.ts";

/** The manager container of the chart's Deployment, rendered with its default values: its memory limit and NODE_OPTIONS. */
export async function chartMemoryDefaults(): Promise<{ limit: string; limitBytes: number; nodeOptions: string }> {
  const { objects } = await renderChart({ namespace: "stateward-system" });
  const deployment = objects.find((o) => o.kind === "Deployment") as
    | { spec: { template: { spec: { containers: { resources?: { limits?: { memory?: string } }; env?: { name: string; value?: string }[] }[] } } } }
    | undefined;
  const container = deployment?.spec.template.spec.containers[0];
  const limit = container?.resources?.limits?.memory;
  const nodeOptions = container?.env?.find((e) => e.name === "NODE_OPTIONS")?.value;
  if (!limit || !nodeOptions) throw new Error(`the chart's Deployment has no memory limit (${limit}) or NODE_OPTIONS (${nodeOptions})`);
  return { limit, limitBytes: quantityValue(limit), nodeOptions };
}
