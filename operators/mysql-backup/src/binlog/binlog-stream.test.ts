import { describe, expect, it } from "vitest";
import { checkSource } from "./binlog-stream.ts";

describe("checkSource", () => {
  it("accepts a MariaDB server with its binary log on", () => {
    expect(checkSource("db:3306", { version: "11.4.3-MariaDB-log", serverId: "1001", logBin: 1 })).toEqual({
      endpoint: "db:3306",
      serverId: 1001,
      version: "11.4.3-MariaDB-log",
    });
  });

  it("refuses a MySQL server, naming the flavor and what is missing", () => {
    expect(() => checkSource("db:3306", { version: "8.0.36", serverId: 1, logBin: 1 })).toThrow(
      "db:3306 is a MySQL server (8.0.36): binlog archiving supports MariaDB only for now (MySQL's GTID dump, COM_BINLOG_DUMP_GTID, is not implemented)",
    );
  });

  it("refuses a server without a binary log", () => {
    expect(() => checkSource("db:3306", { version: "10.11.19-MariaDB", serverId: 1, logBin: "0" })).toThrow(/binary log off \(log_bin\)/);
  });
});
