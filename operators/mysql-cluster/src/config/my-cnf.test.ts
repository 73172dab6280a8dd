import { describe, expect, it } from "vitest";
import {
  INIT_SCRIPT,
  OPERATOR_OWNED_SETTINGS,
  effectiveSettings,
  flavorOfImage,
  isLoose,
  normalizeSettingName,
  operatorOwnedSetting,
  operatorOwnedSettingPattern,
  renderMyCnf,
  settingCandidates,
  unknownSettings,
} from "./my-cnf.ts";

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
    const s = effectiveSettings("MariaDB", { "Server-Id": "7", read_only: "OFF", log_bin: "off", rpl_semi_sync_master_enabled: "ON" });
    expect(s.has("server_id")).toBe(false);
    // Every server starts read-only (fencing); only the operator makes the primary writable.
    expect(s.get("read_only")).toBe("ON");
    expect(s.has("rpl_semi_sync_master_enabled")).toBe(false);
    expect(s.get("log_bin")).toBe("mysql-bin");
    expect(OPERATOR_OWNED_SETTINGS).toContain("server_id");
  });

  it("finds names the server does not know, but passes loose- ones", () => {
    const vars = new Set(["max_connections", "innodb_buffer_pool_size"]);
    expect(unknownSettings({ "max-connections": "1", innodb_buffer_pool_size: "1G", nope: "1", "loose-plugin-x": "1" }, vars)).toEqual(["nope"]);
  });

  // Each of these takes effect in mariadbd (checked with mariadbd --help --verbose).
  const sneaky = ["loose-skip-log-bin", "loose_read_only", "loose_log_slave_updates", "skip-log-bin", "disable_log_bin", "enable-read-only", "Maximum-Server-Id", "skip-loose-read-only", "loose-loose-gtid_strict_mode", "read_onl", "loose-log-slave-upd", "loose-skip-skip-networking"];
  const harmless = ["max_connections", "skip-name-resolve", "skip_external_locking", "loose-plugin-x", "innodb_buffer_pool_size", "log_bin_trust_function_creators", "relay_log_space_limit", "port_open_timeout", "enable_x", "skip_show_database"];

  it("refuses managed settings through option prefixes and abbreviations, and nothing else", () => {
    for (const name of sneaky) expect(operatorOwnedSetting(name), name).toBeDefined();
    for (const name of harmless) expect(operatorOwnedSetting(name), name).toBeUndefined();
    expect(operatorOwnedSetting("loose-skip-log-bin")).toBe("log_bin");
    const s = effectiveSettings("MariaDB", { "loose-skip-log-bin": "", loose_read_only: "ON", "loose_log_slave_updates": "OFF", max_connections: "9" });
    expect([...s.keys()].filter((k) => k.startsWith("loose") || k.startsWith("skip_log"))).toEqual([]);
    expect(s.get("log_slave_updates")).toBe("ON");
    expect(s.get("max_connections")).toBe("9");
  });

  it("has a CEL pattern that refuses exactly what operatorOwnedSetting refuses", () => {
    const pattern = new RegExp(operatorOwnedSettingPattern());
    const names = [...sneaky, ...harmless, ...OPERATOR_OWNED_SETTINGS, "s", "loose_", "skip_", "maximum_x", "serverid", "server_idx"];
    for (const name of names) expect(pattern.test(normalizeSettingName(name)), name).toBe(operatorOwnedSetting(name) !== undefined);
  });

  it("takes prefixes off one at a time, loose- anywhere among them", () => {
    expect(settingCandidates("loose-skip-log-bin")).toEqual(["loose_skip_log_bin", "skip_log_bin", "log_bin"]);
    expect(settingCandidates("skip_")).toEqual(["skip_"]);
    expect(isLoose("skip-loose-x")).toBe(true);
    expect(isLoose("loose")).toBe(false);
    expect(isLoose("max_connections")).toBe(false);
  });

  it("knows a prefixed name by the variable it sets", () => {
    const vars = new Set(["skip_name_resolve", "innodb_file_per_table", "max_connections"]);
    expect(unknownSettings({ "skip-name-resolve": "ON", "disable-innodb-file-per-table": "", "maximum-max-connections": "9", "skip-nope": "" }, vars)).toEqual(["skip-nope"]);
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
