import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EnvironmentError, isAlive, startProcess, stopPid, waitUntilReady } from "./process.ts";

const dir = mkdtempSync(join(tmpdir(), "stateward-process-"));

describe("waitUntilReady", () => {
  it("names a process that exits before it is ready and shows the tail of its log", async () => {
    const proc = startProcess({
      name: "fake-apiserver",
      command: "sh",
      args: ["-c", "echo 'listening failed: address already in use'; exit 3"],
      logFile: join(dir, "exits.log"),
    });
    const err = await waitUntilReady(proc, () => Promise.resolve(false), 10_000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnvironmentError);
    expect((err as Error).message).toMatch(/fake-apiserver exited before it became ready/);
    expect((err as Error).message).toMatch(/address already in use/);
  });

  it("gives up at the deadline with the last health-check error, and the process can be stopped by pid", async () => {
    const proc = startProcess({
      name: "slow-etcd",
      command: "sh",
      args: ["-c", "echo 'still starting'; exec sleep 30"],
      logFile: join(dir, "slow.log"),
    });
    const err = await waitUntilReady(proc, () => Promise.reject(new Error("connection refused")), 600).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/slow-etcd did not become ready within 1 s \(last check: connection refused\)/);
    expect((err as Error).message).toMatch(/still starting/);
    expect(isAlive(proc.pid)).toBe(true);
    await stopPid(proc.pid);
    expect(isAlive(proc.pid)).toBe(false);
  });
});
