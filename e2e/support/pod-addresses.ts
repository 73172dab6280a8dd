// How a process on this machine reaches a Service or a pod of the real node by
// its cluster DNS name. Inside the node, pods resolve those names with the
// node's CoreDNS; this machine has neither that resolver nor kube-proxy (the
// network rule allows no route into the Service range), but it is on the
// pods' bridge, so a name is reached at the IP of the pod behind it:
//   <pod>.<service>.<ns>.svc.cluster.local -> the pod's IP
//   <service>.<ns>.svc.cluster.local       -> the IP of a Ready pod its selector picks
// (the primary Service follows the role label, as kube-proxy would).
// Anything else is returned unchanged. With CoreDNS, the servers in the pods
// are told the names themselves (resolveForServer).
import { builtin, type KubeClient, type KubeObject } from "@stateward/core";
import type { ServerAddress, ServerAddressResolver } from "@stateward/mysql";

interface Pod extends KubeObject {
  status?: { podIP?: string; conditions?: { type: string; status: string }[] };
}

interface Service extends KubeObject {
  spec?: { selector?: Record<string, string>; ports?: { port: number; targetPort?: number | string }[] };
}

const SUFFIX = ".svc.cluster.local";

export class PodAddresses implements ServerAddressResolver {
  private readonly client: KubeClient;
  private readonly clusterDns: boolean;

  /** `clusterDns`: the node serves cluster DNS to its pods (CoreDNS runs), so servers are told names. */
  constructor(client: KubeClient, opts: { clusterDns?: boolean } = {}) {
    this.client = client;
    this.clusterDns = opts.clusterDns ?? false;
  }

  /**
   * With the node's CoreDNS the pods resolve cluster DNS names themselves: a
   * replica follows the primary by its name, as in any cluster. Without it,
   * by the IP this process resolves the name to.
   */
  resolveForServer(address: ServerAddress): Promise<ServerAddress> {
    return this.clusterDns ? Promise.resolve(address) : this.resolve(address);
  }

  async resolve(address: ServerAddress): Promise<ServerAddress> {
    if (!address.host.endsWith(SUFFIX)) return address;
    const parts = address.host.slice(0, -SUFFIX.length).split(".");
    if (parts.length === 3) {
      const [pod, , ns] = parts as [string, string, string];
      const ip = (await this.client.get<Pod>(builtin.pod, ns, pod).catch(() => undefined))?.status?.podIP;
      return ip ? { host: ip, port: address.port } : unreachable;
    }
    if (parts.length !== 2) return address;
    const [name, ns] = parts as [string, string];
    const svc = await this.client.get<Service>(builtin.service, ns, name).catch(() => undefined);
    const selector = svc?.spec?.selector;
    if (!svc || !selector || Object.keys(selector).length === 0) return unreachable;
    const pods = await this.client.list<Pod>(builtin.pod, { namespace: ns, labelSelector: Object.entries(selector).map(([k, v]) => `${k}=${v}`).join(",") });
    const ready = pods.items.find((p) => p.status?.podIP && !p.metadata.deletionTimestamp && p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
    const target = svc.spec?.ports?.find((p) => p.port === address.port)?.targetPort;
    return ready?.status?.podIP ? { host: ready.status.podIP, port: typeof target === "number" ? target : address.port } : unreachable;
  }
}

/** Where nothing listens: connecting fails as it would to a Service with no ready endpoint. */
const unreachable: ServerAddress = { host: "127.0.0.1", port: 9 };
