import { describe, expect, it } from "vitest";
import type { ManifestObject } from "../storage/manifest.ts";
import { forEachBounded, nextDataObject, tableOf } from "./restore-run.ts";

const part = (table: string, n: number, database = "shop"): ManifestObject => ({
  key: `${database}/${table}.${n}.sql.gz`,
  kind: "data",
  database,
  table,
  part: n,
  size: 1,
  uncompressedSize: 1,
  sha256: "",
});

const names = (objects: ManifestObject[]) => objects.map((o) => `${o.database}.${o.table}#${o.part}`);

describe("which data object a free connection takes", () => {
  it("the next part of a table no connection is loading, else the next part", () => {
    const pending = [part("orders", 2), part("orders", 3), part("items", 1), part("items", 2)];
    const orders = tableOf(part("orders", 1));
    const items = tableOf(part("items", 1));
    expect(nextDataObject(pending, new Map())).toBe(0);
    expect(nextDataObject(pending, new Map([[orders, 1]]))).toBe(2);
    expect(nextDataObject(pending, new Map([[orders, 1], [items, 1]]))).toBe(0);
    // The same table name in another database is another table.
    expect(nextDataObject([part("orders", 1), part("orders", 1, "crm")], new Map([[orders, 1]]))).toBe(1);
  });

  it("loads the parts of two tables on two connections one table per connection, each in order", async () => {
    const objects = [part("orders", 1), part("orders", 2), part("orders", 3), part("items", 1), part("items", 2), part("items", 3)];
    const loading = new Map<string, number>();
    const byConnection: Record<string, ManifestObject[]> = { a: [], b: [] };
    let sideBySide = 0;
    await forEachBounded(
      objects,
      ["a", "b"],
      async (o, connection) => {
        const table = tableOf(o);
        if ((loading.get(table) ?? 0) > 0) sideBySide++;
        loading.set(table, (loading.get(table) ?? 0) + 1);
        byConnection[connection]!.push(o);
        await new Promise((r) => setTimeout(r, 1));
        loading.set(table, loading.get(table)! - 1);
      },
      (pending) => nextDataObject(pending, loading),
    );
    expect(sideBySide).toBe(0);
    expect(names(byConnection.a!)).toEqual(["shop.orders#1", "shop.orders#2", "shop.orders#3"]);
    expect(names(byConnection.b!)).toEqual(["shop.items#1", "shop.items#2", "shop.items#3"]);
  });

  it("stops taking objects after the first failure", async () => {
    const started: number[] = [];
    await expect(
      forEachBounded([1, 2, 3, 4, 5], ["a"], (n) => {
        started.push(n);
        return n === 2 ? Promise.reject(new Error("boom")) : Promise.resolve();
      }),
    ).rejects.toThrow("boom");
    expect(started).toEqual([1, 2]);
  });
});
