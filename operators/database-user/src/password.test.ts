import { describe, expect, it } from "vitest";
import { nativePasswordHash, passwordFingerprint } from "./password.ts";

describe("passwordFingerprint", () => {
  it("is stable for a password and salt, and differs when either changes", async () => {
    const a = await passwordFingerprint("s3cret", "uid-1");
    expect(a).toMatch(/^scrypt:16384:8:1:[A-Za-z0-9+/]{43}=$/);
    expect(await passwordFingerprint("s3cret", "uid-1")).toBe(a);
    expect(await passwordFingerprint("s3cret!", "uid-1")).not.toBe(a);
    expect(await passwordFingerprint("s3cret", "uid-2")).not.toBe(a);
  });

  it("does not contain the password in any form", async () => {
    const password = "correct-horse-battery";
    const f = await passwordFingerprint(password, "uid");
    expect(f).not.toContain(password);
    expect(f).not.toContain(Buffer.from(password).toString("base64"));
  });
});

describe("nativePasswordHash", () => {
  it("is what mysql_native_password stores (SELECT PASSWORD(...) on MariaDB 10.11)", () => {
    expect(nativePasswordHash("x")).toBe("*B69027D44F6E5EDC07F1AEAD1477967B16F28227");
    expect(nativePasswordHash("pä\\ss'word")).toBe("*2D706902C2D29504D00FA0FB9A6CE97AC5D2FE49");
  });
});
