// The real node: containerd (Debian's 1.6, runc, the bridge CNI plugin) and a
// kubelet built from the pinned Kubernetes modules, joined to the harness's
// control plane next to the KWOK nodes, plus cluster DNS (CoreDNS, when built)
// and a local volume provisioner. Everything lives under <environment>/realnode;
// every process is recorded (processes.json there, and the environment's
// state.json) and stopped by pid; stopRealNode() also puts the host back (see
// host-state.ts). One real node per machine at a time (a lock in /run).
//
// Network rule of these machines: pods get NO default route, NO IP
// forwarding, NO masquerading. The bridge carries the pod subnet and the
// host's address on it; that and loopback is all a pod reaches.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { CoreV1Api, KubeConfig, PatchStrategy, RbacAuthorizationV1Api, StorageV1Api, setHeaderOptions } from "@kubernetes/client-node";
import { writeKubeconfig } from "../kubeconfig.ts";
import { clientCertificate, readPem, type ClusterPki } from "../pki.ts";
import { freePort } from "../ports.ts";
import { EnvironmentError, isAlive, logTail, startProcess, stopPid, waitUntilReady, type RunningProcess } from "../process.ts";
import { HOSTS_TAG, readSnapshot, removeCgroupTree, restoreHost, takeSnapshot, unmountUnder } from "./host-state.ts";
import { builtImages, imageRefs } from "./images.ts";
import { CNI_BIN_DIR, corednsBuilt, corednsPath, kubeletPath, realNodeSupport } from "./support.ts";
import { messageOf } from "@stateward/core/errors";

const run = promisify(execFile);

export const NODE_NAME = "realnode-0";
/** The label and taint that keep chosen workloads (and only those) on the real node. */
export const NODE_LABEL = "stateward.io/realnode";
export const BRIDGE = "stwd-realnode0";
export const POD_SUBNET = "10.200.0.0/24";
/** The host's address on the bridge: the node's InternalIP and the pods' DNS server. */
export const BRIDGE_ADDRESS = "10.200.0.1";
export const CGROUP_ROOT = "stateward-realnode";
/** The default StorageClass of the local provisioner (provisioner.ts). */
export const STORAGE_CLASS = "stateward-local";
export const PROVISIONER_NAME = "stateward.io/local";
const LOCK = "/run/stateward-realnode.lock";
const CLUSTER_ROLE_BINDING = `stateward-realnode:${NODE_NAME}`;

/** Pod settings that put a pod on the real node (or annotate its namespace, see namespaceAnnotations). */
export const nodePlacement = {
  nodeSelector: { [NODE_LABEL]: "true" },
  tolerations: [{ key: NODE_LABEL, operator: "Exists", effect: "NoSchedule" }],
};

/**
 * Namespace annotations that send every pod of the namespace to the real node
 * (kube-apiserver's PodNodeSelector and PodTolerationRestriction admission),
 * for workloads whose pod template has no nodeSelector of ours — the operators'.
 */
export const namespaceAnnotations = {
  "scheduler.alpha.kubernetes.io/node-selector": `${NODE_LABEL}=true`,
  "scheduler.alpha.kubernetes.io/defaultTolerations": JSON.stringify(nodePlacement.tolerations),
};

/** The apiserver flags that make namespaceAnnotations work. */
export const admissionPlugins = "--enable-admission-plugins=PodNodeSelector,PodTolerationRestriction";

/**
 * An admission configuration whose defaults send every pod to the real node
 * unless its namespace says otherwise (the dev environment, where a user's own
 * MySQLCluster in any namespace should get real pods).
 */
export function admissionConfigForRealNodeByDefault(): string {
  return [
    "apiVersion: apiserver.config.k8s.io/v1",
    "kind: AdmissionConfiguration",
    "plugins:",
    "- name: PodNodeSelector",
    "  configuration:",
    "    podNodeSelectorPluginConfig:",
    `      clusterDefaultNodeSelector: "${NODE_LABEL}=true"`,
    "- name: PodTolerationRestriction",
    "  configuration:",
    "    apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1",
    "    kind: Configuration",
    "    default:",
    `    - {key: ${NODE_LABEL}, operator: Exists, effect: NoSchedule}`,
    "",
  ].join("\n");
}

export interface RealNodeInfo {
  name: string;
  /** The pods' network and the host's address on it (pods are reached at their IP from the host). */
  podSubnet: string;
  bridgeAddress: string;
  /** Images in the node's containerd (nothing is pulled). */
  images: typeof imageRefs;
  /** The default StorageClass (node-local volumes, expandable). */
  storageClass: string;
  /** Pods resolve <pod>.<service>.<ns>.svc.cluster.local (CoreDNS) — false when CoreDNS is not built. */
  clusterDns: boolean;
  dir: string;
  processes: { name: string; pid: number; logFile: string }[];
}

interface Recorded {
  name: string;
  pid: number;
  logFile: string;
}

export function realNodeDir(envDir: string): string {
  return join(envDir, "realnode");
}

function processesFile(dir: string): string {
  return join(dir, "processes.json");
}

function record(dir: string, proc: RunningProcess): void {
  const list = readRecorded(dir);
  list.push({ name: proc.name, pid: proc.pid, logFile: proc.logFile });
  writeFileSync(processesFile(dir), JSON.stringify(list, null, 2));
}

function readRecorded(dir: string): Recorded[] {
  return existsSync(processesFile(dir)) ? (JSON.parse(readFileSync(processesFile(dir), "utf8")) as Recorded[]) : [];
}

/** The pid still runs the program we started (its command line names our folder or binary). */
function stillOurs(p: Recorded, dir: string): boolean {
  if (!isAlive(p.pid)) return false;
  try {
    const cmdline = readFileSync(`/proc/${p.pid}/cmdline`, "utf8");
    return cmdline.includes(dir) || cmdline.includes(p.name);
  } catch {
    return false;
  }
}

async function cmd(command: string, args: string[], what: string): Promise<string> {
  try {
    return (await run(command, args, { maxBuffer: 16 * 1024 * 1024 })).stdout;
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? String(err);
    throw new EnvironmentError(`real node: ${what} failed: ${command} ${args.join(" ")}: ${stderr.trim()}`);
  }
}

async function quiet(command: string, args: string[]): Promise<string> {
  try {
    return (await run(command, args, { maxBuffer: 16 * 1024 * 1024 })).stdout;
  } catch {
    return "";
  }
}

/** Takes the machine's real-node lock for `dir`; a lock left by a dead owner is taken over after its cleanup. */
async function acquireLock(dir: string): Promise<void> {
  if (existsSync(LOCK)) {
    const owner = readFileSync(LOCK, "utf8").trim();
    if (owner && owner !== dir && existsSync(join(owner, "host.json"))) {
      const run = /\/run-(\d+)\/realnode$/.exec(owner);
      if (run?.[1] && !isAlive(Number(run[1]))) {
        // A killed test run of another checkout: put the host back for it.
        await stopRealNode(owner);
      } else {
        throw new EnvironmentError(`real node: this machine's real node is in use by ${owner} (one at a time; lock ${LOCK})`);
      }
    }
  }
  writeFileSync(LOCK, `${dir}\n`);
}

function releaseLock(dir: string): void {
  if (existsSync(LOCK) && readFileSync(LOCK, "utf8").trim() === dir) rmSync(LOCK, { force: true });
}

/** The v1 hierarchies (or the v2 root) where the pods' cgroup parent is made. */
function cgroupHierarchies(): string[] {
  if (existsSync("/sys/fs/cgroup/cgroup.controllers")) return ["/sys/fs/cgroup"];
  return readdirSync("/sys/fs/cgroup", { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name !== "unified")
    .map((e) => join("/sys/fs/cgroup", e.name));
}

function prepareCgroups(): void {
  for (const h of cgroupHierarchies()) {
    const dir = join(h, CGROUP_ROOT);
    mkdirSync(dir, { recursive: true });
    // A new cpuset cgroup starts with no CPUs and no memory nodes: copy the parent's.
    if (existsSync(join(h, "cpuset.cpus")) && existsSync(join(dir, "cpuset.cpus"))) {
      writeFileSync(join(dir, "cpuset.cpus"), readFileSync(join(h, "cpuset.cpus")));
      writeFileSync(join(dir, "cpuset.mems"), readFileSync(join(h, "cpuset.mems")));
    }
  }
}

/** Pids inside the node's cgroups (containers, shims of killed runs): all of them the node's. */
function pidsInNodeCgroups(): number[] {
  const pids = new Set<number>();
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    try {
      for (const line of readFileSync(join(dir, "cgroup.procs"), "utf8").split("\n")) if (line) pids.add(Number(line));
    } catch {
      // not a cgroup folder
    }
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walk(join(dir, e.name));
  };
  for (const h of cgroupHierarchies()) walk(join(h, CGROUP_ROOT));
  return [...pids];
}

/** containerd shims serving our containerd (found by the socket address on their command line). */
function shimPids(socket: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if ((cmdline[0] ?? "").includes("containerd-shim") && cmdline.includes(socket)) pids.push(Number(entry));
    } catch {
      // gone
    }
  }
  return pids;
}

function containerdConfig(dir: string, socket: string, streamPort: number): string {
  return `version = 2
root = "${dir}/containerd/root"
state = "${dir}/containerd/state"
[grpc]
  address = "${socket}"
[ttrpc]
  address = "${socket}.ttrpc"
[debug]
  level = "warn"
[plugins."io.containerd.internal.v1.opt"]
  path = "${dir}/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${imageRefs.pause}"
  disable_apparmor = true
  # Root lacks CAP_SYS_RESOURCE on these machines, so nobody may LOWER an oom_score_adj: without
  # this, runc fails every pod sandbox ("failed to update /proc/self/oom_score_adj: Permission
  # denied", surfacing as "can't get final child's PID from pipe: EOF"). Clamps -998/-997 to 0.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "${streamPort}"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN_DIR}"
    conf_dir = "${dir}/cni/net.d"
    max_conf_num = 1
`;
}

function cniConfig(dir: string): string {
  // isGateway false: the plugin neither routes for the pods nor turns ip_forward on;
  // routes []: no default route in a pod; ipMasq false: nothing is NATed off the bridge.
  return JSON.stringify(
    {
      cniVersion: "1.0.0",
      name: "stateward-realnode",
      plugins: [
        {
          type: "bridge",
          bridge: BRIDGE,
          isGateway: false,
          isDefaultGateway: false,
          ipMasq: false,
          hairpinMode: true,
          ipam: { type: "host-local", ranges: [[{ subnet: POD_SUBNET, gateway: BRIDGE_ADDRESS }]], routes: [], dataDir: join(dir, "cni", "ipam") },
        },
        { type: "loopback" },
      ],
    },
    null,
    2,
  );
}

function kubeletConfig(dir: string, socket: string, pki: ClusterPki, port: number, healthzPort: number): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# On loopback only; the apiserver finds it through the node's Hostname address
# (an /etc/hosts line maps the node name to 127.0.0.1).
address: 127.0.0.1
port: ${port}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${healthzPort}
# The apiserver authenticates with its kubelet client certificate (from the
# cluster CA); tokens and permissions are checked by the apiserver.
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ${pki.caCert}}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://${socket}
imageServiceEndpoint: unix://${socket}
# cgroup v1 machines without systemd: cgroupfs, under a parent of our own.
cgroupDriver: cgroupfs
cgroupRoot: /${CGROUP_ROOT}
cgroupsPerQOS: true
failCgroupV1: false
failSwapOn: false
clusterDomain: cluster.local
clusterDNS: [${BRIDGE_ADDRESS}]
# No upstream resolvers for pods: nothing leaves the machine.
resolvConf: ${dir}/kubelet/resolv.conf
podLogsDirectory: ${dir}/pod-logs
volumePluginDir: ${dir}/kubelet/volume-plugins
registerNode: true
registerWithTaints:
- {key: ${NODE_LABEL}, value: "true", effect: NoSchedule}
maxPods: 40
serializeImagePulls: false
evictionHard: {memory.available: 200Mi, nodefs.available: 3%, imagefs.available: 3%}
imageGCHighThresholdPercent: 98
imageGCLowThresholdPercent: 95
shutdownGracePeriod: 0s
nodeStatusReportFrequency: 10s
syncFrequency: 10s
`;
}

export interface StartRealNodeOptions {
  /** The environment's folder (the node goes to <envDir>/realnode). */
  envDir: string;
  kubeconfig: string;
  server: string;
  pki: ClusterPki;
  /** Outlive the starting process (`make dev-up`). */
  detached: boolean;
  log?: (line: string) => void;
}

/**
 * Starts the real node and waits until it is Ready. On failure everything it
 * did is undone (stopRealNode) before the error is thrown.
 */
export async function startRealNode(opts: StartRealNodeOptions): Promise<RealNodeInfo> {
  const support = realNodeSupport();
  if (!support.ok) throw new EnvironmentError(`real node: this machine cannot run it: ${support.reason}`);
  const dir = realNodeDir(opts.envDir);
  const log = opts.log ?? (() => undefined);
  const started = Date.now();
  await stopRealNode(dir, opts.kubeconfig); // leftovers of an earlier node in this folder
  rmSync(dir, { recursive: true, force: true });
  for (const d of ["containerd", "cni/net.d", "cni/ipam", "kubelet/root", "pod-logs", "volumes", "logs"]) mkdirSync(join(dir, d), { recursive: true });
  await acquireLock(dir);
  // What stopRealNode puts back, written before anything changes.
  await takeSnapshot(join(dir, "host.json"), BRIDGE);
  const spawn = (name: string, command: string, args: string[]) => {
    const proc = startProcess({ name, command, args, logFile: join(dir, "logs", `${name}.log`), detached: opts.detached });
    record(dir, proc);
    return proc;
  };
  try {
    prepareCgroups();
    if (!(await quiet("ip", ["link", "show", BRIDGE]))) {
      await cmd("ip", ["link", "add", BRIDGE, "type", "bridge"], "creating the bridge");
      await cmd("ip", ["addr", "add", `${BRIDGE_ADDRESS}/${POD_SUBNET.split("/")[1] ?? "24"}`, "dev", BRIDGE], "addressing the bridge");
      await cmd("ip", ["link", "set", BRIDGE, "up"], "bringing the bridge up");
    }
    writeFileSync(join(dir, "cni", "net.d", "10-stateward-realnode.conflist"), cniConfig(dir));

    const socket = join(dir, "containerd", "containerd.sock");
    writeFileSync(join(dir, "containerd", "config.toml"), containerdConfig(dir, socket, await freePort()));
    const containerd = spawn("containerd", "containerd", ["--config", join(dir, "containerd", "config.toml")]);
    await waitUntilReady(containerd, async () => existsSync(socket) && (await run("ctr", ["--address", socket, "version"], { timeout: 5_000 }).then(() => true, () => false)), 60_000);
    for (const tar of builtImages().tarballs) await cmd("ctr", ["--address", socket, "-n", "k8s.io", "images", "import", tar], `importing ${tar}`);
    log(`containerd up, images imported (${Math.round((Date.now() - started) / 1000)} s)`);

    // The node's identity: a client certificate of the cluster CA, bound to the system:node
    // role (the apiserver runs RBAC only, no Node authorizer) and allowed to ask the apiserver
    // who a caller is and what it may do (the kubelet's webhook authentication/authorization).
    const cert = await clientCertificate(opts.pki.dir, `node-${NODE_NAME}`, `/O=system:nodes/CN=system:node:${NODE_NAME}`);
    writeKubeconfig(join(dir, "kubelet", "kubeconfig"), {
      server: opts.server,
      caPem: readPem(opts.pki.caCert),
      user: { name: `system:node:${NODE_NAME}`, certPem: readPem(cert.cert), keyPem: readPem(cert.key) },
    });
    const kc = new KubeConfig();
    kc.loadFromFile(opts.kubeconfig);
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    for (const [suffix, role] of [["", "system:node"], [":auth-delegator", "system:auth-delegator"]] as const) {
      await rbac
        .createClusterRoleBinding({
          body: {
            metadata: { name: `${CLUSTER_ROLE_BINDING}${suffix}` },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
            subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: `system:node:${NODE_NAME}` }],
          },
        })
        .catch((err: unknown) => {
          if ((err as { code?: number }).code !== 409) throw err;
        });
    }

    // The apiserver dials a kubelet by the node's Hostname address first.
    const hosts = readFileSync("/etc/hosts", "utf8");
    if (!hosts.includes(HOSTS_TAG)) writeFileSync("/etc/hosts", `${hosts.endsWith("\n") || hosts === "" ? hosts : `${hosts}\n`}127.0.0.1 ${NODE_NAME} ${HOSTS_TAG}\n`);
    writeFileSync(join(dir, "kubelet", "resolv.conf"), "# no upstream resolvers for pods (dnsPolicy Default)\noptions ndots:1\n");
    const [port, healthzPort] = [await freePort(), await freePort()];
    writeFileSync(join(dir, "kubelet", "config.yaml"), kubeletConfig(dir, socket, opts.pki, port, healthzPort));
    const kubelet = spawn("kubelet", kubeletPath(), [
      `--config=${join(dir, "kubelet", "config.yaml")}`,
      `--kubeconfig=${join(dir, "kubelet", "kubeconfig")}`,
      `--root-dir=${join(dir, "kubelet", "root")}`,
      `--cert-dir=${join(dir, "kubelet", "pki")}`,
      `--hostname-override=${NODE_NAME}`,
      // A node IP cannot be loopback; the bridge address is the host's on the pod network.
      `--node-ip=${BRIDGE_ADDRESS}`,
      `--node-labels=${NODE_LABEL}=true`,
      "--v=1",
    ]);
    const core = kc.makeApiClient(CoreV1Api);
    await waitUntilReady(
      kubelet,
      async () => {
        const node = await core.readNode({ name: NODE_NAME });
        return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
      },
      120_000,
    );
    log(`node ${NODE_NAME} Ready (${Math.round((Date.now() - started) / 1000)} s)`);

    const dns = corednsBuilt();
    if (dns) {
      const readyPort = await freePort();
      writeFileSync(
        join(dir, "Corefile"),
        // The bridge address only, cluster.local only, no forward plugin: nothing is asked elsewhere.
        `cluster.local:53 {\n  bind ${BRIDGE_ADDRESS}\n  ready 127.0.0.1:${readyPort}\n  errors\n  kubernetes cluster.local {\n    kubeconfig ${opts.kubeconfig}\n  }\n  cache 5\n}\n`,
      );
      const coredns = spawn("coredns", corednsPath(), ["-conf", join(dir, "Corefile")]);
      await waitUntilReady(coredns, async () => (await fetch(`http://127.0.0.1:${readyPort}/ready`)).ok, 60_000);
    }

    const storage = kc.makeApiClient(StorageV1Api);
    await storage
      .createStorageClass({
        body: {
          metadata: { name: STORAGE_CLASS, annotations: { "storageclass.kubernetes.io/is-default-class": "true" } },
          provisioner: PROVISIONER_NAME,
          allowVolumeExpansion: true,
          reclaimPolicy: "Delete",
          // The volume is made where the pod is scheduled (local volumes pin their pods).
          volumeBindingMode: "WaitForFirstConsumer",
        },
      })
      .catch((err: unknown) => {
        if ((err as { code?: number }).code !== 409) throw err;
      });
    const provisioner = spawn("provisioner", process.execPath, [
      join(import.meta.dirname, "provisioner.ts"),
      `--kubeconfig=${opts.kubeconfig}`,
      `--dir=${join(dir, "volumes")}`,
      `--node=${NODE_NAME}`,
    ]);
    await waitUntilReady(provisioner, () => Promise.resolve(existsSync(join(dir, "volumes", ".ready"))), 30_000);

    log(`real node up in ${Math.round((Date.now() - started) / 1000)} s`);
    return {
      name: NODE_NAME,
      podSubnet: POD_SUBNET,
      bridgeAddress: BRIDGE_ADDRESS,
      images: imageRefs,
      storageClass: STORAGE_CLASS,
      clusterDns: dns,
      dir,
      processes: readRecorded(dir),
    };
  } catch (err) {
    const kubeletLog = join(dir, "logs", "kubelet.log");
    await stopRealNode(dir, opts.kubeconfig);
    if (err instanceof EnvironmentError) throw err;
    throw new EnvironmentError(`real node: ${messageOf(err)}. kubelet log:\n${logTail(kubeletLog)}`);
  }
}

/**
 * Stops the node in `dir` and puts the host back: pods off the node (while the
 * kubelet runs, so volumes are unmounted and pod networks removed), the
 * kubelet, CoreDNS and the provisioner, any container left (by its cgroup),
 * containerd and its shims, mounts, network namespaces, the bridge, the
 * cgroups, iptables chains, sysctls, /etc/hosts, and the Node and its objects
 * when the apiserver still answers. Safe to call after a failed or killed
 * start, and more than once. Returns what it stopped.
 */
export async function stopRealNode(dir: string, kubeconfig?: string): Promise<string[]> {
  const snapshot = readSnapshot(join(dir, "host.json"));
  const recorded = readRecorded(dir);
  if (!snapshot && recorded.length === 0) return [];
  const stopped: string[] = [];
  const kc = new KubeConfig();
  let api = false;
  if (kubeconfig && existsSync(kubeconfig)) {
    kc.loadFromFile(kubeconfig);
    api = await kc
      .makeApiClient(CoreV1Api)
      .readNode({ name: NODE_NAME })
      .then(() => true, () => false);
  }
  const kubeletUp = recorded.some((p) => p.name === "kubelet" && stillOurs(p, dir));
  if (api && kubeletUp) {
    const core = kc.makeApiClient(CoreV1Api);
    // Cordoned first: a StatefulSet's replacement pods then wait unscheduled instead of coming back here.
    await core
      .patchNode({ name: NODE_NAME, body: { spec: { unschedulable: true } } }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch))
      .catch(() => undefined);
    const onNode = async () => (await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${NODE_NAME}` })).items;
    for (const pod of await onNode().catch(() => [])) {
      await core.deleteNamespacedPod({ name: pod.metadata?.name ?? "", namespace: pod.metadata?.namespace ?? "", gracePeriodSeconds: 5 }).catch(() => undefined);
    }
    const until = Date.now() + 45_000;
    while (Date.now() < until && (await onNode().catch(() => [])).length > 0) await sleep(500);
  }
  // Newest first; containerd after its containers are gone.
  for (const p of [...recorded].reverse()) {
    if (p.name === "containerd" || !stillOurs(p, dir)) continue;
    await stopPid(p.pid, 15_000);
    stopped.push(`${p.name} (pid ${p.pid})`);
  }
  const socket = join(dir, "containerd", "containerd.sock");
  const containerd = recorded.find((p) => p.name === "containerd" && stillOurs(p, dir));
  if (containerd) {
    const ctr = (args: string[]) => quiet("ctr", ["--address", socket, "-n", "k8s.io", ...args]);
    for (const id of (await ctr(["tasks", "ls", "-q"])).split("\n").filter(Boolean)) {
      await ctr(["tasks", "kill", "-s", "SIGKILL", id]);
      await ctr(["tasks", "delete", "-f", id]);
    }
    for (const id of (await ctr(["containers", "ls", "-q"])).split("\n").filter(Boolean)) await ctr(["containers", "delete", id]);
    await stopPid(containerd.pid, 15_000);
    stopped.push(`containerd (pid ${containerd.pid})`);
  }
  // Containers of a killed containerd, then their shims: found by the node's cgroups and socket.
  for (const pid of pidsInNodeCgroups()) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  for (const pid of pidsInNodeCgroups()) await stopPid(pid, 5_000);
  for (const pid of shimPids(socket)) await stopPid(pid, 5_000);
  // Our folder, and the machine folders that did not exist before the node (never rm -rf through a mount).
  await unmountUnder([dir, ...(snapshot?.absentPaths ?? [])]);
  for (const h of cgroupHierarchies()) removeCgroupTree(join(h, CGROUP_ROOT));
  if (snapshot) await restoreHost(snapshot, { bridge: BRIDGE });
  if (api) {
    const core = kc.makeApiClient(CoreV1Api);
    await core.deleteNode({ name: NODE_NAME }).catch(() => undefined);
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    for (const suffix of ["", ":auth-delegator"]) await rbac.deleteClusterRoleBinding({ name: `${CLUSTER_ROLE_BINDING}${suffix}` }).catch(() => undefined);
    await kc.makeApiClient(StorageV1Api).deleteStorageClass({ name: STORAGE_CLASS }).catch(() => undefined);
  }
  rmSync(join(dir, "host.json"), { force: true });
  rmSync(processesFile(dir), { force: true });
  releaseLock(dir);
  return stopped;
}
