import { describe, expect, it } from "vitest";
import { ReconcileError, TerminalError, isTerminal } from "./reconciler.ts";

describe("ReconcileError", () => {
  it("carries a reason, a message and its cause, and is retried unless terminal", () => {
    const cause = new Error("ECONNREFUSED");
    const err = new ReconcileError("InstanceUnreachable", "MySQLInstance db is unreachable", { cause });
    expect(err).toMatchObject({ reason: "InstanceUnreachable", message: "MySQLInstance db is unreachable", terminal: false, cause });
    expect(isTerminal(err)).toBe(false);
    expect(isTerminal(new ReconcileError("InvalidSpec", "bad", { terminal: true }))).toBe(true);
  });

  it("makes a TerminalError terminal, with its cause", () => {
    const cause = new Error("underneath");
    const err = new TerminalError("the spec is invalid", { cause });
    expect(err).toBeInstanceOf(ReconcileError);
    expect(err).toMatchObject({ name: "TerminalError", reason: "TerminalError", terminal: true, cause });
    expect(isTerminal(err)).toBe(true);
  });

  it("retries any other error", () => {
    expect(isTerminal(new Error("boom"))).toBe(false);
    expect(isTerminal("boom")).toBe(false);
  });
});
