import { detectServer } from "@stateward/mysql";
import { parseShowGrants } from "./show-grants.ts";
import { describe, expect, it } from "vitest";
import type { Grant } from "./api.ts";
import { actualGrants, changeStatements, describeChange, desiredGrants, diffGrants, isEmptyDiff, type GrantDiff } from "./grants.ts";

const mariadb = detectServer("10.11.19-MariaDB-0+deb12u1");
const mysql8 = detectServer("8.0.36", "MySQL Community Server - GPL");
const ACCOUNT = "`app`@`%`";

/** The statements a spec and a SHOW GRANTS output lead to, in the order they run. */
function plan(spec: Grant[], showGrants: string[], server = mariadb): string[] {
  const diff = diffGrants(desiredGrants(spec, server), actualGrants(parseShowGrants(showGrants), server), server);
  return [...diff.grants, ...diff.revokes].flatMap((c) => changeStatements(c, ACCOUNT));
}

describe("diffGrants against MariaDB's SHOW GRANTS", () => {
  const usage = "GRANT USAGE ON *.* TO `app`@`%` IDENTIFIED BY PASSWORD '*66F936ECC01641848C0263A8BAE23670D420FB87'";

  it("grants everything to a new account, database names escaped as literal", () => {
    expect(plan([{ privileges: ["SELECT", "INSERT"], database: "app_db" }, { privileges: ["SELECT"], database: "app_db", table: "orders", withGrantOption: true }], [usage])).toEqual([
      "GRANT SELECT, INSERT ON `app\\_db`.* TO `app`@`%`",
      "GRANT SELECT ON `app_db`.`orders` TO `app`@`%` WITH GRANT OPTION",
    ]);
  });

  it("does nothing when SHOW GRANTS already says what the spec says", () => {
    const spec: Grant[] = [
      { privileges: ["INSERT", "SELECT"], database: "app_db" },
      { privileges: ["REPLICATION CLIENT", "PROCESS"], database: "*" },
    ];
    const shown = [
      "GRANT PROCESS, BINLOG MONITOR ON *.* TO `app`@`%` IDENTIFIED BY PASSWORD '*66F9' WITH MAX_USER_CONNECTIONS 3",
      "GRANT SELECT, INSERT ON `app\\_db`.* TO `app`@`%`",
    ];
    expect(plan(spec, shown)).toEqual([]);
    expect(isEmptyDiff(diffGrants(desiredGrants(spec, mariadb), actualGrants(parseShowGrants(shown), mariadb), mariadb))).toBe(true);
  });

  it("compares names in lower case on a server that keeps them so (lower_case_table_names 1), and as written otherwise", () => {
    const folding = { ...mariadb, lowerCaseTableNames: 1 };
    const spec: Grant[] = [
      { privileges: ["SELECT"], database: "Shop_Db" },
      { privileges: ["INSERT"], database: "Shop_Db", table: "Orders" },
    ];
    const shown = ["GRANT SELECT ON `shop\\_db`.* TO `app`@`%`", "GRANT INSERT ON `shop_db`.`orders` TO `app`@`%`"];
    expect(plan(spec, shown, folding)).toEqual([]);
    expect(plan(spec, [usage], folding)).toEqual(["GRANT SELECT ON `shop\\_db`.* TO `app`@`%`", "GRANT INSERT ON `shop_db`.`orders` TO `app`@`%`"]);
    // Case-sensitive names (0, Linux's default): `Shop_Db` and `shop_db` are two databases.
    expect(plan(spec, shown)).toEqual([
      "GRANT SELECT ON `Shop\\_Db`.* TO `app`@`%`",
      "GRANT INSERT ON `Shop_Db`.`Orders` TO `app`@`%`",
      "REVOKE SELECT ON `shop\\_db`.* FROM `app`@`%`",
      "REVOKE INSERT ON `shop_db`.`orders` FROM `app`@`%`",
    ]);
  });

  it("grants what is missing before it revokes what is extra, and leaves shared privileges alone", () => {
    // SELECT moves from the table to its database; INSERT goes; UPDATE comes.
    const diff: GrantDiff = diffGrants(
      desiredGrants([{ privileges: ["SELECT", "UPDATE"], database: "shop" }], mariadb),
      actualGrants(parseShowGrants([usage, "GRANT SELECT, INSERT ON `shop`.* TO `app`@`%`", "GRANT SELECT ON `shop`.`orders` TO `app`@`%`"]), mariadb),
      mariadb,
    );
    expect(diff.grants.map(describeChange)).toEqual(["granted UPDATE on `shop`.*"]);
    expect(diff.revokes.map(describeChange)).toEqual(["revoked INSERT on `shop`.*", "revoked SELECT on `shop`.`orders`"]);
  });

  it("revokes from ALL PRIVILEGES only what is no longer wanted", () => {
    const allButDrop = ["SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "REFERENCES", "INDEX", "ALTER", "CREATE TEMPORARY TABLES", "LOCK TABLES", "EXECUTE", "CREATE VIEW", "SHOW VIEW", "CREATE ROUTINE", "ALTER ROUTINE", "EVENT", "TRIGGER", "DELETE HISTORY"] as Grant["privileges"];
    expect(plan([{ privileges: allButDrop, database: "shop" }], [usage, "GRANT ALL PRIVILEGES ON `shop`.* TO `app`@`%`"])).toEqual([
      "REVOKE DROP ON `shop`.* FROM `app`@`%`",
    ]);
    // ...and to get there from a few, grants the rest as ALL.
    expect(plan([{ privileges: ["ALL PRIVILEGES"], database: "shop" }], [usage, "GRANT SELECT ON `shop`.* TO `app`@`%`"])).toEqual([
      "GRANT ALL PRIVILEGES ON `shop`.* TO `app`@`%`",
    ]);
    // Every privilege of the level listed by name is ALL already.
    expect(plan([{ privileges: ["ALL PRIVILEGES"], database: "shop", table: "t" }], [usage, "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, REFERENCES, INDEX, ALTER, CREATE VIEW, SHOW VIEW, TRIGGER, DELETE HISTORY ON `shop`.`t` TO `app`@`%`"])).toEqual([]);
  });

  it("revokes a level no longer in the spec entirely, its grant option included", () => {
    expect(plan([], [usage, "GRANT ALL PRIVILEGES ON `old`.* TO `app`@`%` WITH GRANT OPTION", "GRANT SELECT, SHOW CREATE ROUTINE ON `older`.* TO `app`@`%` WITH GRANT OPTION"])).toEqual([
      "REVOKE ALL PRIVILEGES ON `old`.* FROM `app`@`%`",
      "REVOKE GRANT OPTION ON `old`.* FROM `app`@`%`",
      "REVOKE SELECT, SHOW CREATE ROUTINE, GRANT OPTION ON `older`.* FROM `app`@`%`",
    ]);
  });

  it("adds and removes the grant option alone", () => {
    expect(plan([{ privileges: ["SELECT"], database: "shop", withGrantOption: true }], [usage, "GRANT SELECT ON `shop`.* TO `app`@`%`"])).toEqual([
      "GRANT USAGE ON `shop`.* TO `app`@`%` WITH GRANT OPTION",
    ]);
    expect(plan([{ privileges: ["SELECT"], database: "shop" }], [usage, "GRANT SELECT ON `shop`.* TO `app`@`%` WITH GRANT OPTION"])).toEqual([
      "REVOKE GRANT OPTION ON `shop`.* FROM `app`@`%`",
    ]);
  });

  it("treats a pattern grant made by hand as another level than the literal database", () => {
    expect(plan([{ privileges: ["SELECT"], database: "a_b" }], [usage, "GRANT SELECT ON `a_b`.* TO `app`@`%`"])).toEqual([
      "GRANT SELECT ON `a\\_b`.* TO `app`@`%`",
      "REVOKE SELECT ON `a_b`.* FROM `app`@`%`",
    ]);
  });

  it("leaves column, routine, proxy and role grants alone", () => {
    expect(plan([], [
      usage,
      "GRANT SELECT (`c1`) ON `shop`.`orders` TO `app`@`%`",
      "GRANT EXECUTE ON PROCEDURE `shop`.`refund` TO `app`@`%`",
      "GRANT `reporting` TO `app`@`%`",
    ])).toEqual([]);
  });
});

describe("diffGrants against MySQL 8's SHOW GRANTS", () => {
  const usage = "GRANT USAGE ON *.* TO `app`@`%`";

  it("merges the static and dynamic privilege lines of *.*", () => {
    const shown = [
      "GRANT PROCESS, REPLICATION CLIENT ON *.* TO `app`@`%`",
      "GRANT BACKUP_ADMIN,CONNECTION_ADMIN ON *.* TO `app`@`%`",
    ];
    expect(plan([{ privileges: ["PROCESS", "REPLICATION CLIENT", "BACKUP_ADMIN"], database: "*" }], shown, mysql8)).toEqual([
      "REVOKE CONNECTION_ADMIN ON *.* FROM `app`@`%`",
    ]);
  });

  it("takes a global ALL listed by name for ALL (MySQL 8 prints it so)", () => {
    const statics = "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, RELOAD, SHUTDOWN, PROCESS, FILE, REFERENCES, INDEX, ALTER, SHOW DATABASES, SUPER, CREATE TEMPORARY TABLES, LOCK TABLES, EXECUTE, REPLICATION SLAVE, REPLICATION CLIENT, CREATE VIEW, SHOW VIEW, CREATE ROUTINE, ALTER ROUTINE, CREATE USER, EVENT, TRIGGER, CREATE TABLESPACE, CREATE ROLE, DROP ROLE";
    const shown = [`GRANT ${statics} ON *.* TO \`app\`@\`%\``, "GRANT APPLICATION_PASSWORD_ADMIN,AUDIT_ADMIN,BACKUP_ADMIN ON *.* TO `app`@`%`"];
    expect(plan([{ privileges: ["ALL PRIVILEGES"], database: "*" }], shown, mysql8)).toEqual([]);
    expect(plan([{ privileges: ["ALL PRIVILEGES"], database: "*" }], [usage], mysql8)).toEqual(["GRANT ALL PRIVILEGES ON *.* TO `app`@`%`"]);
  });

  it("knows REPLICATION CLIENT keeps its name on MySQL but is BINLOG MONITOR on MariaDB", () => {
    const spec: Grant[] = [{ privileges: ["REPLICATION CLIENT"], database: "*" }];
    expect(plan(spec, ["GRANT REPLICATION CLIENT ON *.* TO `app`@`%`"], mysql8)).toEqual([]);
    expect(plan(spec, ["GRANT BINLOG MONITOR ON *.* TO `app`@`%`"], mariadb)).toEqual([]);
    expect(plan(spec, ["GRANT USAGE ON *.* TO `app`@`%`"], mariadb)).toEqual(["GRANT BINLOG MONITOR ON *.* TO `app`@`%`"]);
  });

  it("diffs database and table levels as MariaDB does", () => {
    expect(plan([{ privileges: ["SELECT"], database: "shop", table: "orders" }], [usage, "GRANT SELECT, INSERT ON `shop`.`orders` TO `app`@`%`"], mysql8)).toEqual([
      "REVOKE INSERT ON `shop`.`orders` FROM `app`@`%`",
    ]);
  });
});

describe("changeStatements", () => {
  it("refuses to put a privilege name that is not a plain keyword into SQL", () => {
    expect(() => changeStatements({ action: "REVOKE", database: "shop", table: "*", privileges: ["SELECT; DROP DATABASE shop"], grantOption: false }, ACCOUNT)).toThrow(
      /is not a privilege name/,
    );
  });
});
