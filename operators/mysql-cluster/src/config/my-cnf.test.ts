import { describe, expect, it } from "vitest";
import { INIT_SCRIPT, OPERATOR_OWNED_SETTINGS, effectiveSettings, flavorOfImage, renderMyCnf, unknownSettings } from "./my-cnf.ts";

describe("my.cnf", () => {
  it("merges the user's settings over the flavor's defaults, names normalized", () => {
    const cnf = renderMyCnf("MariaDB", { "max-connections": "500", binlog_format: "MIXED" });
    expect(cnf).toMatch(/^\[mysqld\]$/m);
    expect(cnf).toMatch(/^max_connections = 500$/m);
    expect(cnf).toMatch(/^binlog_format = MIXED$/m);
    expect(cnf).toMatch(/^log_slave_updates = ON$/m);
    expect(cnf).toMatch(/^gtid_strict_mode = ON$/m);
    expect(cnf.match(/max_connections/g)).toHaveLength(1);
  });

  it("uses MySQL's GTID switches for MySQL", () => {
    const s = effectiveSettings("MySQL");
    expect(s.get("gtid_mode")).toBe("ON");
    expect(s.get("enforce_gtid_consistency")).toBe("ON");
    expect(s.has("gtid_strict_mode")).toBe(false);
  });

  it("never lets config override what the operator manages", () => {
    const s = effectiveSettings("MariaDB", { "Server-Id": "7", read_only: "ON", log_bin: "off" });
    expect(s.has("server_id")).toBe(false);
    expect(s.has("read_only")).toBe(false);
    expect(s.get("log_bin")).toBe("mysql-bin");
    expect(OPERATOR_OWNED_SETTINGS).toContain("server_id");
  });

  it("finds names the server does not know, but passes loose- ones", () => {
    const vars = new Set(["max_connections", "innodb_buffer_pool_size"]);
    expect(unknownSettings({ "max-connections": "1", innodb_buffer_pool_size: "1G", nope: "1", "loose-plugin-x": "1" }, vars)).toEqual(["nope"]);
  });

  it("guesses the flavor from the image name", () => {
    expect(flavorOfImage("mariadb:11.4")).toBe("MariaDB");
    expect(flavorOfImage("docker.io/library/mysql:8.4")).toBe("MySQL");
    expect(flavorOfImage("registry.local:5000/percona/percona-server:8.0@sha256:abc")).toBe("MySQL");
    expect(flavorOfImage("registry.local:5000/db/mysql-tools-mariadb:1")).toBe("MariaDB");
  });

  it("derives the server id from the host name in a static script", () => {
    expect(INIT_SCRIPT).toContain('${HOSTNAME##*-}');
    expect(INIT_SCRIPT).toContain("1000 + ordinal");
  });
});
