import { describe, expect, it } from "vitest";
import { dumpedColumns, insertPrefix, rowExpression, valueEncoding, valueExpression, type ColumnInfo } from "./row-format.ts";

const col = (name: string, dataType: string, charset: string | null = null, generated = false): ColumnInfo => ({ name, dataType, charset, generated });

describe("row formatting", () => {
  it("picks an exact encoding for each type", () => {
    expect(valueEncoding(col("a", "bigint"))).toBe("number");
    expect(valueEncoding(col("a", "decimal"))).toBe("number");
    expect(valueEncoding(col("a", "year"))).toBe("number");
    expect(valueEncoding(col("a", "float"))).toBe("float");
    expect(valueEncoding(col("a", "double"))).toBe("float");
    expect(valueEncoding(col("a", "bit"))).toBe("bit");
    expect(valueEncoding(col("a", "longblob"))).toBe("hex");
    expect(valueEncoding(col("a", "varbinary"))).toBe("hex");
    expect(valueEncoding(col("a", "point"))).toBe("hex");
    expect(valueEncoding(col("a", "varchar", "binary"))).toBe("hex");
    expect(valueEncoding(col("a", "varchar", "utf8mb4"))).toBe("text");
    expect(valueEncoding(col("a", "datetime"))).toBe("text");
    expect(valueEncoding(col("a", "json", "utf8mb4"))).toBe("text");
    expect(valueEncoding(col("a", "inet6"))).toBe("text");
  });

  it("writes NULL as the word, binary as hex literals, floats at full precision", () => {
    expect(valueExpression(col("n", "int"))).toBe("IFNULL(`n`,'NULL')");
    expect(valueExpression(col("f", "float"))).toBe("IFNULL(CAST(`f` AS DOUBLE),'NULL')");
    expect(valueExpression(col("b", "bit"))).toBe("IFNULL(CONCAT('b''',BIN(`b`),''''),'NULL')");
    // X'' is the empty string, so an empty BLOB needs no special case.
    expect(valueExpression(col("x", "blob"))).toBe("IFNULL(CONCAT('X''',HEX(`x`),''''),'NULL')");
    // CR as \r (QUOTE leaves it raw; the stock client drops a CR before a line end).
    expect(valueExpression(col("t", "text", "utf8mb4"))).toBe("REPLACE(QUOTE(`t`),X'0D',X'5C72')");
    // Text in other character sets is converted, so every tuple is utf8mb4.
    expect(valueExpression(col("l", "varchar", "latin1"))).toBe("REPLACE(QUOTE(CONVERT(`l` USING utf8mb4)),X'0D',X'5C72')");
  });

  it("quotes names with backticks doubled and leaves generated columns to the server", () => {
    const columns = [col("id", "int"), col("we`ird", "varchar", "utf8mb4"), col("g", "int", null, true)];
    const dumped = dumpedColumns(columns);
    expect(dumped.map((c) => c.name)).toEqual(["id", "we`ird"]);
    expect(rowExpression(dumped)).toBe("CONCAT(_binary'(',IFNULL(`id`,'NULL'),',',REPLACE(QUOTE(`we``ird`),X'0D',X'5C72'),')')");
    expect(insertPrefix("order", dumped)).toBe("INSERT INTO `order` (`id`,`we``ird`) VALUES\n");
  });
});
