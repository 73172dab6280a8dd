// A real Kubernetes control plane on loopback: etcd, kube-apiserver (RBAC on,
// client-certificate admin), kube-controller-manager, kube-scheduler, and KWOK
// with a few fake Nodes so that pods get scheduled and become Running/Ready
// without a container runtime.
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { httpsGet } from "./http.ts";
import { writeKubeconfig } from "./kubeconfig.ts";
import { ensurePki, readPem, type ClusterPki } from "./pki.ts";
import { freePort } from "./ports.ts";
import { EnvironmentError, startProcess, stopPid, waitUntilReady, type RunningProcess } from "./process.ts";
import { kwokStages, tools } from "./tools.ts";

/** Deadlines for each component to answer its health check; generous for a loaded 2-core CI machine. */
const deadlines = {
  etcd: 30_000,
  apiserver: 90_000,
  controllerManager: 60_000,
  scheduler: 60_000,
  nodesReady: 60_000,
};

export interface ControlPlaneOptions {
  /** Folder for certificates, data, kubeconfigs and logs. */
  dir: string;
  /** Keep the processes running after this Node process exits (`make dev-up`). */
  detached: boolean;
  /** Number of fake KWOK nodes. Defaults to 3 (room for anti-affinity across three pods). */
  nodes?: number;
  /** Extra kube-apiserver flags, e.g. ["--watch-cache=false"] for tests of expired resourceVersions. */
  apiserverArgs?: string[];
  /** Start only etcd and kube-apiserver (no controller-manager, scheduler, KWOK): enough for runtime tests. Defaults to false. */
  apiOnly?: boolean;
}

export interface ControlPlaneInfo {
  server: string;
  kubeconfig: string;
  pki: ClusterPki;
  etcdUrl: string;
  processes: { name: string; pid: number; logFile: string }[];
}

export class ControlPlane {
  readonly dir: string;
  readonly detached: boolean;
  readonly nodeCount: number;
  private readonly extraApiserverArgs: string[];
  private readonly apiOnly: boolean;
  private readonly logs: string;
  private procs = new Map<string, RunningProcess>();
  private pki!: ClusterPki;
  private etcdUrl = "";
  private apiserverPort = 0;
  private apiserverArgs: string[] = [];

  constructor(opts: ControlPlaneOptions) {
    this.dir = opts.dir;
    this.detached = opts.detached;
    this.nodeCount = opts.nodes ?? 3;
    this.extraApiserverArgs = opts.apiserverArgs ?? [];
    this.apiOnly = opts.apiOnly ?? false;
    this.logs = join(opts.dir, "logs");
  }

  get server(): string {
    return `https://127.0.0.1:${this.apiserverPort}`;
  }

  get kubeconfigPath(): string {
    return join(this.dir, "kubeconfig");
  }

  info(): ControlPlaneInfo {
    return {
      server: this.server,
      kubeconfig: this.kubeconfigPath,
      pki: this.pki,
      etcdUrl: this.etcdUrl,
      processes: [...this.procs.values()].map(({ name, pid, logFile }) => ({ name, pid, logFile })),
    };
  }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromFile(this.kubeconfigPath);
    return kc;
  }

  async start(): Promise<void> {
    mkdirSync(this.logs, { recursive: true });
    this.pki = await ensurePki(join(this.dir, "pki"));
    try {
      await this.startEtcd();
      this.apiserverPort = await freePort();
      writeKubeconfig(this.kubeconfigPath, {
        server: this.server,
        caPem: readPem(this.pki.caCert),
        user: { name: "stateward-admin", certPem: readPem(this.pki.adminCert), keyPem: readPem(this.pki.adminKey) },
      });
      await this.startApiserver();
      if (!this.apiOnly) {
        await Promise.all([this.startControllerManager(), this.startScheduler()]);
        await this.startKwok();
        await this.createNodes();
      }
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  /** Stops every component, newest first. */
  async stop(): Promise<void> {
    for (const proc of [...this.procs.values()].reverse()) await stopPid(proc.pid);
    this.procs.clear();
  }

  /** Kills kube-apiserver (etcd keeps the data); for resilience tests. */
  async stopApiserver(): Promise<void> {
    const proc = this.procs.get("kube-apiserver");
    if (proc) await stopPid(proc.pid);
    this.procs.delete("kube-apiserver");
  }

  /** Starts kube-apiserver again on the same port, with the same etcd. */
  async startApiserver(): Promise<void> {
    if (this.apiserverArgs.length === 0) this.apiserverArgs = this.apiserverFlags();
    const proc = this.spawn("kube-apiserver", tools.kubeApiserver(), this.apiserverArgs);
    const tls = { ca: readPem(this.pki.caCert), cert: readPem(this.pki.adminCert), key: readPem(this.pki.adminKey) };
    await waitUntilReady(proc, async () => (await httpsGet(`${this.server}/readyz`, tls)).status === 200, deadlines.apiserver);
  }

  private spawn(name: string, command: string, args: string[]): RunningProcess {
    const proc = startProcess({ name, command, args, logFile: join(this.logs, `${name}.log`), detached: this.detached });
    this.procs.set(name, proc);
    return proc;
  }

  private async startEtcd(): Promise<void> {
    const [client, peer] = [await freePort(), await freePort()];
    this.etcdUrl = `http://127.0.0.1:${client}`;
    const peerUrl = `http://127.0.0.1:${peer}`;
    const proc = this.spawn("etcd", tools.etcd(), [
      "--name=stateward",
      `--data-dir=${join(this.dir, "etcd")}`,
      `--listen-client-urls=${this.etcdUrl}`,
      `--advertise-client-urls=${this.etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=stateward=${peerUrl}`,
      // A throw-away test store: durability is not worth the fsync latency.
      "--unsafe-no-fsync=true",
      "--log-level=warn",
    ]);
    await waitUntilReady(
      proc,
      async () => {
        const res = await fetch(`${this.etcdUrl}/health`);
        return res.ok && ((await res.json()) as { health?: string }).health === "true";
      },
      deadlines.etcd,
    );
  }

  private apiserverFlags(): string[] {
    return [
      `--etcd-servers=${this.etcdUrl}`,
      `--secure-port=${this.apiserverPort}`,
      "--bind-address=127.0.0.1",
      "--advertise-address=127.0.0.1",
      `--tls-cert-file=${this.pki.serverCert}`,
      `--tls-private-key-file=${this.pki.serverKey}`,
      `--client-ca-file=${this.pki.caCert}`,
      `--cert-dir=${join(this.dir, "apiserver-certs")}`,
      "--service-cluster-ip-range=10.0.0.0/24",
      "--allow-privileged=true",
      // RBAC stays on: the chart's RBAC is tested for real.
      "--authorization-mode=RBAC",
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      `--service-account-key-file=${this.pki.serviceAccountPub}`,
      `--service-account-signing-key-file=${this.pki.serviceAccountKey}`,
      // How the apiserver proves itself to a kubelet (logs, exec, port-forward on the real node).
      `--kubelet-client-certificate=${this.pki.kubeletClientCert}`,
      `--kubelet-client-key=${this.pki.kubeletClientKey}`,
      "--v=1",
      ...this.extraApiserverArgs,
    ];
  }

  get apiserverPortNumber(): number {
    return this.apiserverPort;
  }

  /** The admin client identity and CA, for writing kubeconfigs that point elsewhere (e.g. through a proxy). */
  adminCredentials(): { caPem: string; certPem: string; keyPem: string } {
    return { caPem: readPem(this.pki.caCert), certPem: readPem(this.pki.adminCert), keyPem: readPem(this.pki.adminKey) };
  }

  /**
   * A second kube-apiserver on the same etcd (as in an HA control plane), so
   * a test can change objects while the first one is down. Returns its kubeconfig.
   */
  async startSecondApiserver(): Promise<string> {
    const port = await freePort();
    const args = this.apiserverFlags().map((a) => (a.startsWith("--secure-port=") ? `--secure-port=${port}` : a));
    args.push(`--cert-dir=${join(this.dir, "apiserver-2-certs")}`);
    const proc = this.spawn("kube-apiserver-2", tools.kubeApiserver(), args);
    const tls = { ca: readPem(this.pki.caCert), cert: readPem(this.pki.adminCert), key: readPem(this.pki.adminKey) };
    await waitUntilReady(proc, async () => (await httpsGet(`https://127.0.0.1:${port}/readyz`, tls)).status === 200, deadlines.apiserver);
    const path = join(this.dir, "kubeconfig-2");
    writeKubeconfig(path, { server: `https://127.0.0.1:${port}`, caPem: tls.ca, user: { name: "stateward-admin", certPem: tls.cert, keyPem: tls.key } });
    return path;
  }

  /** kubeconfig files for the other components: the admin identity. */
  private componentKubeconfigArgs(): string[] {
    return [
      `--kubeconfig=${this.kubeconfigPath}`,
      `--authentication-kubeconfig=${this.kubeconfigPath}`,
      `--authorization-kubeconfig=${this.kubeconfigPath}`,
    ];
  }

  private async startControllerManager(): Promise<void> {
    const port = await freePort();
    const proc = this.spawn("kube-controller-manager", tools.kubeControllerManager(), [
      ...this.componentKubeconfigArgs(),
      "--bind-address=127.0.0.1",
      `--secure-port=${port}`,
      `--cert-dir=${join(this.dir, "controller-manager-certs")}`,
      "--leader-elect=false",
      `--root-ca-file=${this.pki.caCert}`,
      `--service-account-private-key-file=${this.pki.serviceAccountKey}`,
      "--use-service-account-credentials=true",
      `--cluster-signing-cert-file=${this.pki.caCert}`,
      `--cluster-signing-key-file=${this.pki.caKey}`,
      "--v=1",
    ]);
    await waitUntilReady(
      proc,
      async () => (await httpsGet(`https://127.0.0.1:${port}/healthz`, { insecure: true })).status === 200,
      deadlines.controllerManager,
    );
  }

  private async startScheduler(): Promise<void> {
    const port = await freePort();
    const proc = this.spawn("kube-scheduler", tools.kubeScheduler(), [
      ...this.componentKubeconfigArgs(),
      "--bind-address=127.0.0.1",
      `--secure-port=${port}`,
      `--cert-dir=${join(this.dir, "scheduler-certs")}`,
      "--leader-elect=false",
      "--v=1",
    ]);
    await waitUntilReady(
      proc,
      async () => (await httpsGet(`https://127.0.0.1:${port}/healthz`, { insecure: true })).status === 200,
      deadlines.scheduler,
    );
  }

  private async startKwok(): Promise<void> {
    const port = await freePort();
    const proc = this.spawn("kwok", tools.kwok(), [
      `--kubeconfig=${this.kubeconfigPath}`,
      // Only the fake nodes (createNodes annotates them): a real node next to them keeps its
      // own status and pods — KWOK would otherwise also mark every readiness gate True.
      "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
      ...kwokStages().map((f) => `--config=${f}`),
      // Nodes renew a Lease like a kubelet, so the node lifecycle controller keeps them Ready.
      "--node-lease-duration-seconds=40",
      // Pod IPs come from here; it must not overlap the service range.
      "--cidr=10.244.0.0/16",
      "--node-ip=127.0.0.1",
      `--server-address=127.0.0.1:${port}`,
      "--v=INFO",
    ]);
    await waitUntilReady(
      proc,
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`);
        return res.ok;
      },
      deadlines.controllerManager,
    );
  }

  private async createNodes(): Promise<void> {
    const core = this.kubeConfig().makeApiClient(CoreV1Api);
    for (let i = 0; i < this.nodeCount; i++) {
      const name = `kwok-node-${i}`;
      try {
        await core.createNode({
          body: {
            metadata: {
              name,
              labels: { "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", type: "kwok" },
              annotations: { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0" },
            },
          },
        });
      } catch (err) {
        if ((err as { code?: number }).code !== 409) throw err;
      }
    }
    const until = Date.now() + deadlines.nodesReady;
    while (Date.now() < until) {
      const nodes = await core.listNode();
      const ready = nodes.items.filter((n) => n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
      if (ready.length >= this.nodeCount) return;
      await sleep(250);
    }
    throw new EnvironmentError(`KWOK did not make ${this.nodeCount} nodes Ready within ${deadlines.nodesReady / 1000} s; see ${join(this.logs, "kwok.log")}`);
  }
}
