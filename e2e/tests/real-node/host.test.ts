// The real node is a good guest: it runs real containers (logs and exec work
// through the apiserver, authenticated), and whatever happens to the process
// that started it — here it is killed with SIGKILL once the node is Ready, as
// a test run killed mid-way would be — the stop path every exit takes
// (releaseRealNode; stopAll in `make dev-down` and in the next run's cleanup
// of abandoned runs) leaves the machine as it found it: sysctls (the kubelet
// sets kernel.panic_on_oops=1!), iptables chains, network namespaces, links,
// mounts, /etc/hosts, folders, and no process of the node left.
import { execFile, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, inject, it } from "vitest";
import { builtin, resourceType, type KubeObject } from "@stateward/core";
import { NODE_NAME, hostFacts, isAlive, nodePlacement, readState, releaseRealNode, repoRoot, tools, type HostFacts } from "../../harness/index.ts";
import { freshNamespace, deleteNamespace, testClient } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";

const run = promisify(execFile);
const NODE = resourceType("v1", "Node", "nodes", false);
const env = inject("environment");
const client = testClient(env.kubeconfig);
const kubectl = (...args: string[]) => run(tools.kubectl(), [`--kubeconfig=${env.kubeconfig}`, ...args], { timeout: 60_000 });

/** Starts the node from a separate process, as a test run's setup would, and returns that process. */
async function startNodeFromChild(): Promise<{ pid: number }> {
  const script = `
    import { readState, useRealNode } from ${JSON.stringify(join(repoRoot, "e2e", "harness", "index.ts"))};
    const info = readState(${JSON.stringify(env.dir)});
    await useRealNode(info);
    console.log("NODE-READY");
    setInterval(() => undefined, 60_000);
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"], cwd: repoRoot });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", () => output.includes("NODE-READY") && resolve());
    child.once("exit", (code) => reject(new Error(`the node's starter exited (${code}) before the node was Ready:\n${output}`)));
  });
  return { pid: child.pid ?? 0 };
}

function mountsUnder(dir: string): string[] {
  return readFileSync("/proc/self/mounts", "utf8").split("\n").map((l) => l.split(" ")[1] ?? "").filter((m) => m.startsWith(dir));
}

describe.runIf(env.realNodeSupport.ok)("the real node and the host", () => {
  let before: HostFacts;
  let ns = "";

  afterAll(async () => {
    if (ns) await deleteNamespace(client, ns);
    await releaseRealNode(env);
  });

  it("runs a container (logs and exec through the apiserver), and a killed starter's node is undone completely", async () => {
    before = await hostFacts();
    const starter = await startNodeFromChild();
    const node = readState(env.dir)?.realNode;
    expect(node?.name).toBe(NODE_NAME);

    ns = await freshNamespace(client, "realnode-host");
    await waitFor("default ServiceAccount", () => client.get(builtin.serviceAccount, ns, "default").then(() => true, () => undefined), 30_000);
    await client.create(builtin.pod, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "shell", namespace: ns },
      spec: {
        ...nodePlacement,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: "sh", image: node?.images.shell, command: ["sh", "-c", "echo hello from a real container; exec sleep 3600"] }],
      },
    } as KubeObject);
    const pod = await waitFor("pod shell Running on the real node", async () => {
      const p = await client.get<KubeObject & { spec: { nodeName?: string }; status?: { phase?: string; podIP?: string } }>(builtin.pod, ns, "shell");
      return p.status?.phase === "Running" ? p : undefined;
    }, 90_000, 500);
    expect(pod.spec.nodeName).toBe(NODE_NAME);
    expect(pod.status?.podIP).toMatch(/^10\.200\.0\./);
    expect((await kubectl("-n", ns, "logs", "shell")).stdout).toContain("hello from a real container");
    expect((await kubectl("-n", ns, "exec", "shell", "--", "cat", "/proc/1/cmdline")).stdout).toContain("sleep");
    // The network rule: no default route in a pod.
    expect((await kubectl("-n", ns, "exec", "shell", "--", "ip", "route")).stdout.trim()).toMatch(/^10\.200\.0\.0\/24 dev eth0 [^\n]*$/);
    expect(readFileSync("/proc/sys/net/ipv4/ip_forward", "utf8").trim()).toBe("0");

    // While the node runs, the host IS changed (so the comparison below means something).
    const during = await hostFacts();
    expect(during).not.toEqual(before);

    // The starter dies without any cleanup; the node's processes live on.
    process.kill(starter.pid, "SIGKILL");
    await waitFor("the starter gone", () => (isAlive(starter.pid) ? undefined : true), 10_000);
    const recorded = readState(env.dir)?.realNode?.processes ?? [];
    expect(recorded.map((p) => p.name)).toEqual(expect.arrayContaining(["containerd", "kubelet", "provisioner"]));
    expect(recorded.every((p) => isAlive(p.pid))).toBe(true);

    // The stop path of every exit (dev-down, a run's teardown, the next run's cleanup).
    await releaseRealNode(env);
    const after = await hostFacts();
    expect(after).toEqual(before);
    expect(recorded.filter((p) => isAlive(p.pid))).toEqual([]);
    expect(mountsUnder(join(env.dir, "realnode"))).toEqual([]);
    expect(existsSync(join("/sys/fs/cgroup/memory", "stateward-realnode"))).toBe(false);
    await waitFor("the Node object gone", () => client.get(NODE, undefined, NODE_NAME).then(() => undefined, () => true), 30_000);
  }, 300_000);
});
