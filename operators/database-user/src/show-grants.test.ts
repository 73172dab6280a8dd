import { describe, expect, it } from "vitest";
import { parseGrantLine, parseShowGrants } from "./show-grants.ts";

describe("parseGrantLine, MariaDB's SHOW GRANTS", () => {
  it("reads the USAGE line with its password hash, TLS requirement and limits as no privileges", () => {
    expect(
      parseGrantLine("GRANT USAGE ON *.* TO `app`@`%` IDENTIFIED BY PASSWORD '*66F936ECC01641848C0263A8BAE23670D420FB87' REQUIRE SSL WITH MAX_USER_CONNECTIONS 5"),
    ).toEqual({ kind: "object", privileges: [], columnPrivileges: [], database: "*", table: "*", grantOption: false });
  });

  it("reads global, database (a pattern, escapes kept) and table grants", () => {
    expect(parseGrantLine("GRANT RELOAD, PROCESS, BINLOG MONITOR ON *.* TO `app`@`%`")).toMatchObject({
      privileges: ["RELOAD", "PROCESS", "BINLOG MONITOR"],
      database: "*",
      table: "*",
    });
    expect(parseGrantLine("GRANT SELECT, INSERT ON `a\\_b`.* TO `app`@`%`")).toMatchObject({ privileges: ["SELECT", "INSERT"], database: "a\\_b", table: "*" });
    expect(parseGrantLine("GRANT ALL PRIVILEGES ON `full`.* TO `app`@`%` WITH GRANT OPTION")).toMatchObject({ privileges: ["ALL PRIVILEGES"], grantOption: true });
    expect(parseGrantLine("GRANT SELECT, DELETE HISTORY ON `shop`.`orders` TO `app`@`%`")).toMatchObject({
      privileges: ["SELECT", "DELETE HISTORY"],
      database: "shop",
      table: "orders",
    });
  });

  it("reads the grant option on its own", () => {
    expect(parseGrantLine("GRANT USAGE ON `mysql`.* TO `app`@`%` WITH GRANT OPTION")).toMatchObject({ privileges: [], grantOption: true, database: "mysql" });
  });

  it("is not fooled by quoted names holding keywords, quotes or backticks", () => {
    const line = "GRANT SELECT ON `we``ird ON x TO y`.`t'a\"b WITH GRANT OPTION` TO `u``s' TO `@`%` IDENTIFIED BY PASSWORD '*AB'";
    expect(parseGrantLine(line)).toEqual({
      kind: "object",
      privileges: ["SELECT"],
      columnPrivileges: [],
      database: "we`ird ON x TO y",
      table: "t'a\"b WITH GRANT OPTION",
      grantOption: false,
    });
  });

  it("reads ANSI_QUOTES output", () => {
    expect(parseGrantLine('GRANT SELECT ON "shop".* TO "app"@"%"')).toMatchObject({ database: "shop", privileges: ["SELECT"] });
  });

  it("sets column privileges apart", () => {
    expect(parseGrantLine("GRANT SELECT (`c1`, `c2`), INSERT, UPDATE (`c3`) ON `shop`.`orders` TO `app`@`%`")).toMatchObject({
      privileges: ["INSERT"],
      columnPrivileges: ["SELECT", "UPDATE"],
    });
  });

  it("leaves roles, proxies and routines as other grants", () => {
    for (const line of [
      "GRANT `reporting` TO `app`@`%`",
      "GRANT PROXY ON ''@'%' TO 'root'@'localhost' WITH GRANT OPTION",
      "GRANT EXECUTE ON PROCEDURE `shop`.`refund` TO `app`@`%`",
      "GRANT EXECUTE, ALTER ROUTINE ON FUNCTION `shop`.`total` TO `app`@`%`",
      "GRANT EXECUTE ON PACKAGE BODY `shop`.`p` TO `app`@`%`",
    ]) {
      expect(parseGrantLine(line)).toEqual({ kind: "other", line });
    }
  });
});

describe("parseGrantLine, MySQL 8's SHOW GRANTS", () => {
  it("reads the bare USAGE line, and dynamic privileges listed without spaces", () => {
    expect(parseShowGrants([
      "GRANT USAGE ON *.* TO `app`@`%`",
      "GRANT SELECT, INSERT, UPDATE ON *.* TO `app`@`%`",
      "GRANT BACKUP_ADMIN,CONNECTION_ADMIN,XA_RECOVER_ADMIN ON *.* TO `app`@`%` WITH GRANT OPTION",
    ])).toEqual([
      { kind: "object", privileges: [], columnPrivileges: [], database: "*", table: "*", grantOption: false },
      { kind: "object", privileges: ["SELECT", "INSERT", "UPDATE"], columnPrivileges: [], database: "*", table: "*", grantOption: false },
      { kind: "object", privileges: ["BACKUP_ADMIN", "CONNECTION_ADMIN", "XA_RECOVER_ADMIN"], columnPrivileges: [], database: "*", table: "*", grantOption: true },
    ]);
  });

  it("reads role grants and partial revokes as other grants", () => {
    expect(parseGrantLine("GRANT `r1`@`%`,`r2`@`%` TO `app`@`%`").kind).toBe("other");
    expect(parseGrantLine("REVOKE INSERT ON `mysql`.* FROM `app`@`%`").kind).toBe("other");
  });

  it("fails loudly on a line it cannot read, rather than guessing", () => {
    expect(() => parseGrantLine("GRANT SELECT ON `unterminated TO `app`@`%`")).toThrow(/unterminated identifier/);
    expect(() => parseGrantLine("GRANT SELECT ON *.`t` TO `a`@`%`")).toThrow(/unexpected object/);
  });
});
