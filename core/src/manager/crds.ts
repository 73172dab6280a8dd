// Installing or verifying the CRDs of the loaded operators.
import { setTimeout as sleep } from "node:timers/promises";
import { applyIfChanged, builtin, isNotFound, type KubeClient, type KubeObject } from "../client/index.ts";
import type { CustomKind } from "./module.ts";

export type CrdPolicy = "install" | "verify";

interface CrdObject extends KubeObject {
  status?: { conditions?: { type: string; status: string }[] };
}

const established = (crd: CrdObject) => crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True") ?? false;

/**
 * "install": server-side apply each CRD (the manager owns its CRDs' fields)
 * and wait until it is Established. "verify": only check that each CRD is
 * there and Established — for installs where the chart manages CRDs and the
 * manager's RBAC has no write access to them. Fails with the missing names.
 */
export async function ensureCrds(client: KubeClient, kinds: CustomKind[], policy: CrdPolicy, timeoutMs = 60_000): Promise<void> {
  if (policy === "install") {
    for (const kind of kinds) {
      const live = await client.get<CrdObject>(builtin.customResourceDefinition, undefined, kind.crdName).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      // Apply only what differs, so a restart of a converged manager writes nothing.
      await applyIfChanged(client, builtin.customResourceDefinition, kind.crdManifest(), live);
    }
  }
  const until = Date.now() + timeoutMs;
  let missing: string[];
  do {
    missing = [];
    for (const kind of kinds) {
      const name = kind.crdName;
      try {
        const crd = await client.get<CrdObject>(builtin.customResourceDefinition, undefined, name);
        if (!established(crd)) missing.push(`${name} (not Established yet)`);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        missing.push(`${name} (not installed)`);
        if (policy === "verify") break;
      }
    }
    if (missing.length === 0) return;
    if (policy === "verify" && missing.some((m) => m.endsWith("(not installed)"))) break;
    await sleep(250);
  } while (Date.now() < until);
  throw new Error(
    `CustomResourceDefinitions missing: ${missing.join(", ")}. ` +
      (policy === "verify" ? "Install them first (`make install` or the Helm chart)." : "The API server did not establish them in time."),
  );
}
