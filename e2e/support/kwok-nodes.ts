// A KWOK Node turned not Ready, as its kubelet reports when its container
// runtime is down (or stops reporting, and the node controller says so). KWOK
// keeps the Nodes it manages Ready (its node-initialize stage sets Ready True
// again at once), so the Node is taken from it first — KWOK manages only the
// Nodes with its annotation (the harness's --manage-nodes-with-annotation-selector)
// — and given back afterwards, which makes it Ready again.
import { setTimeout as sleep } from "node:timers/promises";
import { resourceType, type KubeClient, type KubeObject } from "@stateward/core";
import { waitFor } from "./wait.ts";

export const NODE = resourceType("v1", "Node", "nodes", false);
/** The annotation KWOK manages its Nodes by (see the harness's KWOK flags). */
const KWOK_ANNOTATION = "kwok.x-k8s.io/node";

interface Node extends KubeObject {
  status?: { conditions?: { type: string; status: string }[] };
}

export class NotReadyNode {
  readonly name: string;
  private readonly client: KubeClient;
  private reporting = true;
  private readonly loop: Promise<void>;

  private constructor(client: KubeClient, name: string) {
    this.client = client;
    this.name = name;
    const since = new Date().toISOString();
    // Said again and again, as a kubelet keeps reporting (should anything set it back meanwhile).
    this.loop = (async () => {
      while (this.reporting) {
        const notReady = { type: "Ready", status: "False", reason: "KubeletNotReady", message: "container runtime is down", lastHeartbeatTime: new Date().toISOString(), lastTransitionTime: since };
        await client.patch(NODE, undefined, name, { status: { conditions: [notReady] } }, "strategic", "status").catch(() => undefined);
        await sleep(200);
      }
    })();
  }

  /** Takes `name` from KWOK and reports it not Ready (False, KubeletNotReady) until restore(). */
  static async take(client: KubeClient, name: string): Promise<NotReadyNode> {
    await client.patch(NODE, undefined, name, { metadata: { annotations: { [KWOK_ANNOTATION]: null } } });
    return new NotReadyNode(client, name);
  }

  /** Stops reporting and gives the Node back to KWOK; waits until it is Ready again (later suites schedule onto it). */
  async restore(): Promise<void> {
    this.reporting = false;
    await this.loop;
    await this.client.patch(NODE, undefined, this.name, { metadata: { annotations: { [KWOK_ANNOTATION]: "fake" } } });
    await waitFor(`node ${this.name} Ready again`, async () => {
      const node = await this.client.get<Node>(NODE, undefined, this.name);
      return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? true : undefined;
    }, 30_000, 200);
  }
}
