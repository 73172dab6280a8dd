import { describe, expect, it } from "vitest";
import { DatabaseFilter, databaseStatement } from "./dump-file.ts";
import { splitStatements, statementText } from "./statements.ts";

const dump = [
  "/*!40101 SET NAMES utf8mb4 */;",
  "CREATE DATABASE /*!32312 IF NOT EXISTS*/ `shop` /*!40100 DEFAULT CHARACTER SET utf8mb4 */;",
  "USE `shop`;",
  "CREATE TABLE t (a int);",
  "INSERT INTO t VALUES (1);",
  "CREATE DATABASE IF NOT EXISTS `Ünï``cødé`;",
  "USE `Ünï``cødé`;",
  "CREATE TABLE u (a int);",
  "USE plain_name;",
  "CREATE TABLE p (a int);",
  "/*!40103 SET TIME_ZONE=@OLD_TIME_ZONE */;",
].join("\n");

describe("databases in a dump file", () => {
  it("recognizes CREATE DATABASE and USE, with quoted and unicode names", () => {
    const found = splitStatements(dump).map(databaseStatement).filter((d) => d !== undefined);
    expect(found).toEqual([
      { kind: "create", database: "shop" },
      { kind: "use", database: "shop" },
      { kind: "create", database: "Ünï`cødé" },
      { kind: "use", database: "Ünï`cødé" },
      { kind: "use", database: "plain_name" },
    ]);
  });

  it("keeps only the wanted databases' statements, and the session settings before them", () => {
    const filter = new DatabaseFilter(["Ünï`cødé"]);
    const kept = splitStatements(dump)
      .filter((s) => filter.accept(s))
      .map((s) => statementText(s));
    expect(kept).toEqual(["/*!40101 SET NAMES utf8mb4 */", "CREATE DATABASE IF NOT EXISTS `Ünï``cødé`", "USE `Ünï``cødé`", "CREATE TABLE u (a int)"]);
    expect(filter.seen).toEqual(["shop", "Ünï`cødé", "plain_name"]);
  });

  it("keeps everything without a filter", () => {
    const filter = new DatabaseFilter(undefined);
    expect(splitStatements(dump).every((s) => filter.accept(s))).toBe(true);
  });
});
