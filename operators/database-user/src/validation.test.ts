import { detectServer } from "@stateward/mysql";
import { describe, expect, it } from "vitest";
import { specProblems } from "./validation.ts";

const base = { instanceRef: { name: "db" }, passwordSecretRef: { name: "pw" } };

describe("specProblems", () => {
  it("finds privileges the server's flavor does not have", () => {
    const spec = { ...base, grants: [{ privileges: ["DELETE HISTORY" as const, "SELECT" as const], database: "shop" }, { privileges: ["BINLOG MONITOR" as const], database: "*" }] };
    expect(specProblems(spec, detectServer("8.0.36"))).toEqual(["DELETE HISTORY, BINLOG MONITOR exist only on MariaDB; the instance runs MySQL 8.0.36"]);
    expect(specProblems(spec, detectServer("10.11.19-MariaDB"))).toEqual([]);
    expect(specProblems({ ...base, grants: [{ privileges: ["BACKUP_ADMIN"], database: "*" }] }, detectServer("10.6.1-MariaDB"))).toEqual([
      "BACKUP_ADMIN exists only on MySQL; the instance runs MariaDB 10.6.1",
    ]);
  });

  it("has nothing to say about a portable spec", () => {
    expect(specProblems({ ...base, grants: [{ privileges: ["ALL PRIVILEGES"], database: "shop" }] }, detectServer("8.0.36"))).toEqual([]);
    expect(specProblems(base, detectServer("8.0.36"))).toEqual([]);
  });
});
