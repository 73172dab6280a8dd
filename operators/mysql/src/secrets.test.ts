import { ApiError, type Cache, type KubeClient } from "@stateward/core";
import { describe, expect, it, vi } from "vitest";
import { MissingSecretError, SecretReader, secretValue, type Secret } from "./secrets.ts";

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

// A synced Secrets cache (metadata only, or whole Secrets) whose resourceVersion the test moves, and
// an API whose GETs answer with the Secret as it then is, or 404, when the test says so.
function aheadReader(opts: { whole?: boolean } = {}) {
  let version: string | undefined = "1";
  let exists = true;
  const pending: (() => void)[] = [];
  let gets = 0;
  const secret = (rv: string): Secret => ({ apiVersion: "v1", kind: "Secret", type: "Opaque", metadata: { name: "pw", namespace: "team", resourceVersion: rv }, data: {} });
  const cache = {
    informers: () => [{ resource: { apiVersion: "v1", plural: "secrets" }, hasSynced: () => true }],
    get: () => (version === undefined ? undefined : opts.whole ? secret(version) : { apiVersion: "v1", kind: "Secret", metadata: { name: "pw", namespace: "team", resourceVersion: version } }),
  } as unknown as Cache;
  const client = {
    get: () => {
      gets++;
      const rv = version ?? "0";
      const found = exists;
      return new Promise<Secret>((resolve, reject) =>
        pending.push(() => (found ? resolve(secret(rv)) : reject(new ApiError(404, "NotFound", 'secrets "pw" not found')))),
      );
    },
  } as unknown as KubeClient;
  return {
    secrets: new SecretReader(client, cache),
    gets: () => gets,
    answer: () => pending.splice(0).forEach((settle) => settle()),
    change: (rv: string) => (version = rv),
    remove: () => (exists = false),
  };
}

describe("SecretReader.readAhead", () => {
  it("starts the GET that the next read answers from: one GET in all", async () => {
    const r = aheadReader();
    r.secrets.readAhead("team", "pw");
    r.secrets.readAhead("team", "pw"); // already under way: no second GET
    expect(r.gets()).toBe(1);
    r.answer();
    expect((await r.secrets.read("team", "pw"))?.metadata.resourceVersion).toBe("1");
    expect(r.gets()).toBe(1);
    // Taken by that read: the next one fetches.
    const again = r.secrets.read("team", "pw");
    r.answer();
    await again;
    expect(r.gets()).toBe(2);
  });

  it("fetches again when the Secret changed after it was read ahead", async () => {
    const r = aheadReader();
    r.secrets.readAhead("team", "pw");
    r.answer();
    r.change("2");
    const read = r.secrets.read("team", "pw");
    await vi.waitFor(() => expect(r.gets()).toBe(2));
    r.answer();
    expect((await read)?.metadata.resourceVersion).toBe("2");
    expect(r.gets()).toBe(2);
  });

  it("fetches again when the read ahead found no Secret (it may exist by now)", async () => {
    const r = aheadReader();
    r.remove();
    r.secrets.readAhead("team", "pw");
    r.answer();
    const read = r.secrets.read("team", "pw");
    await vi.waitFor(() => expect(r.gets()).toBe(2));
    r.answer();
    expect(await read).toBeUndefined();
    expect(r.gets()).toBe(2);
  });

  it("drops what no read took within 10 s (its object was deleted while queued): the next read fetches", async () => {
    vi.useFakeTimers();
    try {
      const r = aheadReader();
      r.secrets.readAhead("team", "pw");
      r.answer();
      vi.advanceTimersByTime(10_000);
      const read = r.secrets.read("team", "pw");
      expect(r.gets()).toBe(2);
      r.answer();
      expect((await read)?.metadata.resourceVersion).toBe("1");
    } finally {
      vi.useRealTimers();
    }
  });

  it("reads nothing ahead when the cache holds whole Secrets", async () => {
    const r = aheadReader({ whole: true });
    r.secrets.readAhead("team", "pw");
    expect(r.gets()).toBe(0);
    expect((await r.secrets.read("team", "pw"))?.type).toBe("Opaque");
    expect(r.gets()).toBe(0);
  });
});

describe("secretValue", () => {
  const withData = (data: Record<string, string>): Secret => ({ apiVersion: "v1", kind: "Secret", metadata: { name: "pw", namespace: "team" }, data });

  it("decodes UTF-8 text, a multi-byte character and a leading BOM kept", () => {
    expect(secretValue(withData({ password: Buffer.from("pé€😀").toString("base64") }), "password")).toBe("pé€😀");
    expect(secretValue(withData({ password: Buffer.from("\uFEFFx").toString("base64") }), "password")).toBe("\uFEFFx");
  });

  it("refuses bytes that are not UTF-8 (Latin-1 é, a cut sequence) without naming the value", () => {
    for (const bytes of [[0x70, 0xe9, 0x21], [0x61, 0xe2, 0x82]]) {
      const err = (() => {
        try {
          secretValue(withData({ password: Buffer.from(bytes).toString("base64") }), "password");
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(MissingSecretError);
      expect(err).toMatchObject({ reason: "SecretValueNotText", message: "Secret pw key password is not UTF-8 text: store the value UTF-8 encoded" });
    }
  });

  it("names a missing key", () => {
    expect(() => secretValue(withData({}), "password")).toThrow("Secret pw has no key password");
  });
});
