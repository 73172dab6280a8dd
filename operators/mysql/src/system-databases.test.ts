import { describe, expect, it } from "vitest";
import { SYSTEM_DATABASES, notSystemDatabase } from "./system-databases.ts";

describe("notSystemDatabase", () => {
  it("is a placeholder per system database, with the names as values", () => {
    expect(notSystemDatabase("SCHEMA_NAME")).toEqual({ sql: "SCHEMA_NAME NOT IN (?, ?, ?, ?)", values: ["mysql", "information_schema", "performance_schema", "sys"] });
    expect(SYSTEM_DATABASES.has("performance_schema")).toBe(true);
  });
});
