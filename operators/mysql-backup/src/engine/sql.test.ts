import { describe, expect, it } from "vitest";
import { BackupError } from "../errors.ts";
import { charsetName, qualifiedName, quoteIdentifier, stringLiteral, validateIdentifier } from "./sql.ts";

describe("SQL quoting", () => {
  it("quotes identifiers with backticks doubled", () => {
    expect(quoteIdentifier("order")).toBe("`order`");
    expect(quoteIdentifier("a`b``c")).toBe("`a``b````c`");
    expect(qualifiedName("db", "Ünïcødé表")).toBe("`db`.`Ünïcødé表`");
    expect(() => quoteIdentifier("a\0b")).toThrow(BackupError);
  });

  it("refuses names MySQL refuses", () => {
    expect(() => validateIdentifier("", "database")).toThrow(/database name is empty/);
    expect(() => validateIdentifier("x".repeat(65), "database")).toThrow(/longer than 64/);
    expect(() => validateIdentifier("trailing ", "database")).toThrow(/ends with a space/);
    expect(() => validateIdentifier("表".repeat(64), "database")).not.toThrow();
  });

  it("escapes string literals for a backslash-escaping session", () => {
    expect(stringLiteral("it's \\ \n\r\0\x1a")).toBe("'it\\'s \\\\ \\n\\r\\0\\Z'");
    expect(stringLiteral("+05:30")).toBe("'+05:30'");
  });

  it("accepts only plain words as character set names", () => {
    expect(charsetName("utf8mb4_unicode_ci", "collation")).toBe("utf8mb4_unicode_ci");
    expect(() => charsetName("utf8; DROP", "collation")).toThrow(BackupError);
  });
});
