import { describe, expect, it } from "vitest";
import { detectServer } from "@stateward/mysql";
import { GLOBAL_ONLY_PRIVILEGES, NOT_TABLE_PRIVILEGES, PRIVILEGE_NAMES, allPrivilegesAt, canonicalPrivilege, grantLevel, privilegeFlavors } from "./privileges.ts";

const mariadb = detectServer("10.11.19-MariaDB");
const mysql8 = detectServer("8.0.36");

describe("the privilege catalogue", () => {
  it("knows where each privilege may be granted", () => {
    expect(GLOBAL_ONLY_PRIVILEGES).toEqual(expect.arrayContaining(["PROCESS", "RELOAD", "REPLICATION CLIENT", "SUPER", "BACKUP_ADMIN", "BINLOG MONITOR"]));
    expect(GLOBAL_ONLY_PRIVILEGES).not.toContain("SELECT");
    expect(NOT_TABLE_PRIVILEGES).toEqual(expect.arrayContaining(["EXECUTE", "LOCK TABLES", "CREATE TEMPORARY TABLES", "EVENT", "PROCESS"]));
    expect(NOT_TABLE_PRIVILEGES).not.toContain("TRIGGER");
    expect(privilegeFlavors("DELETE HISTORY")).toEqual(["MariaDB"]);
    expect(PRIVILEGE_NAMES).not.toContain("USAGE");
    expect(grantLevel("*", "*")).toBe("global");
    expect(grantLevel("db", "*")).toBe("database");
    expect(grantLevel("db", "t")).toBe("table");
  });

  it("names privileges as each flavor's SHOW GRANTS does", () => {
    expect(canonicalPrivilege("replication client", mariadb)).toBe("BINLOG MONITOR");
    expect(canonicalPrivilege("REPLICATION CLIENT", detectServer("10.4.30-MariaDB"))).toBe("REPLICATION CLIENT");
    expect(canonicalPrivilege("REPLICATION CLIENT", mysql8)).toBe("REPLICATION CLIENT");
    expect(canonicalPrivilege("REPLICA MONITOR", mariadb)).toBe("SLAVE MONITOR");
    expect(canonicalPrivilege("ALL", mysql8)).toBe("ALL PRIVILEGES");
    expect(canonicalPrivilege("create  temporary\ttables", mysql8)).toBe("CREATE TEMPORARY TABLES");
  });

  it("expands ALL PRIVILEGES per level and flavor (MariaDB 10.11's lists, as checked against the server)", () => {
    expect(allPrivilegesAt("table", mariadb)).toHaveLength(13);
    expect(allPrivilegesAt("database", mariadb)).toHaveLength(19);
    expect(allPrivilegesAt("global", mariadb)).toHaveLength(38);
    expect(allPrivilegesAt("database", mysql8)).not.toContain("DELETE HISTORY");
    expect(allPrivilegesAt("global", mysql8)).toEqual(expect.arrayContaining(["REPLICATION CLIENT", "CREATE ROLE"]));
  });
});
