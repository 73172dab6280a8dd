import { crc32 } from "node:zlib";
import { describe, expect, it } from "vitest";
import { capturedStream } from "./captured-stream.ts";
import { EventType, GtidFlag, parseFormatDescription, toEvent, verifyChecksum, type BinlogEvent, type FormatDescription } from "./events.ts";
import { formatGtid } from "./gtid.ts";
import { SessionState, decodeDecimal, isAccountStatement, isUnattributed, parseQueryEvent, statementKind, transactionStatements, userVarStatement, type CollationNames } from "./replay-events.ts";
import { TransactionAssembler, type Transaction } from "./transactions.ts";

// The captured stream: 0-7-1 CREATE DATABASE shop, 0-7-2 CREATE TABLE shop.t, 0-7-3 INSERT (rows),
// 0-7-4 CREATE TABLE shop.m (Aria), 0-7-5 INSERT into Aria (Query COMMIT), 0-7-6 UPDATE+DELETE, 0-7-7 INSERT.
const events: BinlogEvent[] = capturedStream.map((hex) => toEvent(Buffer.from(hex, "hex")));
const captured: Transaction[] = (() => {
  const assembler = new TransactionAssembler();
  return events.flatMap((e) => {
    const item = assembler.push(e);
    return item.kind === "transaction" ? [item.transaction] : [];
  });
})();
const format = parseFormatDescription(events.find((e) => e.header.type === EventType.FORMAT_DESCRIPTION) as BinlogEvent);
const collations: CollationNames = new Map([
  [45, { charset: "utf8mb4", collation: "utf8mb4_general_ci" }],
  [63, { charset: "binary", collation: "binary" }],
]);
const tx = (seq: number): Transaction => captured.find((t) => t.gtid.seq === BigInt(seq)) as Transaction;
const text = (sql: string) => Buffer.from(sql, "latin1").toString("utf8");
const translate = (t: Transaction, state = new SessionState(), databases?: string[]) =>
  transactionStatements(t, state, { collations, ...(databases ? { databases: new Set(databases) } : {}) }).map((s) => text(s.sql));
/** The events of a BINLOG '…' statement. */
const binlogEvents = (sql: string): BinlogEvent[] => {
  const bytes = Buffer.from(/^BINLOG '\n(.*)\n'$/s.exec(sql)?.[1] ?? "", "base64");
  const out: BinlogEvent[] = [];
  for (let at = 0; at < bytes.length; ) {
    const length = bytes.readUInt32LE(at + 9);
    out.push(toEvent(bytes.subarray(at, at + length)));
    at += length;
  }
  return out;
};

/** An event of `type` with `body`, checksummed as the captured format says. */
function event(type: number, body: Buffer, options: { timestamp?: number; flags?: number } = {}): BinlogEvent {
  const raw = Buffer.alloc(19 + body.length + 4);
  raw.writeUInt32LE(options.timestamp ?? 1_800_000_000, 0);
  raw.writeUInt8(type, 4);
  raw.writeUInt32LE(7, 5);
  raw.writeUInt32LE(raw.length, 9);
  raw.writeUInt16LE(options.flags ?? 0, 17);
  body.copy(raw, 19);
  raw.writeUInt32LE(crc32(raw.subarray(0, raw.length - 4)), raw.length - 4);
  return toEvent(raw);
}

function queryEvent(database: string, statement: string, status: Buffer, options: { timestamp?: number; flags?: number; errorCode?: number } = {}): BinlogEvent {
  const post = Buffer.alloc(13);
  post.writeUInt32LE(5, 0);
  post.writeUInt8(Buffer.byteLength(database), 8);
  post.writeUInt16LE(options.errorCode ?? 0, 9);
  post.writeUInt16LE(status.length, 11);
  return event(EventType.QUERY, Buffer.concat([post, status, Buffer.from(database), Buffer.from([0]), Buffer.from(statement)]), options);
}

function gtidEvent(seq: number, flags: number): BinlogEvent {
  const body = Buffer.alloc(19);
  body.writeBigUInt64LE(BigInt(seq), 0);
  body.writeUInt32LE(0, 8);
  body.writeUInt8(flags, 12);
  return event(EventType.GTID, body);
}

function transaction(seq: number, flags: number, body: BinlogEvent[], fmt: FormatDescription = format): Transaction {
  const all = [gtidEvent(seq, flags), ...body];
  return { gtid: { domain: 0, server: 7, seq: BigInt(seq) }, flags, events: all, bytes: 0, firstTimestamp: 0, lastTimestamp: 0, format: fmt };
}

/** Status variables: flags2 (no FK checks), sql_mode 0x3, charset 45/45/8, time zone '+02:00', lc_time_names 2, collation_database 46, microseconds 1234. */
const status = (() => {
  const parts: Buffer[] = [];
  const flags2 = Buffer.alloc(5);
  flags2.writeUInt8(0, 0);
  flags2.writeUInt32LE(1 << 26, 1);
  const sqlMode = Buffer.alloc(9);
  sqlMode.writeUInt8(1, 0);
  sqlMode.writeBigUInt64LE(3n, 1);
  const charset = Buffer.from([4, 45, 0, 45, 0, 8, 0]);
  const tz = Buffer.concat([Buffer.from([5, 6]), Buffer.from("+02:00")]);
  const lc = Buffer.from([7, 2, 0]);
  const cdb = Buffer.from([8, 46, 0]);
  const hrnow = Buffer.from([128, 0xd2, 0x04, 0x00]);
  parts.push(flags2, sqlMode, charset, tz, lc, cdb, hrnow);
  return Buffer.concat(parts);
})();

describe("transactionStatements", () => {
  it("replays the captured stream as mariadb-binlog would: BINLOG for rows, the statements with their context", () => {
    const state = new SessionState();
    const all = captured.map((t) => translate(t, state));
    // The first statement teaches the session the format; CREATE DATABASE is not preceded by a USE (it may not exist yet).
    expect(all[0]?.[0]).toMatch(/^BINLOG '\n/);
    expect(binlogEvents(all[0]?.[0] as string).map((e) => e.header.type)).toEqual([EventType.FORMAT_DESCRIPTION]);
    expect(all[0]?.slice(1)).toEqual([
      "SET TIMESTAMP=1796167099",
      expect.stringMatching(/^SET @@session\.foreign_key_checks=1, @@session\.unique_checks=1, @@session\.sql_auto_is_null=0, @@session\.sql_mode=\d+, .*character_set_client=/),
      "CREATE DATABASE shop",
    ]);
    // Same context, no default database (it ran without a USE): only the statement.
    expect(all[1]).toEqual(["CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB"]);
    // Rows: Table_map + Write_rows in one BINLOG; a transaction of one row statement is that statement, autocommitted.
    expect(all[2]).toEqual([expect.stringMatching(/^BINLOG /)]);
    expect(binlogEvents(all[2]?.[0] as string).map((e) => e.raw)).toEqual(tx(3).events.filter((e) => [EventType.TABLE_MAP, 23].includes(e.header.type)).map((e) => e.raw));
    // Aria: its own COMMIT query ends it.
    expect(all[4]).toEqual([expect.stringMatching(/^BINLOG /)]);
    // Two row statements: two BINLOGs, between BEGIN and the Xid's COMMIT.
    expect(all[5]).toEqual(["BEGIN", expect.stringMatching(/^BINLOG /), expect.stringMatching(/^BINLOG /), "COMMIT"]);
    // A new second: the clock moves before the transaction.
    expect(all[6]?.[0]).toBe("SET TIMESTAMP=1796167100");
  });

  it("sends the format again to a new session, and only to it", () => {
    const state = new SessionState();
    expect(translate(tx(3), state)[0]).toMatch(/^BINLOG/);
    expect(translate(tx(7), state)[0]).not.toMatch(/^BINLOG/);
    state.reset();
    expect(translate(tx(7), state)[0]).toMatch(/^BINLOG/);
  });

  it("leaves out other databases and the system ones, keeping a statement's end where the server closes its tables", () => {
    expect(translate(tx(3), new SessionState(), ["other"])).toEqual([]);
    // Attributed by its default database, like mariadb-binlog --database: none, so not shop's.
    expect(translate(tx(2), new SessionState(), ["shop"])).toEqual([]);
    expect(translate(tx(3), new SessionState(), ["shop"])).toEqual([expect.stringMatching(/^BINLOG/), "SET TIMESTAMP=1796167099", expect.stringMatching(/^BINLOG/)]);
    // CREATE DATABASE shop is attributed to shop.
    expect(translate(tx(1), new SessionState(), ["shop"]).at(-1)).toBe("CREATE DATABASE shop");
    // System databases never, filter or not.
    const state = new SessionState();
    state.format = format;
    expect(translate(transaction(9, GtidFlag.STANDALONE, [queryEvent("mysql", "CREATE TABLE x (a INT)", Buffer.alloc(0))]), state)).toEqual([]);
    // Accounts are the target's.
    expect(translate(transaction(9, GtidFlag.STANDALONE, [queryEvent("shop", "GRANT ALL ON shop.* TO 'u'@'%'", Buffer.alloc(0))]), state)).toEqual([]);
    expect(translate(transaction(9, GtidFlag.STANDALONE, [queryEvent("shop", "/* x */ CREATE USER 'u'@'%'", Buffer.alloc(0))]), state)).toEqual([]);

    // A multi-table statement whose last rows event (STMT_END) is of a filtered table: the kept one gets the flag.
    const t6 = tx(6);
    const [, annotate1, map1, update, annotate2, map2, del, xid] = t6.events;
    const renamedMap = Buffer.from((map2 as BinlogEvent).raw);
    // Table id 18 → 99, database "shop" → "othr" (same length), checksum redone.
    renamedMap.writeUIntLE(99, 19, 6);
    renamedMap.write("othr", 19 + 8 + 1, "latin1");
    renamedMap.writeUInt32LE(crc32(renamedMap.subarray(0, renamedMap.length - 4)), renamedMap.length - 4);
    const renamedDel = Buffer.from((del as BinlogEvent).raw);
    renamedDel.writeUIntLE(99, 19, 6);
    renamedDel.writeUInt32LE(crc32(renamedDel.subarray(0, renamedDel.length - 4)), renamedDel.length - 4);
    const updateNotEnd = Buffer.from((update as BinlogEvent).raw);
    updateNotEnd.writeUInt16LE(0, 19 + 6);
    updateNotEnd.writeUInt32LE(crc32(updateNotEnd.subarray(0, updateNotEnd.length - 4)), updateNotEnd.length - 4);
    const mixed = { ...t6, events: [t6.events[0] as BinlogEvent, annotate1 as BinlogEvent, map1 as BinlogEvent, toEvent(updateNotEnd), annotate2 as BinlogEvent, toEvent(renamedMap), toEvent(renamedDel), xid as BinlogEvent] };
    const out = translate(mixed, state, ["shop"]);
    expect(translate(mixed, new SessionState(), ["othr"]).filter((s) => s.startsWith("BINLOG")).map((s) => binlogEvents(s).map((e) => e.header.type))).toEqual([[EventType.FORMAT_DESCRIPTION], [EventType.TABLE_MAP, 25]]);
    expect(out).toEqual([expect.stringMatching(/^SET TIMESTAMP=/), expect.stringMatching(/^BINLOG/)]);
    const sent = binlogEvents(out[1] as string);
    expect(sent.map((e) => e.header.type)).toEqual([EventType.TABLE_MAP, 24]);
    expect((sent[1] as BinlogEvent).raw.readUInt16LE(19 + 6) & 1).toBe(1);
    expect(() => verifyChecksum(sent[1] as BinlogEvent)).not.toThrow();
  });

  it("statements without a default database: replayed when the filter is all of the backup, skipped under a part; never the system or maintenance ones", () => {
    const state = new SessionState();
    state.format = format;
    const bare = (sql: string) => transaction(9, GtidFlag.STANDALONE, [queryEvent("", sql, Buffer.alloc(0))]);
    const run = (sql: string, withoutDatabase?: "replay" | "skip") =>
      transactionStatements(bare(sql), state, { collations, databases: new Set(["shop"]), ...(withoutDatabase ? { withoutDatabase } : {}) }).map((s) => text(s.sql)).at(-1);
    expect(run("DROP TABLE shop.t", "replay")).toBe("DROP TABLE shop.t");
    expect(run("ALTER TABLE `shop`.`t` ADD COLUMN c INT", "replay")).toBe("ALTER TABLE `shop`.`t` ADD COLUMN c INT");
    expect(run("DROP TABLE shop.t", "skip")).toBeUndefined();
    expect(run("DROP TABLE shop.t")).toBeUndefined();
    for (const sql of ["INSERT INTO mysql.user VALUES (1)", "UPDATE `MySQL` . db SET x = 1", "FLUSH PRIVILEGES", "ANALYZE TABLE shop.t", "GRANT ALL ON shop.* TO 'u'@'%'"]) {
      expect(run(sql, "replay"), sql).toBeUndefined();
      expect(isUnattributed(parseQueryEvent(queryEvent("", sql, Buffer.alloc(0)), format)), sql).toBe(false);
    }
    // No filter: replayed as before, but not the system ones.
    expect(transactionStatements(bare("CREATE TABLE shop.t2 (a INT)"), state, { collations }).map((s) => text(s.sql)).at(-1)).toBe("CREATE TABLE shop.t2 (a INT)");
    expect(transactionStatements(bare("INSERT INTO mysql.user VALUES (1)"), state, { collations })).toEqual([]);
    // A default database attributes it, whatever it names.
    expect(isUnattributed(parseQueryEvent(queryEvent("shop", "DROP TABLE other.t", Buffer.alloc(0)), format))).toBe(false);
    expect(isUnattributed(parseQueryEvent(queryEvent("", "/* c */ DROP TABLE other.t", Buffer.alloc(0)), format))).toBe(true);
    expect(statementKind(Buffer.from("/* c */ drop   table `x`.t"))).toBe("DROP TABLE");
  });

  it("cuts a large row statement into several BINLOG statements, the Table_map first", () => {
    const state = new SessionState();
    state.format = format;
    const t3 = tx(3);
    // Two rows events of one statement (the first without STMT_END), limit below their size together.
    const [gtid, annotate, map, write, xid] = t3.events;
    const notEnd = Buffer.from((write as BinlogEvent).raw);
    notEnd.writeUInt16LE(0, 19 + 6);
    notEnd.writeUInt32LE(crc32(notEnd.subarray(0, notEnd.length - 4)), notEnd.length - 4);
    const long = { ...t3, events: [gtid, annotate, map, toEvent(notEnd), write, xid] as BinlogEvent[] };
    const out = transactionStatements(long, state, { collations, maxBinlogBytes: 100 }).map((s) => s.sql);
    const parts = out.filter((s) => s.startsWith("BINLOG")).map(binlogEvents);
    // Each part: the Table_map again, then its rows, the last flagged STMT_END (checksum redone).
    expect(parts.map((p) => p.map((e) => e.header.type))).toEqual([[EventType.TABLE_MAP, 23], [EventType.TABLE_MAP, 23]]);
    for (const p of parts) {
      expect((p[1] as BinlogEvent).raw.readUInt16LE(19 + 6) & 1).toBe(1);
      expect(() => verifyChecksum(p[1] as BinlogEvent)).not.toThrow();
    }
    // Under the limit: one part.
    expect(transactionStatements(long, new SessionState(), { collations }).filter((s) => s.sql.startsWith("BINLOG"))).toHaveLength(2);
  });

  it("sets a Query event's context once, and only what changed", () => {
    const state = new SessionState();
    state.format = format;
    const q = (sql: string, st = status, ts = 1_800_000_000) => transaction(9, GtidFlag.STANDALONE, [queryEvent("shop", sql, st, { timestamp: ts })]);
    expect(translate(q("ALTER TABLE t ADD c INT"), state)).toEqual([
      "USE `shop`",
      "SET TIMESTAMP=1800000000.001234",
      "SET @@session.foreign_key_checks=0, @@session.unique_checks=1, @@session.sql_auto_is_null=0, @@session.sql_mode=3, @@session.character_set_client=45, @@session.collation_connection=45, @@session.collation_server=8, @@session.time_zone='+02:00', @@session.lc_time_names=2, @@session.collation_database=46",
      "ALTER TABLE t ADD c INT",
    ]);
    expect(translate(q("ALTER TABLE t ADD d INT", status, 1_800_000_001), state)).toEqual(["SET TIMESTAMP=1800000001.001234", "ALTER TABLE t ADD d INT"]);
    // DROP DATABASE of the current one: the next event's USE is sent again.
    translate(q("DROP DATABASE shop", status, 1_800_000_001), state);
    expect(translate(q("CREATE TABLE t (a INT)", status, 1_800_000_001), state)[0]).toBe("USE `shop`");
  });

  it("passes statement bytes through unchanged and quotes the database", () => {
    const state = new SessionState();
    state.format = format;
    const out = transactionStatements(transaction(9, GtidFlag.STANDALONE, [queryEvent("we`ird", "INSERT INTO t VALUES ('😀')", Buffer.alloc(0))]), state, { collations });
    expect(out.map((s) => Buffer.from(s.sql, "latin1").toString("utf8"))).toEqual(["USE `we``ird`", "SET TIMESTAMP=1800000000", "INSERT INTO t VALUES ('😀')"]);
  });

  it("carries a statement's expected error", () => {
    const state = new SessionState();
    state.format = format;
    const out = transactionStatements(transaction(9, GtidFlag.STANDALONE, [queryEvent("shop", "DROP TABLE t", Buffer.alloc(0), { errorCode: 1051 })]), state, { collations });
    expect(out.at(-1)).toEqual({ sql: "DROP TABLE t", expectedError: 1051 });
  });

  it("turns Intvar, Rand and User_var events into SETs before their statement", () => {
    const state = new SessionState();
    state.format = format;
    const intvar = Buffer.alloc(9);
    intvar.writeUInt8(2, 0);
    intvar.writeBigUInt64LE(42n, 1);
    const rand = Buffer.alloc(16);
    rand.writeBigUInt64LE(11n, 0);
    rand.writeBigUInt64LE(22n, 8);
    const userVar = (name: string, type: number, charset: number, value: Buffer, flags?: number) => {
      const head = Buffer.alloc(4);
      head.writeUInt32LE(name.length);
      const meta = Buffer.alloc(10);
      meta.writeUInt8(0, 0);
      meta.writeUInt8(type, 1);
      meta.writeUInt32LE(charset, 2);
      meta.writeUInt32LE(value.length, 6);
      return event(EventType.USER_VAR, Buffer.concat([head, Buffer.from(name), meta, value, flags === undefined ? Buffer.alloc(0) : Buffer.from([flags])]));
    };
    const out = translate(
      transaction(9, 0, [
        intvar.length ? event(EventType.INTVAR, intvar) : (undefined as never),
        event(EventType.RAND, rand),
        userVar("s", 0, 45, Buffer.from("ä'")),
        queryEvent("shop", "INSERT INTO t (v) VALUES (@s)", Buffer.alloc(0)),
        event(EventType.XID, Buffer.alloc(8)),
      ]),
      state,
    );
    expect(out).toEqual(["BEGIN", "SET INSERT_ID=42", "SET @@RAND_SEED1=11, @@RAND_SEED2=22", "SET @`s` := _utf8mb4 X'c3a427' COLLATE `utf8mb4_general_ci`", "USE `shop`", "SET TIMESTAMP=1800000000", "INSERT INTO t (v) VALUES (@s)", "COMMIT"]);
    const big = Buffer.alloc(8);
    big.writeBigUInt64LE(18446744073709551615n);
    expect(text(userVarStatement(userVar("u", 2, 63, big, 1), format, collations).sql)).toBe("SET @`u` := 18446744073709551615");
    expect(text(userVarStatement(userVar("i", 2, 63, big, 0), format, collations).sql)).toBe("SET @`i` := -1");
    const real = Buffer.alloc(8);
    real.writeDoubleLE(2);
    expect(text(userVarStatement(userVar("r", 1, 63, real), format, collations).sql)).toBe("SET @`r` := 2e0");
    // DECIMAL(10,2) -1234.56 as the server stores it: precision, scale, then the binary decimal.
    expect(text(userVarStatement(userVar("d", 4, 63, Buffer.from([10, 2, 0x7f, 0xff, 0xfb, 0x2d, 0xc7])), format, collations).sql)).toBe("SET @`d` := -1234.56");
    const nul = event(EventType.USER_VAR, Buffer.concat([Buffer.from([1, 0, 0, 0]), Buffer.from("n"), Buffer.from([1])]));
    expect(text(userVarStatement(nul, format, collations).sql)).toBe("SET @`n` := NULL");
    // A transaction whose statement is filtered out drops its SETs too.
    expect(translate(transaction(9, 0, [event(EventType.RAND, rand), queryEvent("other", "INSERT INTO t VALUES (RAND())", Buffer.alloc(0)), event(EventType.XID, Buffer.alloc(8))]), new SessionState(), ["shop"])).toEqual([]);
  });

  it("refuses what it cannot replay, naming the transaction", () => {
    const state = new SessionState();
    expect(() => transactionStatements(transaction(9, GtidFlag.PREPARED_XA, [event(EventType.XID, Buffer.alloc(8))]), state, { collations })).toThrow(/transaction 0-7-9 is an XA transaction/);
    expect(() => transactionStatements(transaction(9, 0, [event(EventType.QUERY_COMPRESSED, Buffer.alloc(20))]), state, { collations })).toThrow(/0-7-9 has a compressed event/);
    expect(formatGtid(captured[0]?.gtid ?? { domain: 0, server: 0, seq: 0n })).toBe("0-7-1");
  });
});

describe("parseQueryEvent", () => {
  it("reads every status variable it knows and stops at an unknown one", () => {
    const q = parseQueryEvent(queryEvent("shop", "SELECT 1", Buffer.concat([status, Buffer.from([200, 1, 2, 3])])), format);
    expect(q).toMatchObject({
      database: "shop",
      errorCode: 0,
      status: { flags2: 1 << 26, sqlMode: 3n, charset: { client: 45, connection: 45, server: 8 }, timeZone: "+02:00", lcTimeNames: 2, collationDatabase: 46, microseconds: 1234 },
    });
    expect(q.statement.toString()).toBe("SELECT 1");
  });
});

describe("decodeDecimal", () => {
  it("reads the server's binary decimals", () => {
    // DECIMAL(10,2): 8 integer digits in 4 bytes, 2 fraction digits in 1; the sign bit flipped.
    expect(decodeDecimal(Buffer.from([0x80, 0x00, 0x04, 0xd2, 0x38]), 10, 2)).toBe("1234.56");
    expect(decodeDecimal(Buffer.from([0x80, 0x00, 0x00, 0x00, 0x00]), 10, 2)).toBe("0.00");
    expect(decodeDecimal(Buffer.from([0x80, 0x00, 0x00, 0x00, 0x05]), 10, 2)).toBe("0.05");
    // DECIMAL(20,10) 1234567890.0123456789: 1 digit in 1 byte + 9 in a word; 9 in a word + 1 in 1 byte.
    expect(decodeDecimal(Buffer.from([0x81, 0x0d, 0xfb, 0x38, 0xd2, 0x00, 0xbc, 0x61, 0x4e, 0x09]), 20, 10)).toBe("1234567890.0123456789");
  });
});

describe("isAccountStatement", () => {
  it("knows the account statements, past comments", () => {
    for (const s of ["CREATE USER a", "  drop user a", "GRANT SELECT ON *.* TO a", "REVOKE ALL ON *.* FROM a", "SET PASSWORD FOR a = PASSWORD('x')", "ALTER USER a", "RENAME USER a TO b", "CREATE ROLE r", "SET DEFAULT ROLE r", "/* c */ GRANT r TO a"]) {
      expect(isAccountStatement(Buffer.from(s)), s).toBe(true);
    }
    for (const s of ["CREATE TABLE user (a INT)", "INSERT INTO grants VALUES (1)", "SET TIMESTAMP=1"]) expect(isAccountStatement(Buffer.from(s)), s).toBe(false);
  });
});
