// Small conveniences for integration tests that talk to the real API server.
import { KubeConfig } from "@kubernetes/client-node";
import { builtin, isNotFound, KubeClient, type KubeObject } from "@stateward/core";
import { randomBytes } from "node:crypto";
import { waitFor } from "./wait.ts";

export function kubeConfigFrom(path: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

/** A client for the test itself (field manager "e2e-test"), separate from any manager's. */
export function testClient(kubeconfig: string): KubeClient {
  return new KubeClient({ kubeConfig: kubeConfigFrom(kubeconfig), fieldManager: "e2e-test" });
}

/** Creates a namespace with a unique name and waits for its default ServiceAccount. */
export async function freshNamespace(client: KubeClient, prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString("hex")}`;
  await client.create(builtin.namespace, { metadata: { name } });
  return name;
}

export async function deleteNamespace(client: KubeClient, name: string): Promise<void> {
  await client.delete(builtin.namespace, undefined, name).catch((err: unknown) => {
    if (!isNotFound(err)) throw err;
  });
}

export async function waitGone(client: KubeClient, rt: Parameters<KubeClient["get"]>[0], namespace: string | undefined, name: string, timeoutMs = 30_000): Promise<void> {
  await waitFor(`${rt.kind} ${name} to be gone`, async () => {
    try {
      await client.get<KubeObject>(rt, namespace, name);
      return undefined;
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
  }, timeoutMs);
}
