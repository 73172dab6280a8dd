import { describe, expect, it } from "vitest";
import { dataKey, databaseFolder, isBackupKey, postDataKey, schemaKey } from "./layout.ts";

describe("backup layout", () => {
  it("names objects readably, uniquely and with safe characters only", () => {
    const folder = databaseFolder(1, "shop");
    expect(folder).toBe("0001-shop");
    expect(schemaKey(folder, "gzip")).toBe("0001-shop/schema.sql.gz");
    expect(postDataKey(folder, "zstd")).toBe("0001-shop/post-data.sql.zst");
    expect(dataKey(folder, 3, "order", 12, "none")).toBe("0001-shop/data/0003-order.0012.sql");
    expect(dataKey(databaseFolder(2, "a/b"), 1, "Ünïcødé表", 1, "gzip")).toBe("0002-a_b/data/0001-_n_c_d__.0001.sql.gz");
  });

  it("recognizes its own keys, and nothing else", () => {
    for (const key of ["manifest.json", "0001-shop/schema.sql.gz", "0001-shop/post-data.sql", "0001-shop/data/0003-order.0012.sql.zst"]) {
      expect(isBackupKey(key)).toBe(true);
    }
    for (const key of ["notes.txt", "other/manifest.json", "ns/name/0001-shop/schema.sql.gz", "0001-shop/schema.sql.bak", "0001-shop/data/x.sql"]) {
      expect(isBackupKey(key)).toBe(false);
    }
  });
});
