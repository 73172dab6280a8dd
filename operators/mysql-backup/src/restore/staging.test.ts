import { describe, expect, it } from "vitest";
import { holdingDatabaseName, replacedTableName, runToken, stagingDatabaseName } from "./staging.ts";

describe("staging names", () => {
  it("are derived from the run id, the same every time, and differ between runs", () => {
    const uid = "0b7c6a5e-3f1d-4c2e-9a8b-1234567890ab";
    expect(stagingDatabaseName(uid, 0)).toBe(stagingDatabaseName(uid, 0));
    expect(stagingDatabaseName(uid, 0)).toMatch(/^stw_restore_[0-9a-f]{12}_1$/);
    expect(stagingDatabaseName(uid, 1)).toMatch(/_2$/);
    expect(stagingDatabaseName("another-uid", 0)).not.toBe(stagingDatabaseName(uid, 0));
    expect(runToken(uid)).toHaveLength(12);
  });

  it("stay far within MySQL's 64-character identifier limit, whatever the run id", () => {
    const long = "x".repeat(10_000);
    expect(stagingDatabaseName(long, 255).length).toBeLessThanOrEqual(64);
    expect(replacedTableName(long, 99_999).length).toBeLessThanOrEqual(64);
    expect(holdingDatabaseName(long).length).toBeLessThanOrEqual(64);
  });
});
