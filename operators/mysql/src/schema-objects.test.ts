import { describe, expect, it } from "vitest";
import { viewPlaceholder } from "./schema-objects.ts";

describe("view placeholders", () => {
  it("have the view's columns, quoted", () => {
    expect(viewPlaceholder("v`1", ["a", "b c"])).toBe("CREATE VIEW `v``1` AS SELECT 1 AS `a`, 1 AS `b c`");
  });
  it("have one column when the view's are unknown", () => {
    expect(viewPlaceholder("v", [])).toBe("CREATE VIEW `v` AS SELECT 1 AS `1`");
  });
});
