import { execFileSync } from "node:child_process";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { captureLogs, createLogger } from "./index.ts";

describe("createLogger", () => {
  it("writes one JSON object per line with a level label, ISO time and msg", () => {
    const written: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        written.push(chunk.toString());
        callback();
      },
    });
    const logger = createLogger({ destination });
    logger.info("starting manager", { version: "0.1.0" });
    logger.debug("dropped at the default level");
    logger.warn("lease lost");

    const text = written.join("");
    expect(text.endsWith("\n")).toBe(true);
    const lines = text.trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toEqual({ level: "info", time: expect.any(String) as unknown, version: "0.1.0", msg: "starting manager" });
    expect(lines[1]).toMatchObject({ level: "warn", msg: "lease lost" });
    const time = lines[0]?.time as string;
    expect(time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Math.abs(Date.parse(time) - Date.now())).toBeLessThan(60_000);
  });

  it("writes to stdout by default, and the last line survives an immediate exit", () => {
    const index = new URL("./index.ts", import.meta.url).pathname;
    const script = [
      `import { createLogger } from ${JSON.stringify(index)};`,
      `createLogger().error("fatal", { controller: "mysqluser" });`,
      "process.exit(1);",
    ].join("\n");
    let stdout = "";
    try {
      execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    } catch (err) {
      stdout = (err as { stdout: string }).stdout;
    }
    expect(JSON.parse(stdout)).toMatchObject({ level: "error", controller: "mysqluser", msg: "fatal" });
  });

  it("drops lines below the configured level", () => {
    const written: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        written.push(chunk.toString());
        callback();
      },
    });
    const logger = createLogger({ level: "warn", destination });
    logger.debug("no");
    logger.info("no");
    logger.warn("yes");
    logger.error("yes");
    expect(written.join("").trimEnd().split("\n").map((l) => (JSON.parse(l) as { level: string }).level)).toEqual([
      "warn",
      "error",
    ]);
  });
});

describe("captureLogs", () => {
  it("puts child bindings on every line of a reconcile", () => {
    const logs = captureLogs();
    const reconcile = logs.logger
      .child({ controller: "mysqluser" })
      .child({ namespace: "shop", name: "orders", reconcileID: "2b1c" });
    reconcile.debug("reconciling");
    reconcile.info("user created", { host: "%" });

    const lines = logs.lines();
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line).toMatchObject({ controller: "mysqluser", namespace: "shop", name: "orders", reconcileID: "2b1c" });
    }
    expect(lines[0]).toMatchObject({ level: "debug", msg: "reconciling" });
    expect(lines[1]).toMatchObject({ level: "info", msg: "user created", host: "%" });
  });

  it("writes errors under err with type, message and stack", () => {
    const logs = captureLogs();
    const err = new TypeError("connection refused");
    logs.logger.error("apply failed", { err });
    logs.logger.error("also readable under error", { error: new Error("timeout") });

    const [first, second] = logs.lines();
    expect(first?.err).toMatchObject({ type: "TypeError", message: "connection refused" });
    expect((first?.err as { stack: string }).stack).toContain("TypeError: connection refused\n    at ");
    expect(second?.error).toMatchObject({ type: "Error", message: "timeout" });
  });

  it("redacts passwords, secret keys, tokens and Secret data in fields and bindings", () => {
    const logs = captureLogs();
    const password = "s3cr3t-Pa55";
    logs.logger.info("connecting", { user: "app", password });
    logs.logger.info("nested", { spec: { password, user: "app" }, s3: { secretAccessKey: "AKIAsecret", bucket: "b" } });
    logs.logger.info("secret read", { data: { password: "cGFzcw==" }, token: "bearer-abc" });
    logs.logger.child({ password, auth: { token: "bearer-def" } }).warn("bound");

    expect(logs.text()).not.toContain(password);
    expect(logs.text()).not.toContain("AKIAsecret");
    expect(logs.text()).not.toContain("cGFzcw==");
    expect(logs.text()).not.toContain("bearer-");
    const [flat, nested, secret, bound] = logs.lines();
    expect(flat).toMatchObject({ user: "app", password: "[REDACTED]" });
    expect(nested).toMatchObject({
      spec: { password: "[REDACTED]", user: "app" },
      s3: { secretAccessKey: "[REDACTED]", bucket: "b" },
    });
    expect(secret).toMatchObject({ data: "[REDACTED]", token: "[REDACTED]" });
    expect(bound).toMatchObject({ password: "[REDACTED]", auth: { token: "[REDACTED]" }, msg: "bound" });
  });

  it("writes the message as given, without printf interpolation", () => {
    const logs = captureLogs();
    logs.logger.info("granted %s on %d", { user: "app" });
    logs.logger.info("100% done");
    expect(logs.lines().map((l) => l.msg)).toEqual(["granted %s on %d", "100% done"]);
  });

  it("keeps separate captures apart and honours a level", () => {
    const a = captureLogs({ level: "error" });
    const b = captureLogs();
    a.logger.info("hidden");
    a.logger.error("shown");
    b.logger.debug("only in b");
    expect(a.lines().map((l) => l.msg)).toEqual(["shown"]);
    expect(b.lines().map((l) => l.msg)).toEqual(["only in b"]);
  });
});
