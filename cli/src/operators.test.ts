import { describe, expect, it } from "vitest";
import { UsageError, engineFlagsFor, operatorNames, selectOperatorNames } from "./operators.ts";

describe("selecting operators by name (before any operator module is loaded)", () => {
  it("selects every operator when none is named", () => {
    expect(operatorNames).toEqual(["database-user", "mysql-backup", "mysql-cluster"]);
    expect(selectOperatorNames(undefined)).toEqual(operatorNames);
    expect(selectOperatorNames([])).toEqual(operatorNames);
  });

  it("keeps the registry's order and drops repeats", () => {
    expect(selectOperatorNames(["mysql-cluster", "database-user", "mysql-cluster"])).toEqual(["database-user", "mysql-cluster"]);
  });

  it("refuses unknown names and lists the known ones", () => {
    expect(() => selectOperatorNames(["database-user", "postgres"])).toThrow(UsageError);
    expect(() => selectOperatorNames(["postgres"])).toThrow("unknown operator(s): postgres; available: database-user, mysql-backup, mysql-cluster");
  });
});

describe("V8's settings, by what the selected operators do", () => {
  it("trade CPU for memory for database-user alone, and keep V8's defaults when an operator moves data", () => {
    expect(engineFlagsFor(["database-user"])).toEqual(["--no-turbofan", "--heap-growing-percent=20"]);
    expect(engineFlagsFor(["database-user", "mysql-backup"])).toEqual([]);
    expect(engineFlagsFor(["mysql-cluster"])).toEqual([]);
    expect(engineFlagsFor(selectOperatorNames(undefined))).toEqual([]);
  });
});
