import { describe, expect, it } from "vitest";
import { MySQLError, classifyMySQLError, redact, toMySQLError } from "./errors.ts";

const driverError = (code: string, message: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), { code, sqlMessage: message, sql: "CREATE USER `a`@`%` IDENTIFIED BY 'hunter2'", ...extra });

describe("toMySQLError", () => {
  it("keeps the server's message and code, never the SQL text", () => {
    const e = toMySQLError(driverError("ER_CANNOT_USER", "Operation CREATE USER failed for 'a'@'%'", { errno: 1396 }));
    expect(e).toBeInstanceOf(MySQLError);
    expect(e).toMatchObject({ failure: "ServerError", code: "ER_CANNOT_USER", errno: 1396, message: "Operation CREATE USER failed for 'a'@'%'" });
    expect(JSON.stringify(e)).not.toContain("hunter2");
    expect(Object.keys(e)).not.toContain("sql");
    expect(e.cause).toBeUndefined();
  });

  it("classifies network, TLS and login failures", () => {
    expect(toMySQLError(driverError("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:3307")).failure).toBe("Unreachable");
    expect(toMySQLError(Object.assign(new AggregateError([], ""), { code: "ECONNREFUSED" }))).toMatchObject({ failure: "Unreachable", message: "ECONNREFUSED" });
    expect(toMySQLError(driverError("HANDSHAKE_NO_SSL_SUPPORT", "Server does not support secure connection")).failure).toBe("TLSFailed");
    expect(toMySQLError(driverError("DEPTH_ZERO_SELF_SIGNED_CERT", "self-signed certificate")).failure).toBe("TLSFailed");
    expect(toMySQLError(driverError("ER_ACCESS_DENIED_ERROR", "Access denied for user 'root'"), { connecting: true }).failure).toBe("AuthenticationFailed");
    expect(toMySQLError(driverError("ER_ACCESS_DENIED_ERROR", "Access denied for user 'root'")).failure).toBe("InsufficientPrivileges");
  });

  it("marks statements that cannot succeed as written as terminal", () => {
    const e = toMySQLError(driverError("ER_WRONG_DB_NAME", "Incorrect database name"));
    expect(e.failure).toBe("InvalidStatement");
    expect(e.terminal).toBe(true);
    expect(toMySQLError(driverError("ER_NO_SUCH_TABLE", "Table 'a.b' doesn't exist")).terminal).toBe(false);
  });

  it("tells a statement the server refused (it did not run) from one whose outcome is unknown", () => {
    for (const code of ["ER_SPECIFIC_ACCESS_DENIED_ERROR", "ER_NOT_VALID_PASSWORD", "ER_CANNOT_USER", "ER_WRONG_DB_NAME"]) {
      expect(toMySQLError(driverError(code, "refused")).refusedByServer).toBe(true);
    }
    for (const code of ["ECONNRESET", "PROTOCOL_CONNECTION_LOST", "PROTOCOL_SEQUENCE_TIMEOUT", "ETIMEDOUT", "ECONNREFUSED", "ER_CONNECTION_KILLED", "ER_SERVER_SHUTDOWN"]) {
      expect(toMySQLError(driverError(code, "lost")).refusedByServer).toBe(false);
    }
    expect(toMySQLError(new Error("no code")).refusedByServer).toBe(false);
  });

  it("removes secrets the server might echo", () => {
    const e = toMySQLError(driverError("ER_NOT_VALID_PASSWORD", "Your password 'hunter2' does not satisfy the policy"), { secrets: ["hunter2"] });
    expect(e.message).toBe("Your password '[REDACTED]' does not satisfy the policy");
    expect(e.failure).toBe("PasswordRejected");
    expect(redact("a-b-a", ["a", ""])).toBe("[REDACTED]-b-[REDACTED]");
  });
});

describe("classifyMySQLError", () => {
  it("tells a server never reached from a connection lost mid-statement", () => {
    expect(classifyMySQLError("ECONNREFUSED", "", true)).toBe("Unreachable");
    expect(classifyMySQLError("ETIMEDOUT", "", true)).toBe("Unreachable");
    expect(classifyMySQLError("ETIMEDOUT", "", false)).toBe("ConnectionLost");
    expect(classifyMySQLError("PROTOCOL_CONNECTION_LOST", "", false)).toBe("ConnectionLost");
    expect(classifyMySQLError("ER_CONNECTION_KILLED", "", false)).toBe("ConnectionLost");
    expect(classifyMySQLError(undefined, "connect timed out", true)).toBe("Unreachable");
  });

  it("classifies what a backup needs to tell apart", () => {
    expect(classifyMySQLError("ER_BAD_DB_ERROR", "Unknown database")).toBe("NoSuchDatabase");
    expect(classifyMySQLError("ER_LOCK_WAIT_TIMEOUT", "")).toBe("LockTimeout");
    expect(classifyMySQLError("ER_TABLE_DEF_CHANGED", "")).toBe("SchemaChanged");
    expect(classifyMySQLError("ER_PROCACCESS_DENIED_ERROR", "")).toBe("InsufficientPrivileges");
    expect(classifyMySQLError("ER_DUP_ENTRY", "")).toBe("ServerError");
  });
});
