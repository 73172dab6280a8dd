import { describe, expect, it } from "vitest";
import { iptablesWords } from "./host-state.ts";

describe("iptablesWords", () => {
  it("keeps a quoted comment as one argument, so the rule can be deleted as written", () => {
    expect(iptablesWords('-A OUTPUT ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -j DROP')).toEqual([
      "-A", "OUTPUT", "!", "-s", "127.0.0.0/8", "-d", "127.0.0.0/8", "-m", "comment", "--comment", "block incoming localnet connections", "-j", "DROP",
    ]);
  });

  it("splits a plain jump", () => {
    expect(iptablesWords("-A INPUT -j KUBE-FIREWALL")).toEqual(["-A", "INPUT", "-j", "KUBE-FIREWALL"]);
  });
});
