import { describe, expect, it } from "vitest";
import mysql from "mysql2";
import { formatOnlyWithValues, mysqlFailure, withoutStatement } from "./connection.ts";

const mysqlError = (code: string, message: string, sql?: string): Error => Object.assign(new Error(message), { code, ...(sql ? { sql } : {}) });

describe("MySQL errors", () => {
  it("says unreachable at connect time, lost afterwards", () => {
    const refused = mysqlError("ECONNREFUSED", "connect ECONNREFUSED 10.0.0.1:3306");
    expect(mysqlFailure(refused, "connect", "db:3306", true)).toMatchObject({ reason: "DatabaseUnreachable", retryable: true });
    const lost = mysqlFailure(mysqlError("PROTOCOL_CONNECTION_LOST", "Connection lost"), "dump `a`.`b`", "db:3306");
    expect(lost).toMatchObject({ reason: "ConnectionLost", retryable: true });
    expect(lost.message).toBe("lost the connection to MySQL at db:3306 while trying to dump `a`.`b`: Connection lost");
  });

  it("maps privileges, missing databases, lock timeouts and DDL during the dump", () => {
    expect(mysqlFailure(mysqlError("ER_SPECIFIC_ACCESS_DENIED_ERROR", "need RELOAD"), "lock", "x").reason).toBe("DatabaseAccessDenied");
    expect(mysqlFailure(mysqlError("ER_BAD_DB_ERROR", "Unknown database"), "use", "x").reason).toBe("DatabaseNotFound");
    expect(mysqlFailure(mysqlError("ER_LOCK_WAIT_TIMEOUT", "timeout"), "lock", "x")).toMatchObject({ reason: "LockTimeout", retryable: true });
    expect(mysqlFailure(mysqlError("ER_TABLE_DEF_CHANGED", "changed"), "dump", "x")).toMatchObject({ reason: "SchemaChanged", retryable: true });
    expect(mysqlFailure(mysqlError("ER_PARSE_ERROR", "syntax"), "run", "x")).toMatchObject({ reason: "DatabaseError", retryable: false });
  });

  it("drops the statement text mysql2 attaches, which may hold data", () => {
    const err = mysqlError("ER_DUP_ENTRY", "Duplicate entry", "INSERT INTO users VALUES ('*SECRETHASH')");
    const cause = withoutStatement(err) as Record<string, unknown>;
    expect(cause.sql).toBeUndefined();
    expect(cause.code).toBe("ER_DUP_ENTRY");
    expect(JSON.stringify(mysqlFailure(err, "apply", "x").cause)).not.toContain("SECRETHASH");
  });
});

describe("formatOnlyWithValues (the connections' queryFormat)", () => {
  it("sends a statement without values as written, placeholders and all", () => {
    const statement = "INSERT INTO `t` VALUES (1,'?'),(2,?) /* ? */";
    expect(formatOnlyWithValues(statement, undefined)).toBe(statement);
    expect(formatOnlyWithValues(statement, [])).toBe(statement);
  });

  it("escapes values as mysql2's own format does", () => {
    const values = ["it's", 42, null, Buffer.from([0, 0xff])];
    const sql = "SELECT ?, ?, ?, ?";
    expect(formatOnlyWithValues(sql, values, "Z")).toBe(mysql.format(sql, values, false, "Z"));
    expect(formatOnlyWithValues(sql, values, "Z")).toBe("SELECT 'it\\'s', 42, NULL, X'00ff'");
  });
});
