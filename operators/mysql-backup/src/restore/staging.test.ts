import { describe, expect, it } from "vitest";
import { heldTableName, holdingDatabaseName, keptReplaced, replacedTableName, runToken, stagingDatabaseName } from "./staging.ts";

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
    expect(replacedTableName(long, 99_999, "t".repeat(64)).length).toBeLessThanOrEqual(64);
    expect(heldTableName(99_999, "t".repeat(64)).length).toBeLessThanOrEqual(64);
    expect(holdingDatabaseName(long).length).toBeLessThanOrEqual(64);
  });

  it("say which table a replaced one was, and stay unique when cut", () => {
    expect(heldTableName(2, "orders")).toBe("3_orders");
    expect(replacedTableName("uid", 0, "orders")).toBe(`stw_replaced_${runToken("uid")}_1_orders`);
    const long = "t".repeat(64);
    expect(heldTableName(0, long)).not.toBe(heldTableName(1, long));
    // Cut where the name has a space: MySQL refuses an identifier that ends in one.
    expect(heldTableName(0, `${"t".repeat(61)} x`)).toBe(`1_${"t".repeat(61)}`);
  });
});

describe("keptReplaced", () => {
  const runId = "0b7c6a5e-3f1d-4c2e-9a8b-1234567890ab";
  const holding = `\`${holdingDatabaseName(runId)}\``;

  it("says nothing when no table was replaced", () => {
    expect(keptReplaced({ stagingDatabases: [], replacedTables: [] }, runId)).toBe("");
  });

  it("names the holding database and the tables kept beside their restored ones, and how to drop them", () => {
    const aside = `\`shop\`.\`${replacedTableName(runId, 2, "orders")}\``;
    const s = keptReplaced({ stagingDatabases: [], replacedTables: [`${holding}.\`1_a\``, `${holding}.\`2_b\``, aside] }, runId);
    expect(s).toContain(`3 tables as they were before the restore were kept: 2 in database ${holding}, each named <n>_<its name>`);
    expect(s).toContain(`${aside} (tables with triggers`);
    expect(s).toContain(`DROP DATABASE ${holding}`);
    // Renamed back, a table may lack triggers dropped for the swap or given way to the backup's.
    expect(s).toContain("their triggers may be missing");
  });

  it("names a few of many tables kept beside their restored ones", () => {
    const aside = Array.from({ length: 8 }, (_, i) => `\`shop\`.\`${replacedTableName(runId, i, `t${i}`)}\``);
    const s = keptReplaced({ stagingDatabases: [], replacedTables: aside }, runId);
    expect(s).toContain("and 3 more");
    expect(s).not.toContain(aside[7]!);
    expect(s).not.toContain("DROP DATABASE");
  });
});
