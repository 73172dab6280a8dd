import { describe, expect, it } from "vitest";
import { UsageError, operatorNames, optimizingCompilerNeeded, selectOperatorNames } from "./operators.ts";

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

describe("V8's optimizing compiler, by what the selected operators do", () => {
  it("is needed when an operator that moves data is selected, not for database-user alone", () => {
    expect(optimizingCompilerNeeded(["database-user"])).toBe(false);
    expect(optimizingCompilerNeeded(["database-user", "mysql-backup"])).toBe(true);
    expect(optimizingCompilerNeeded(["mysql-cluster"])).toBe(true);
    expect(optimizingCompilerNeeded(selectOperatorNames(undefined))).toBe(true);
  });
});
