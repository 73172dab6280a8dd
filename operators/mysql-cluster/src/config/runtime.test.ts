import { describe, expect, it } from "vitest";
import { renderMyCnf } from "./my-cnf.ts";
import { parseMyCnf, runtimeValue, settingsChange } from "./runtime.ts";

describe("runtime config", () => {
  it("reads back what renderMyCnf wrote, [mysqld] only", () => {
    const parsed = parseMyCnf(renderMyCnf("MariaDB", { "max-connections": "500", long_query_time: "0.5" }));
    expect(parsed.get("max_connections")).toBe("500");
    expect(parsed.get("long_query_time")).toBe("0.5");
    expect(parsed.get("log_bin")).toBe("mysql-bin");
    expect(parseMyCnf("[client]\nuser = x\n[mysqld]\n# note\nport = 1\n").size).toBe(1);
  });

  it("tells changed and removed settings apart", () => {
    const running = new Map([["a", "1"], ["b", "2"], ["c", "3"]]);
    const change = settingsChange(running, new Map([["a", "1"], ["b", "20"], ["d", "4"]]));
    expect([...change.changed]).toEqual([["b", "20"], ["d", "4"]]);
    expect(change.removed).toEqual(["c"]);
  });

  it("turns my.cnf values into SET GLOBAL values, or says a restart is needed", () => {
    expect(runtimeValue("500")).toBe(500);
    expect(runtimeValue("256M")).toBe(256 * 1024 * 1024);
    expect(runtimeValue("1g")).toBe(1024 ** 3);
    expect(runtimeValue("0.5")).toBe(0.5);
    expect(runtimeValue("ON")).toBe("ON");
    expect(runtimeValue("STRICT_TRANS_TABLES,NO_ZERO_DATE")).toBe("STRICT_TRANS_TABLES,NO_ZERO_DATE");
    expect(runtimeValue("'quoted'")).toBeUndefined();
    expect(runtimeValue("a b")).toBeUndefined();
    expect(runtimeValue("99999999999T")).toBeUndefined();
    expect(runtimeValue("")).toBeUndefined();
  });
});
