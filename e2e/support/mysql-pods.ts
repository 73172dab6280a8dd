// What a kubelet and a storage provisioner would do for a MySQLCluster's pods,
// on a machine without a container runtime. KWOK makes the pods Running; this
// gives each one a real server: a local mariadbd started from the cluster's
// ConfigMap (the my.cnf the init container would copy, plus the pod's server
// id) with the root password of the Secret its container's environment names
// — as the official image's entrypoint would. It also binds each pending
// PersistentVolumeClaim to a PersistentVolume made for it, and answers the
// operators' ServerAddressResolver: a pod's DNS name (and the primary
// Service's, which follows the role label) maps to its local server.
//
// A server outlives its pod, like the data on a volume: a pod removed by
// scale-in leaves its server running (the tests look at it). A pod recreated
// with the same name (a restart by the operator) restarts its server on the
// same data, with the ConfigMap as it is now. An image tagged "broken" never
// starts a server: the container that crash-loops, for the health-gate tests.
// For the failover tests a pod's server can be killed (and revived on its
// data) and the pod marked not Ready, as a lost node's pods are (KWOK pods have
// no kubelet to notice), or cut off from the operator alone (partition): the
// operators connect through resolve(), while the servers replicate from, and
// applications connect to, what reach() returns — the pods' network, which a
// partition between the operator and a pod leaves as it is. The operator's
// link to a pod can also be slowed (slowLink): its connections then go through
// a throttled proxy, so a copy into that pod lasts as long as a test needs on
// any machine.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { builtin, isAlreadyExists, isNotFound, messageOf, type KubeClient, type KubeObject } from "@stateward/core";
import type { ServerAddress, ServerAddressResolver } from "@stateward/mysql";
import { MY_CNF_KEY, ROLE_LABEL, SERVER_ID_BASE, clusterNames } from "@stateward/operator-mysql-cluster";
import { isAlive, startMariaDB, stopMariaDB, TcpProxy, type MariaDBEndpoint } from "../harness/index.ts";
import { PV } from "./storage.ts";

interface Pod extends KubeObject {
  spec: { nodeName?: string; containers: { name: string; image?: string; env?: { name: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[] }[] };
}

interface Claim extends KubeObject {
  spec: { volumeName?: string; storageClassName?: string; accessModes?: string[]; resources?: { requests?: { storage?: string } } };
}

/** An address nothing listens on (the discard port): connecting is refused at once. */
const NOTHING_LISTENS: ServerAddress = { host: "127.0.0.1", port: 9 };

export interface LocalServer extends MariaDBEndpoint {
  pid: number;
  pod: string;
}

export class LocalPodServers implements ServerAddressResolver {
  private readonly client: KubeClient;
  private readonly dir: string;
  private readonly namespace: string;
  private readonly servers = new Map<string, Promise<LocalServer>>();
  /** The uid of the pod each server was started for. */
  private readonly startedFor = new Map<string, string>();
  private readonly volumes = new Set<string>();
  /** Pods whose server the operator does not reach (see partition). */
  private readonly cutOff = new Set<string>();
  /** Pods whose link from the operator is slowed (see slowLink): the bandwidth, and a proxy per server address. */
  private readonly slowed = new Map<string, { bytesPerSecond: number; proxies: Map<string, Promise<TcpProxy>> }>();
  private stopped = false;
  /** Every proxy slowLink made, stopped with the servers (a lifted limit keeps its proxy's open connections). */
  private readonly proxies: Promise<TcpProxy>[] = [];
  private loop: Promise<void> | undefined;
  /** Failures starting a server, by pod: a test asserts there are none. */
  readonly failures = new Map<string, string>();
  /** Why the last tick failed, if it did: it is retried, so only a timeout's message shows it. */
  private lastTickError: string | undefined;

  constructor(client: KubeClient, dir: string, namespace: string) {
    this.client = client;
    this.dir = dir;
    this.namespace = namespace;
  }

  start(): this {
    this.loop = (async () => {
      while (!this.stopped) {
        await this.tick().then(
          () => (this.lastTickError = undefined),
          (err: unknown) => (this.lastTickError = messageOf(err)),
        );
        await sleep(300);
      }
    })();
    return this;
  }

  /** The failures starting servers, for a test's error message ("" when none). */
  describeFailures(): string {
    return this.failures.size === 0 ? "" : `; pod servers that failed to start: ${[...this.failures].map(([pod, why]) => `${pod}: ${why}`).join("; ")}`;
  }

  /**
   * What this runtime knows of some pods, for a test's timeout message: each pod as it is now (uid,
   * node, deleting) beside the server started for it (and for which uid) — a server started for an
   * earlier pod of the same name is not resolved to — and why the last tick failed, if it did.
   */
  async describe(pods: string[]): Promise<string> {
    const parts = await Promise.all(
      pods.map(async (name) => {
        const live = await this.client.get<Pod>(builtin.pod, this.namespace, name).then(
          (p) => `uid ${p.metadata.uid}, node ${p.spec.nodeName ?? "none"}${p.metadata.deletionTimestamp ? ", deleting" : ""}`,
          (err: unknown) => `not read (${messageOf(err)})`,
        );
        const pending = this.servers.get(name);
        // A server still starting is reported as such, not waited for.
        const server = pending
          ? await Promise.race([
              pending.then((s) => `listening on ${s.port}`, (err: unknown) => `failed (${messageOf(err)})`),
              new Promise<string>((resolve) => setImmediate(() => resolve("starting"))),
            ])
          : "none";
        return `${name}: pod ${live}; server ${server}, started for uid ${this.startedFor.get(name) ?? "none"}`;
      }),
    );
    return `; ${parts.join("; ")}${this.lastTickError ? `; the last tick failed: ${this.lastTickError}` : ""}`;
  }

  /** The server of a pod, once started. */
  async server(pod: string): Promise<LocalServer | undefined> {
    return this.servers.get(pod);
  }

  /** The servers started so far, by pod (a server stays listed after its pod is gone, as its volume would). */
  async started(): Promise<Record<string, ServerAddress>> {
    const entries = await Promise.all([...this.servers].map(async ([pod, s]) => [pod, await s.catch(() => undefined)] as const));
    return Object.fromEntries(entries.flatMap(([pod, s]) => (s ? [[pod, { host: s.host, port: s.port }]] : [])));
  }

  /** Where the operators connect to a server known as `address`: where it is reached, unless its pod is cut off from them (partition). */
  async resolve(address: ServerAddress): Promise<ServerAddress> {
    const { pod, at } = await this.locate(address);
    // Looked at last: a partition made while the pod was being looked up holds for this connection too.
    if (pod === undefined || at === NOTHING_LISTENS) return at;
    if (this.cutOff.has(pod)) return NOTHING_LISTENS;
    const slow = this.slowed.get(pod);
    return slow ? this.throughProxy(slow, at) : at;
  }

  /**
   * Slows the operator's link to a pod's server to `bytesPerSecond` (both directions, all its connections
   * together), or lifts the limit (0). Connections made before keep the link they were made on: slow a
   * pod before the operator connects to it. The servers and applications (reach) are not slowed.
   */
  slowLink(pod: string, bytesPerSecond: number): void {
    const slow = this.slowed.get(pod);
    if (bytesPerSecond > 0 && !slow) this.slowed.set(pod, { bytesPerSecond, proxies: new Map() });
    if (!slow) return;
    slow.bytesPerSecond = bytesPerSecond;
    for (const proxy of slow.proxies.values()) void proxy.then((p) => p.throttle(bytesPerSecond));
    if (bytesPerSecond <= 0) this.slowed.delete(pod);
  }

  /** The throttled proxy in front of a server's address (one per address: a restarted server may listen elsewhere). */
  private async throughProxy(slow: { bytesPerSecond: number; proxies: Map<string, Promise<TcpProxy>> }, at: ServerAddress): Promise<ServerAddress> {
    const key = `${at.host}:${at.port}`;
    let proxy = slow.proxies.get(key);
    if (!proxy) {
      const made = new TcpProxy(at);
      made.throttle(slow.bytesPerSecond);
      proxy = made.start().then(() => made);
      slow.proxies.set(key, proxy);
      this.proxies.push(proxy);
    }
    const started = await proxy;
    return { host: "127.0.0.1", port: started.port };
  }

  /** What a server is told to replicate from: the pods reach each other whether or not the operator reaches them. */
  resolveForServer(address: ServerAddress): Promise<ServerAddress> {
    return this.reach(address);
  }

  /** Where a client inside the pods' network (an application, another server) reaches a server known as `address`. */
  async reach(address: ServerAddress): Promise<ServerAddress> {
    return (await this.locate(address)).at;
  }

  /**
   * Cuts the operator off from a pod's server, or heals the cut: its new connections through resolve() fail,
   * while the servers and applications (reach) still get through. Connections already made stay open: see
   * partitionFromOperator (support/mysql-failover.ts), which also closes the operator's.
   */
  partition(pod: string, cut: boolean): void {
    if (cut) this.cutOff.add(pod);
    else this.cutOff.delete(pod);
  }

  /** The pod a pod's or the primary Service's DNS name names, and where its server listens now. */
  private async locate(address: ServerAddress): Promise<{ pod?: string; at: ServerAddress }> {
    const suffix = `.${this.namespace}.svc.cluster.local`;
    if (!address.host.endsWith(suffix)) return { at: address };
    const [first, second] = address.host.slice(0, -suffix.length).split(".");
    let pod: string | undefined;
    if (second !== undefined && second.endsWith("-headless")) pod = first;
    else if (second === undefined && first?.endsWith("-primary")) {
      const cluster = first.slice(0, -"-primary".length);
      const pods = await this.client.list<Pod>(builtin.pod, { namespace: this.namespace, labelSelector: `app.kubernetes.io/instance=${cluster},${ROLE_LABEL}=primary` });
      pod = pods.items[0]?.metadata.name;
    }
    // The server must be the one started for the pod as it is now: right after a pod is recreated
    // the old container is gone, even if this runtime has not noticed yet.
    let current = false;
    if (pod !== undefined) {
      const live = await this.client.get<Pod>(builtin.pod, this.namespace, pod).catch(() => undefined);
      current = live !== undefined && this.startedFor.get(pod) === live.metadata.uid;
    }
    const server = pod === undefined || !current ? undefined : await this.servers.get(pod)?.catch(() => undefined);
    // Not started (yet): an address nothing listens on, so connecting fails as it would in a cluster.
    return { pod, at: server ? { host: server.host, port: server.port } : NOTHING_LISTENS };
  }

  private async tick(): Promise<void> {
    const claims = await this.client.list<Claim>(builtin.persistentVolumeClaim, { namespace: this.namespace });
    for (const claim of claims.items) {
      const name = claim.metadata.name ?? "";
      if (claim.spec.volumeName || this.volumes.has(name)) continue;
      await this.provision(claim);
      this.volumes.add(name);
    }
    const pods = await this.client.list<Pod>(builtin.pod, { namespace: this.namespace, labelSelector: "app.kubernetes.io/name=mysql-cluster" });
    for (const pod of pods.items) {
      const name = pod.metadata.name ?? "";
      const uid = pod.metadata.uid ?? "";
      if (!pod.spec.nodeName || pod.metadata.deletionTimestamp) continue;
      const previous = this.servers.get(name);
      if (previous && this.startedFor.get(name) === uid) continue;
      this.startedFor.set(name, uid);
      const started = (async () => {
        // Recreated: the old container is gone first.
        const old = await previous?.catch(() => undefined);
        if (old) await stopMariaDB(old);
        const image = pod.spec.containers[0]?.image ?? "";
        if (image.endsWith(":broken")) throw new Error(`image ${image} does not start (test image)`);
        return this.startServer(pod);
      })();
      this.servers.set(name, started);
      started.then(
        () => this.failures.delete(name),
        (err: unknown) => {
          this.failures.set(name, messageOf(err));
          // Tried again on the next tick, unless the image is one that never starts.
          if (!(pod.spec.containers[0]?.image ?? "").endsWith(":broken") && this.servers.get(name) === started) {
            this.servers.delete(name);
            this.startedFor.delete(name);
          }
        },
      );
    }
  }

  private async provision(claim: Claim): Promise<void> {
    const name = `${this.namespace}-${claim.metadata.name ?? ""}`;
    try {
      await this.client.create(PV, {
        apiVersion: "v1",
        kind: "PersistentVolume",
        metadata: { name, labels: { "stateward.io/test-namespace": this.namespace } },
        spec: {
          capacity: { storage: claim.spec.resources?.requests?.storage ?? "1Gi" },
          accessModes: claim.spec.accessModes ?? ["ReadWriteOnce"],
          persistentVolumeReclaimPolicy: "Delete",
          storageClassName: claim.spec.storageClassName ?? "",
          hostPath: { path: join(this.dir, "volumes", name) },
          claimRef: { namespace: this.namespace, name: claim.metadata.name },
        },
      } as KubeObject);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }

  private async startServer(pod: Pod): Promise<LocalServer> {
    const name = pod.metadata.name ?? "";
    const cluster = pod.metadata.labels?.["app.kubernetes.io/instance"] ?? "";
    const ordinal = Number(name.slice(cluster.length + 1));
    const cm = await this.client.get<KubeObject & { data?: Record<string, string> }>(builtin.configMap, this.namespace, clusterNames(cluster).configMap);
    const ref = pod.spec.containers[0]?.env?.find((e) => e.name.endsWith("_ROOT_PASSWORD"))?.valueFrom?.secretKeyRef;
    if (!ref) throw new Error(`pod ${name} has no root password in its environment`);
    const secret = await this.client.get<KubeObject & { data?: Record<string, string> }>(builtin.secret, this.namespace, ref.name);
    const password = Buffer.from(secret.data?.[ref.key] ?? "", "base64").toString("utf8");
    const dir = join(this.dir, "servers", this.namespace, name);
    mkdirSync(dir, { recursive: true });
    const defaultsFile = join(dir, "my.cnf");
    // What the init container writes: the cluster's my.cnf and the pod's server id.
    writeFileSync(defaultsFile, `${cm.data?.[MY_CNF_KEY] ?? ""}\n[mysqld]\nserver_id = ${SERVER_ID_BASE + ordinal}\n`);
    const ep = await startMariaDB({ dir, rootPassword: password, defaultsFile });
    return { ...ep, pod: name };
  }

  /** Kills a pod's server at once (SIGKILL, no shutdown): a crash or a lost node. The pod stays as it is; its server is not restarted until revive. */
  async kill(pod: string): Promise<void> {
    const server = await this.servers.get(pod);
    if (server?.pid === undefined) throw new Error(`no server runs for ${pod}`);
    process.kill(server.pid, "SIGKILL");
    while (isAlive(server.pid)) await sleep(20);
  }

  /**
   * Starts a killed pod's server again on its data, from the ConfigMap as it is now (a new port, as
   * a new container gets a new address); `fresh`: on an empty data directory, as after its volume was replaced.
   */
  async revive(pod: string, { fresh = false }: { fresh?: boolean } = {}): Promise<LocalServer> {
    const live = await this.client.get<Pod>(builtin.pod, this.namespace, pod);
    if (fresh) rmSync(join(this.dir, "servers", this.namespace, pod), { recursive: true, force: true });
    const started = this.startServer(live);
    this.servers.set(pod, started);
    this.startedFor.set(pod, live.metadata.uid ?? "");
    return started;
  }

  /** Sets the pod's Ready condition, as a kubelet (or the node controller, for a lost node) would. */
  async setPodReady(pod: string, ready: boolean, reason = "NodeLost"): Promise<void> {
    const condition = { type: "Ready", status: ready ? "True" : "False", reason: ready ? "" : reason, lastTransitionTime: new Date().toISOString() };
    await this.client.patch(builtin.pod, this.namespace, pod, { status: { conditions: [condition] } }, "strategic", "status");
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    const servers = await Promise.all([...this.servers.values()].map((s) => s.catch(() => undefined)));
    for (const s of servers) if (s) await stopMariaDB(s);
    for (const proxy of this.proxies) await (await proxy).stop();
    const volumes = await this.client.list(PV, { labelSelector: `stateward.io/test-namespace=${this.namespace}` }).catch(() => ({ items: [] }));
    for (const pv of volumes.items) {
      await this.client.delete(PV, undefined, pv.metadata.name ?? "").catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
    }
  }
}
