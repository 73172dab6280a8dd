import { describe, expect, it } from "vitest";
import { splitStatements, statementText } from "../restore/statements.ts";
import type { DatabaseSchema } from "./schema.ts";
import { delimiterFor, objectHeader, renderPostDataObject, renderSchemaObject } from "./schema-objects.ts";

const context = { characterSetClient: "utf8mb4", collationConnection: "utf8mb4_general_ci" };

const shop: DatabaseSchema = {
  name: "shop",
  createStatement: "CREATE DATABASE `shop` /*!40100 DEFAULT CHARACTER SET utf8mb4 */",
  sequences: [{ name: "seq", createStatement: "CREATE SEQUENCE `seq` start with 1 increment by 1", nextValue: "1001" }],
  tables: [{ name: "order", createStatement: "CREATE TABLE `order` (\n  `id` int NOT NULL\n)", engine: "InnoDB", columns: [], estimatedBytes: 0, systemVersioned: false }],
  views: [{ name: "v", columns: ["a", "b`c"], createStatement: "CREATE ALGORITHM=UNDEFINED VIEW `v` AS select 1 AS `a`,2 AS `b``c`", ...context }],
  routines: [
    {
      type: "PROCEDURE",
      name: "p",
      createStatement: "CREATE PROCEDURE `p`()\nBEGIN\n  SELECT ';;';\n  SELECT 2;\nEND",
      sqlMode: "STRICT_TRANS_TABLES",
      ...context,
    },
  ],
  triggers: [{ name: "t", table: "order", createStatement: "CREATE TRIGGER `t` BEFORE INSERT ON `order` FOR EACH ROW SET NEW.id = 1", sqlMode: "", ...context }],
  events: [{ name: "e", createStatement: "CREATE EVENT `e` ON SCHEDULE EVERY 1 DAY DO SELECT 1", sqlMode: "", timeZone: "+05:30", ...context }],
};

const statements = (parts: string[]): string[] => splitStatements(parts.join("")).map((s) => statementText(s).trim());

describe("schema objects", () => {
  it("start with the session settings every object needs", () => {
    const header = statements([objectHeader("x")]);
    expect(header).toEqual([
      "SET NAMES utf8mb4",
      "SET TIME_ZONE='+00:00'",
      "SET FOREIGN_KEY_CHECKS=0",
      "SET UNIQUE_CHECKS=0",
      "SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO'",
      "SET SQL_NOTES=0",
    ]);
  });

  it("create the database if needed, sequences, tables, then a placeholder per view", () => {
    const got = statements(renderSchemaObject(shop)).slice(6);
    expect(got).toEqual([
      "CREATE DATABASE IF NOT EXISTS `shop` /*!40100 DEFAULT CHARACTER SET utf8mb4 */",
      "USE `shop`",
      "DROP SEQUENCE IF EXISTS `seq`",
      "CREATE SEQUENCE `seq` start with 1 increment by 1",
      "DO SETVAL(`seq`, 1001, 0)",
      "DROP TABLE IF EXISTS `order`",
      "CREATE TABLE `order` (\n  `id` int NOT NULL\n)",
      "DROP TABLE IF EXISTS `v`",
      "DROP VIEW IF EXISTS `v`",
      "CREATE VIEW `v` AS SELECT 1 AS `a`, 1 AS `b``c`",
    ]);
  });

  it("put routines, views, triggers and events in post-data, each body whole between DELIMITER lines", () => {
    const { statements: parts, warnings } = renderPostDataObject(shop);
    expect(warnings).toEqual([]);
    const got = statements(parts).slice(6);
    // The procedure contains ";;", so it travels with the next delimiter.
    expect(parts.join("")).toContain("DELIMITER $$\nCREATE PROCEDURE");
    expect(got).toEqual([
      "USE `shop`",
      "DROP PROCEDURE IF EXISTS `p`",
      "SET character_set_client = utf8mb4",
      "SET character_set_results = utf8mb4",
      "SET collation_connection = utf8mb4_general_ci",
      "SET SQL_MODE = 'STRICT_TRANS_TABLES'",
      "CREATE PROCEDURE `p`()\nBEGIN\n  SELECT ';;';\n  SELECT 2;\nEND",
      "SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO'",
      "SET NAMES utf8mb4",
      "DROP TABLE IF EXISTS `v`",
      "DROP VIEW IF EXISTS `v`",
      "SET character_set_client = utf8mb4",
      "SET character_set_results = utf8mb4",
      "SET collation_connection = utf8mb4_general_ci",
      "CREATE ALGORITHM=UNDEFINED VIEW `v` AS select 1 AS `a`,2 AS `b``c`",
      "SET NAMES utf8mb4",
      "DROP TRIGGER IF EXISTS `t`",
      "SET character_set_client = utf8mb4",
      "SET character_set_results = utf8mb4",
      "SET collation_connection = utf8mb4_general_ci",
      "SET SQL_MODE = ''",
      "CREATE TRIGGER `t` BEFORE INSERT ON `order` FOR EACH ROW SET NEW.id = 1",
      "SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO'",
      "SET NAMES utf8mb4",
      "DROP EVENT IF EXISTS `e`",
      "SET TIME_ZONE = '+05:30'",
      "SET character_set_client = utf8mb4",
      "SET character_set_results = utf8mb4",
      "SET collation_connection = utf8mb4_general_ci",
      "SET SQL_MODE = ''",
      "CREATE EVENT `e` ON SCHEDULE EVERY 1 DAY DO SELECT 1",
      "SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO'",
      "SET NAMES utf8mb4",
      "SET TIME_ZONE='+00:00'",
    ]);
  });

  it("keep a non-UTF-8 client character set only where the text reads the same in it", () => {
    const latin = { ...shop, routines: [], views: [], events: [], triggers: [{ ...shop.triggers[0]!, characterSetClient: "latin1", collationConnection: "latin1_swedish_ci" }] };
    expect(renderPostDataObject(latin).statements.join("")).toContain("SET character_set_client = latin1;");
    const nonAscii = { ...latin, triggers: [{ ...latin.triggers[0]!, createStatement: "CREATE TRIGGER `t` BEFORE INSERT ON `order` FOR EACH ROW SET NEW.n = 'é'" }] };
    const rendered = renderPostDataObject(nonAscii);
    expect(rendered.statements.join("")).toContain("SET character_set_client = utf8mb4;");
    expect(rendered.warnings[0]).toMatch(/trigger `shop`.`t` was created with character_set_client latin1/);
  });

  it("choose a delimiter the body does not contain", () => {
    expect(delimiterFor("BEGIN SELECT 1; END")).toBe(";;");
    expect(delimiterFor("SELECT ';;'")).toBe("$$");
    expect(delimiterFor("SELECT ';; $$ //'")).toBe(";;;");
  });
});
