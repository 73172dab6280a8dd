import { describe, expect, it } from "vitest";
import { InvalidIdentifierError, checkPrivilegeKeyword, databaseInGrant, databasePattern, grantLevelSql, quoteAccount, quoteIdentifier } from "./identifiers.ts";

describe("quoteIdentifier", () => {
  it("wraps in backticks and doubles backticks inside; everything else is literal", () => {
    expect(quoteIdentifier("orders")).toBe("`orders`");
    expect(quoteIdentifier("a`b")).toBe("`a``b`");
    expect(quoteIdentifier("x`; DROP TABLE t; --")).toBe("`x``; DROP TABLE t; --`");
    expect(quoteIdentifier(`q'u"o\\te`)).toBe("`q'u\"o\\te`");
    expect(quoteIdentifier("ünï用户")).toBe("`ünï用户`");
  });

  it("refuses what MySQL cannot hold or would misread", () => {
    expect(() => quoteIdentifier("")).toThrow(InvalidIdentifierError);
    expect(() => quoteIdentifier("a".repeat(65))).toThrow(/longer than 64/);
    expect(() => quoteIdentifier("a\u0000b")).toThrow(/control character/);
    expect(() => quoteIdentifier("a\nb")).toThrow(/control character/);
    expect(() => quoteIdentifier("trailing ")).toThrow(/ends with a space/);
    expect(() => quoteIdentifier("emoji 😀")).toThrow(/Basic Multilingual Plane/);
    expect(quoteIdentifier("é".repeat(64))).toHaveLength(66);
  });
});

describe("quoteAccount", () => {
  it("quotes user and host separately", () => {
    expect(quoteAccount("app", "%")).toBe("`app`@`%`");
    expect(quoteAccount("o'br`ien", "10.0.%")).toBe("`o'br``ien`@`10.0.%`");
  });

  it("holds to MySQL's limits", () => {
    expect(() => quoteAccount("u".repeat(33), "%")).toThrow(/user name .* longer than 32/);
    expect(() => quoteAccount("", "%")).toThrow(/must not be empty/);
    expect(() => quoteAccount("u", "h".repeat(256))).toThrow(/host .* longer than 255/);
  });
});

describe("grant levels", () => {
  it("escape the wildcards of a database-level grant, and only there", () => {
    expect(databasePattern("a_b%c\\d")).toBe("a\\_b\\%c\\\\d");
    expect(databaseInGrant("app_db", "*")).toBe("app\\_db");
    expect(databaseInGrant("app_db", "orders")).toBe("app_db");
    expect(databaseInGrant("*", "*")).toBe("*");
  });

  it("render *.*, `db`.* and `db`.`table`", () => {
    expect(grantLevelSql("*", "*")).toBe("*.*");
    expect(grantLevelSql("app\\_db", "*")).toBe("`app\\_db`.*");
    expect(grantLevelSql("we`ird", "t`1")).toBe("`we``ird`.`t``1`");
    expect(() => grantLevelSql("*", "orders")).toThrow(/cannot name table/);
  });
});

describe("checkPrivilegeKeyword", () => {
  it("lets through privilege names, nothing else", () => {
    for (const p of ["SELECT", "CREATE TEMPORARY TABLES", "READ_ONLY ADMIN", "BACKUP_ADMIN"]) expect(checkPrivilegeKeyword(p)).toBe(p);
    for (const p of ["SELECT;", "select", "DROP TABLE x; --", "", "A  B", "GRANT`"]) expect(() => checkPrivilegeKeyword(p)).toThrow(InvalidIdentifierError);
  });
});
