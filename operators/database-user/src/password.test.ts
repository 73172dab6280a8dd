import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fingerprintKeyNamespace, keyOf } from "./fingerprint-key.ts";
import { fingerprintMatches, keyId, legacyPasswordFingerprint, madeWithKey, nativePasswordHash, passwordFingerprint } from "./password.ts";

const key = Buffer.alloc(32, 7);
const otherKey = Buffer.alloc(32, 8);

describe("passwordFingerprint", () => {
  it("is an HMAC naming its key, stable for a password, salt and key, and differs when any changes", () => {
    const a = passwordFingerprint("s3cret", "uid-1", key);
    expect(a).toMatch(/^hmac-sha256:[0-9a-f]{8}:[A-Za-z0-9+/]{43}=$/);
    expect(a.split(":")[1]).toBe(keyId(key));
    expect(passwordFingerprint("s3cret", "uid-1", key)).toBe(a);
    expect(passwordFingerprint("s3cret!", "uid-1", key)).not.toBe(a);
    expect(passwordFingerprint("s3cret", "uid-2", key)).not.toBe(a);
    expect(passwordFingerprint("s3cret", "uid-1", otherKey)).not.toBe(a);
  });

  it("does not contain the password or the key in any form", () => {
    const password = "correct-horse-battery";
    const f = passwordFingerprint(password, "uid", key);
    for (const secret of [password, Buffer.from(password).toString("base64"), key.toString("base64"), key.toString("hex")]) expect(f).not.toContain(secret);
  });

  it("costs microseconds, not scrypt's tens of milliseconds", () => {
    const started = performance.now();
    for (let i = 0; i < 1000; i++) passwordFingerprint(`pw-${i}`, "uid", key);
    expect((performance.now() - started) / 1000).toBeLessThan(1); // ms per fingerprint, with a wide margin for a loaded machine
  });
});

describe("fingerprintMatches", () => {
  it("recognises its own fingerprints, and not another password's", async () => {
    const f = passwordFingerprint("s3cret", "uid-1", key);
    expect(await fingerprintMatches(f, "s3cret", "uid-1", key)).toBe(true);
    expect(await fingerprintMatches(f, "s3cret!", "uid-1", key)).toBe(false);
    expect(await fingerprintMatches(f, "s3cret", "uid-2", key)).toBe(false);
  });

  it("takes a fingerprint made with a lost key as no match (the password is set once more)", async () => {
    expect(await fingerprintMatches(passwordFingerprint("s3cret", "uid-1", otherKey), "s3cret", "uid-1", key)).toBe(false);
  });

  it("still recognises the scrypt fingerprints older releases wrote", async () => {
    // As an older release wrote it for this password and uid (its format: scrypt:N:r:p:base64).
    const old = await legacyPasswordFingerprint("s3cret", "uid-1");
    expect(old).toMatch(/^scrypt:16384:8:1:[A-Za-z0-9+/]{43}=$/);
    expect(await fingerprintMatches(old, "s3cret", "uid-1", key)).toBe(true);
    expect(await fingerprintMatches(old, "other", "uid-1", key)).toBe(false);
  });

  it("takes an unknown format as no match", async () => {
    expect(await fingerprintMatches("sha512:abc", "s3cret", "uid-1", key)).toBe(false);
    expect(await fingerprintMatches("", "s3cret", "uid-1", key)).toBe(false);
  });
});

describe("madeWithKey", () => {
  it("tells an HMAC under this key (cheap to check every time) from one under a lost key or an older format", async () => {
    expect(madeWithKey(passwordFingerprint("s3cret", "uid-1", key), key)).toBe(true);
    expect(madeWithKey(passwordFingerprint("s3cret", "uid-1", otherKey), key)).toBe(false);
    expect(madeWithKey(await legacyPasswordFingerprint("s3cret", "uid-1"), key)).toBe(false);
    expect(madeWithKey("", key)).toBe(false);
  });
});

describe("the fingerprint key", () => {
  it("is read from the Secret's key entry, and refused when too short to be a key", () => {
    expect(keyOf({ metadata: {}, data: { key: key.toString("base64") } })).toEqual(key);
    expect(keyOf({ metadata: {}, data: { key: Buffer.alloc(4).toString("base64") } })).toBeUndefined();
    expect(keyOf({ metadata: {}, data: {} })).toBeUndefined();
  });

  it("lives in the manager's namespace: POD_NAMESPACE, the service account's, the first watched one, default", () => {
    const dir = mkdtempSync(join(tmpdir(), "sa-"));
    const saFile = join(dir, "namespace");
    const missing = join(dir, "missing");
    expect(fingerprintKeyNamespace(["a"], { POD_NAMESPACE: "ops" }, saFile)).toBe("ops");
    writeFileSync(saFile, "stateward-system\n");
    expect(fingerprintKeyNamespace(["a"], {}, saFile)).toBe("stateward-system");
    expect(fingerprintKeyNamespace(["a", "b"], {}, missing)).toBe("a");
    expect(fingerprintKeyNamespace([], {}, missing)).toBe("default");
  });
});

describe("nativePasswordHash", () => {
  it("is what mysql_native_password stores (SELECT PASSWORD(...) on MariaDB 10.11)", () => {
    expect(nativePasswordHash("x")).toBe("*B69027D44F6E5EDC07F1AEAD1477967B16F28227");
    expect(nativePasswordHash("pä\\ss'word")).toBe("*2D706902C2D29504D00FA0FB9A6CE97AC5D2FE49");
  });
});
