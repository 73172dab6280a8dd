import type { Cache, KubeClient } from "@stateward/core";
import { describe, expect, it } from "vitest";
import { SecretReader, type Secret } from "./secrets.ts";

// A synced, metadata-only Secrets cache showing one resourceVersion, and an API whose GETs
// answer when the test says so: what readRecurring sees while an instance is forgotten.
function reader(resourceVersion: string) {
  const pending: ((s: Secret) => void)[] = [];
  let gets = 0;
  const secret: Secret = { apiVersion: "v1", kind: "Secret", type: "Opaque", metadata: { name: "admin", namespace: "team", resourceVersion }, data: {} };
  const cache = {
    informers: () => [{ resource: { apiVersion: "v1", plural: "secrets" }, hasSynced: () => true }],
    get: () => ({ apiVersion: "v1", kind: "Secret", metadata: { name: "admin", namespace: "team", resourceVersion } }),
  } as unknown as Cache;
  const client = {
    get: () => {
      gets++;
      return new Promise<Secret>((resolve) => pending.push(resolve));
    },
  } as unknown as KubeClient;
  const answer = () => pending.splice(0).forEach((resolve) => resolve(secret));
  return { secrets: new SecretReader(client, cache), gets: () => gets, answer };
}

describe("SecretReader.readRecurring", () => {
  it("fetches once per resourceVersion", async () => {
    const r = reader("7");
    const first = r.secrets.readRecurring("team", "admin");
    r.answer();
    await first;
    await r.secrets.readRecurring("team", "admin");
    expect(r.gets()).toBe(1);
  });

  it("fetches again after forgetRecurring", async () => {
    const r = reader("7");
    const first = r.secrets.readRecurring("team", "admin");
    r.answer();
    await first;
    r.secrets.forgetRecurring(["team/admin"]);
    const again = r.secrets.readRecurring("team", "admin");
    r.answer();
    await again;
    expect(r.gets()).toBe(2);
  });

  it("does not keep what a read in flight when the Secret was forgotten brings back", async () => {
    const r = reader("7");
    const inFlight = r.secrets.readRecurring("team", "admin");
    r.secrets.forgetRecurring(["team/admin"]);
    r.answer();
    expect((await inFlight)?.metadata.resourceVersion).toBe("7");
    const next = r.secrets.readRecurring("team", "admin");
    r.answer();
    await next;
    expect(r.gets()).toBe(2);
  });
});
