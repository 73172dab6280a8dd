import { describe, expect, it } from "vitest";
import { StatementSplitter, splitStatements, statementText, type Statement } from "./statements.ts";

const texts = (sql: string | Buffer): string[] => splitStatements(sql).map((s) => statementText(s).trim());

/** Feeds `input` in pieces cut at `cuts`, as a stream would. */
function splitInChunks(input: Buffer, cuts: number[]): Statement[] {
  const splitter = new StatementSplitter();
  const out: Statement[] = [];
  let from = 0;
  for (const cut of [...cuts, input.length]) {
    out.push(...splitter.push(input.subarray(from, cut)));
    from = cut;
  }
  out.push(...splitter.end());
  return out;
}

describe("StatementSplitter", () => {
  it("splits at semicolons outside strings, identifiers and comments", () => {
    expect(
      texts(
        [
          "INSERT INTO t VALUES ('a;b', \"c;d\", `e;f`);",
          "INSERT INTO t VALUES ('it\\'s; fine', 'doubled '' ; quote', \"dq \\\" ;\");",
          "SELECT 1; -- a comment; with a semicolon",
          "SELECT 2 # another; one",
          ";",
          "SELECT /* inline; comment */ 3;",
          "CREATE TABLE `we;ird``name` (a int);",
        ].join("\n"),
      ),
    ).toEqual([
      "INSERT INTO t VALUES ('a;b', \"c;d\", `e;f`)",
      "INSERT INTO t VALUES ('it\\'s; fine', 'doubled '' ; quote', \"dq \\\" ;\")",
      "SELECT 1",
      "SELECT 2 # another; one",
      "SELECT /* inline; comment */ 3",
      "CREATE TABLE `we;ird``name` (a int)",
    ]);
  });

  it("treats --x as two minus signs, and a backslash before the closing quote as an escape", () => {
    expect(texts("SELECT 1--1;\nSELECT 'a\\\\';\nSELECT 'x\\\\'';';")).toEqual(["SELECT 1--1", "SELECT 'a\\\\'", "SELECT 'x\\\\'';'"]);
  });

  it("keeps version comments as statements and drops comment-only ones", () => {
    const dumpHead = [
      "/*M!999999\\- enable the sandbox mode */ ",
      "-- MariaDB dump 10.19",
      "/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;",
      "/* just a comment; nothing else */;",
      "/*!40103 SET TIME_ZONE='+00:00' */;",
    ].join("\n");
    const got = texts(dumpHead);
    expect(got).toHaveLength(2);
    expect(got[0]).toMatch(/^\/\*M!999999\\- enable the sandbox mode \*\/[\s\S]*\/\*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT \*\/$/);
    expect(got[1]).toBe("/*!40103 SET TIME_ZONE='+00:00' */");
  });

  it("follows DELIMITER lines, as for routine and trigger bodies", () => {
    const sql = [
      "DROP PROCEDURE IF EXISTS p;",
      "DELIMITER ;;",
      "CREATE PROCEDURE p() BEGIN SELECT ';;'; SELECT 2; END ;;",
      "delimiter $$",
      "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN SET NEW.a = 1; END $$",
      "DELIMITER ;",
      "SELECT 3;",
    ].join("\n");
    expect(texts(sql)).toEqual([
      "DROP PROCEDURE IF EXISTS p",
      "CREATE PROCEDURE p() BEGIN SELECT ';;'; SELECT 2; END",
      "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN SET NEW.a = 1; END",
      "SELECT 3",
    ]);
  });

  it("does not take DELIMITER inside a statement or a string for a command", () => {
    expect(texts("SELECT 'x\nDELIMITER ;;\n';\nSELECT\ndelimiter_col FROM t;")).toEqual(["SELECT 'x\nDELIMITER ;;\n'", "SELECT\ndelimiter_col FROM t"]);
  });

  it("returns a last statement without a delimiter", () => {
    expect(texts("SELECT 1;\nSELECT 2\n")).toEqual(["SELECT 1", "SELECT 2"]);
    expect(texts("-- only a comment\n")).toEqual([]);
  });

  it("passes any bytes through unchanged (binary strings as mysqldump writes them)", () => {
    const blob = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x27 - 0x27 + 0x41, 0xc3, 0x28, 0x0a, 0x3b]);
    const input = Buffer.concat([Buffer.from("INSERT INTO b VALUES ('"), blob, Buffer.from("');SELECT '表🎉';")]);
    const got = splitStatements(input);
    expect(got).toHaveLength(2);
    expect(Buffer.from(got[0]?.sql ?? "", "latin1")).toEqual(Buffer.concat([Buffer.from("INSERT INTO b VALUES ('"), blob, Buffer.from("')")]));
    expect(statementText(got[1] as Statement)).toBe("SELECT '表🎉'");
  });

  it("reports the line each statement starts on", () => {
    const got = splitStatements("SELECT 1;\n\n-- c\nSELECT\n'a\nb';\n  SELECT 3;");
    expect(got.map((s) => s.line)).toEqual([1, 4, 7]);
  });

  it("reads a backslash as a plain byte in strings while sql_mode has NO_BACKSLASH_ESCAPES (as this project's post-data objects set it)", () => {
    const input = Buffer.from(
      [
        "SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO';",
        "SET SQL_MODE = 'STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES';",
        "DELIMITER ;;",
        "CREATE PROCEDURE p() SELECT REPLACE(x, '\\', '/'), \"C:\\\" ;;",
        "DELIMITER ;",
        "SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO';",
        "SELECT 'it\\'s; one';",
      ].join("\n"),
    );
    const expected = [
      "SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO'",
      "SET SQL_MODE = 'STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES'",
      "CREATE PROCEDURE p() SELECT REPLACE(x, '\\', '/'), \"C:\\\"",
      "SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO'",
      "SELECT 'it\\'s; one'",
    ];
    expect(texts(input)).toEqual(expected);
    for (let cut = 1; cut < input.length; cut++) expect(splitInChunks(input, [cut]).map((s) => statementText(s).trim())).toEqual(expected);
  });

  it("follows mysqldump's saved and restored sql_mode around a trigger, in version comments", () => {
    const input = [
      "/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;",
      "/*!50003 SET @saved_sql_mode       = @@sql_mode */ ;",
      "/*!50003 SET sql_mode              = 'NO_BACKSLASH_ESCAPES' */ ;",
      "DELIMITER ;;",
      "/*!50003 CREATE*/ /*!50003 TRIGGER t BEFORE INSERT ON x FOR EACH ROW SET NEW.p = '\\' */;;",
      "DELIMITER ;",
      "/*!50003 SET sql_mode              = @saved_sql_mode */ ;",
      "INSERT INTO x VALUES ('a\\';b');",
      "/*!40101 SET SQL_MODE=@OLD_SQL_MODE */;",
    ].join("\n");
    expect(texts(input)).toEqual([
      "/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */",
      "/*!50003 SET @saved_sql_mode       = @@sql_mode */",
      "/*!50003 SET sql_mode              = 'NO_BACKSLASH_ESCAPES' */",
      "/*!50003 CREATE*/ /*!50003 TRIGGER t BEFORE INSERT ON x FOR EACH ROW SET NEW.p = '\\' */",
      "/*!50003 SET sql_mode              = @saved_sql_mode */",
      "INSERT INTO x VALUES ('a\\';b')",
      "/*!40101 SET SQL_MODE=@OLD_SQL_MODE */",
    ]);
  });

  it("gives the same statements however the input is cut into chunks", () => {
    const input = Buffer.from(
      [
        "/*!40101 SET NAMES utf8mb4 */;",
        "INSERT INTO `t``x` VALUES (1,'a;b\\';c','ü表🎉'),(2,\"q\"\"\",X'00ff');",
        "-- comment ; here",
        "SELECT 1--1;",
        "SELECT /* c;*/ 2 # x;y",
        ";",
        "DELIMITER ;;",
        "CREATE FUNCTION f() RETURNS INT BEGIN RETURN 1; END ;;",
        "DELIMITER ;",
        "SELECT 'end';",
        "DELIMITER //",
        "SELECT '//' //",
        "DELIMITER ;",
      ].join("\n"),
    );
    const expected = splitStatements(input);
    expect(expected.map((s) => statementText(s).trim())).toEqual([
      "/*!40101 SET NAMES utf8mb4 */",
      "INSERT INTO `t``x` VALUES (1,'a;b\\';c','ü表🎉'),(2,\"q\"\"\",X'00ff')",
      "SELECT 1--1",
      "SELECT /* c;*/ 2 # x;y",
      "CREATE FUNCTION f() RETURNS INT BEGIN RETURN 1; END",
      "SELECT 'end'",
      "SELECT '//'",
    ]);
    for (let cut = 1; cut < input.length; cut++) {
      expect(splitInChunks(input, [cut])).toEqual(expected);
    }
    const everyByte = Array.from({ length: input.length - 1 }, (_, i) => i + 1);
    expect(splitInChunks(input, everyByte)).toEqual(expected);
  });

  it("gives each statement its own bytes when large statements follow each other in chunks", () => {
    // Sizes around the buffer the splitter reuses to join pieces (4 MiB): above it, below, again above.
    const statements = [5 << 20, 100 << 10, 2 << 20, 6 << 20].map((size, i) => `INSERT INTO t VALUES ('${String.fromCharCode(97 + i).repeat(size)}')`);
    const input = Buffer.from(statements.map((s) => `${s};\n`).join(""));
    const cuts = Array.from({ length: Math.floor(input.length / 65_536) }, (_, i) => (i + 1) * 65_536);
    const got = splitInChunks(input, cuts).map((s) => s.sql);
    expect(got.length).toBe(statements.length);
    got.forEach((sql, i) => expect(sql === statements[i], `statement ${i + 1}`).toBe(true));
  });
});
