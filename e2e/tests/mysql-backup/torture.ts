// The "torture" schema of the backup engine's tests: every value type at its
// edges, views (one on another, one calling a function), triggers (that would
// corrupt the data if they fired during a restore), a procedure, a function,
// an event, a sequence, reserved-word and unicode identifiers, an empty table
// and a non-transactional one — plus, in a second database, a table of a
// million rows. And the two things a restore must reproduce: CHECKSUM TABLE
// of every table, and the SHOW CREATE of every object.
import type mysql from "mysql2/promise";

type Conn = mysql.Connection;
type Row = Record<string, unknown>;

export const id = (name: string): string => `\`${name.replaceAll("`", "``")}\``;

async function rows(conn: Conn, sql: string, values: unknown[] = []): Promise<Row[]> {
  const [result] = await conn.query(sql, values);
  return result as Row[];
}

const allBytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i)).toString("hex");

const typesColumns =
  "ti, tiu, si, siu, mi, miu, i, iu, bi, biu, d, d2, f, f2, dbl, dbl2, b1, b64, b5, dt, dtm, dtm0, ts, tm, yr, j, bl, lbl, bn, vb, txt, vc, ch, lat, asc_, utf3, e, st, g, pt, ip6, uu";

/** Creates the torture database `db` (which must not exist). */
export async function createTortureDatabase(conn: Conn, db: string): Promise<void> {
  const q = async (sql: string, values: unknown[] = []): Promise<void> => {
    await conn.query(sql, values);
  };
  // Zero dates need a mode without NO_ZERO_DATE; TIMESTAMPs are written in a
  // zone other than UTC, so a restore that shifted them would show.
  await q("SET SESSION sql_mode = ''");
  await q("SET SESSION time_zone = '+05:30'");
  await q(`CREATE DATABASE ${id(db)} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  await q(`USE ${id(db)}`);
  await q(`CREATE TABLE types (
    id INT AUTO_INCREMENT PRIMARY KEY,
    ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED, mi MEDIUMINT, miu MEDIUMINT UNSIGNED,
    i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
    d DECIMAL(65,30), d2 DECIMAL(10,2) UNSIGNED,
    f FLOAT, f2 FLOAT(7,3), dbl DOUBLE, dbl2 DOUBLE(12,4),
    b1 BIT(1), b64 BIT(64), b5 BIT(5),
    dt DATE, dtm DATETIME(6), dtm0 DATETIME, ts TIMESTAMP(6) NULL DEFAULT NULL, tm TIME(3), yr YEAR,
    j JSON,
    bl BLOB, lbl LONGBLOB, bn BINARY(8), vb VARBINARY(255),
    txt TEXT, vc VARCHAR(255), ch CHAR(10), lat VARCHAR(50) CHARACTER SET latin1, asc_ VARCHAR(20) CHARACTER SET ascii,
    utf3 VARCHAR(50) CHARACTER SET utf8mb3,
    e ENUM('a','b','ç',''), st SET('x','y','z'),
    g GEOMETRY, pt POINT,
    ip6 INET6, uu UUID,
    gen_v BIGINT AS (i * 2) VIRTUAL,
    gen_s VARCHAR(300) AS (CONCAT(IFNULL(vc, ''), '!')) STORED
  ) ENGINE=InnoDB`);
  // Upper limits.
  await q(
    `INSERT INTO types (${typesColumns}) VALUES (
      127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807, 18446744073709551615,
      '99999999999999999999999999999999999.999999999999999999999999999999', 99999999.99,
      3.4028234e38, 9999.999, 1.7976931348623157e308, 99999999.9999,
      b'1', b'1111111111111111111111111111111111111111111111111111111111111111', b'11111',
      '9999-12-31', '9999-12-31 23:59:59.999999', '9999-12-31 23:59:59', '2038-01-19 08:44:07.999999', '838:59:59.000', 2155,
      '{"a":[1,2.5,"x\\\\"y",null,true],"ü":"表🎉","n":{"deep":{"er":[]}}}',
      X'${allBytes}', ?, X'00FF00FF00FF00FF', X'${allBytes.slice(0, 254 * 2)}',
      ?, ?, 'ten chars!', 'Ä ö ß é ÿ', '~!@#$%^&*()', 'ü€ ascii', 'ç', 'x,y,z',
      ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0))'), POINT(1.5, -2.25), 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'ffffffff-ffff-ffff-ffff-ffffffffffff'
    )`,
    [
      Buffer.alloc(300_000, 0xa5),
      "quote ' dquote \" backslash \\ nul \0 ctrl-z \x1a cr \r lf \n tab \t semicolon ; -- not a comment /* nor this */ '; DROP TABLE types; --",
      "4-byte 🎉😀𝄞 CJK 表 combining e\u0301 RTL שלום",
    ],
  );
  // Lower limits and the smallest magnitudes.
  await q(
    `INSERT INTO types (${typesColumns}) VALUES (
      -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0,
      '-99999999999999999999999999999999999.999999999999999999999999999999', 0.00,
      1.17549435e-38, -9999.999, 4.9406564584124654e-324, -99999999.9999,
      b'0', b'0', b'0',
      '1000-01-01', '1000-01-01 00:00:00.000000', '1000-01-01 00:00:00', '1970-01-01 05:30:01.000001', '-838:59:59.000', 1901,
      '[]', X'00', X'', X'0000000000000000', X'00',
      '', '', '', '', '', '', 'a', '',
      ST_GeomFromText('POINT(0 0)'), POINT(0, 0), '::', '00000000-0000-0000-0000-000000000000'
    )`,
  );
  // NULL everywhere; then empty strings everywhere (not the same thing).
  await q("INSERT INTO types (id) VALUES (NULL)");
  await q(
    `INSERT INTO types (vc, txt, ch, bl, vb, lat, asc_, utf3, j, e, st) VALUES ('', '', '', '', '', '', '', '', '""', '', '')`,
  );
  // Zero dates (allowed by this session's sql_mode), a full-precision float set.
  await q("INSERT INTO types (dt, dtm, dtm0, yr, f, dbl) VALUES ('0000-00-00', '0000-00-00 00:00:00.000000', '0000-00-00 00:00:00', 0, 0.1, 0.1)");
  await q("INSERT INTO types (f, dbl, d) VALUES (16777217, 0.30000000000000004, '0.000000000000000000000000000001')");
  await q("INSERT INTO types (f, dbl, d) VALUES (3.1415927, 3.141592653589793, '-0.000000000000000000000000000001')");
  await q("INSERT INTO types (f, dbl) VALUES (1.1754942e-38, 2.2250738585072014e-308)");
  await q("INSERT INTO types (f, dbl) VALUES (-123456.79, -1.2345678901234568e20)");
  // Two thousand rows of generated values across every column.
  await q(`INSERT INTO types (${typesColumns})
    SELECT seq % 256 - 128, seq % 256, seq * 37 % 65536 - 32768, seq * 37 % 65536,
      seq * 7919 % 16777216 - 8388608, seq * 7919 % 16777216,
      seq * 2654435761 % 4294967296 - 2147483648, seq * 2654435761 % 4294967296,
      CAST(CONV(SUBSTR(SHA2(seq, 256), 1, 15), 16, 10) AS SIGNED) * IF(seq % 2, 1, -1),
      CAST(CONV(SUBSTR(SHA2(seq, 256), 1, 16), 16, 10) AS UNSIGNED),
      seq / 7, seq / 3,
      RAND(seq) * POW(10, seq % 60 - 30), ROUND(RAND(seq + 1) * 9999, 3),
      RAND(seq * 3) * POW(10, seq % 600 - 300), RAND(seq * 5) * 1e6,
      seq % 2, CAST(CONV(SUBSTR(SHA2(seq, 256), 17, 16), 16, 10) AS UNSIGNED), seq % 32,
      DATE('1000-01-01') + INTERVAL (seq * 997 % 3000000) DAY,
      TIMESTAMP('1000-01-01 00:00:00') + INTERVAL (seq * 123456789 % 250000000000) SECOND + INTERVAL (seq % 1000000) MICROSECOND,
      TIMESTAMP('2000-01-01') + INTERVAL seq HOUR,
      FROM_UNIXTIME(seq * 104729 % 2000000000 + 1) + INTERVAL (seq % 1000000) MICROSECOND,
      SEC_TO_TIME(seq * 31 % 3000000 - 1500000 + (seq % 1000) / 1000),
      1901 + seq % 255,
      JSON_OBJECT('seq', seq, 'h', SHA2(seq, 224), 'u', '表🎉', 'q', 'it''s "quoted" \\\\ ok', 'f', RAND(seq)),
      UNHEX(REPEAT(SHA2(seq, 512), seq % 5)),
      IF(seq % 10 = 0, NULL, RANDOM_BYTES(1 + seq % 1000)),
      UNHEX(SUBSTR(SHA2(seq, 256), 1, 16)),
      UNHEX(SUBSTR(SHA2(seq, 512), 1, 2 * (seq % 64))),
      CONCAT(REPEAT('ü表🎉''"\\\\\\n\\r\\t;', seq % 4), seq),
      CONCAT('v', seq, IF(seq % 3 = 0, '', ' '), '😀'),
      LEFT(SHA2(seq, 256), seq % 11),
      CONCAT('Ä ö ß é ', seq), CONCAT('ascii-', seq), CONCAT('ü€', seq),
      ELT(1 + seq % 4, 'a', 'b', 'ç', ''), MAKE_SET(seq % 8, 'x', 'y', 'z'),
      IF(seq % 5 = 0, NULL, ST_GeomFromText(CONCAT('LINESTRING(', seq, ' ', seq / 3, ', 0 0)'))),
      POINT(seq, -seq),
      IF(seq % 4 = 0, NULL, INET6_NTOA(UNHEX(SUBSTR(SHA2(seq, 256), 1, 32)))),
      IF(seq % 3 = 0, NULL, UUID())
    FROM (SELECT CAST(seq AS SIGNED) AS seq FROM seq_1_to_2000) AS s`);

  await q("CREATE TABLE customer (id INT PRIMARY KEY, name VARCHAR(100) NOT NULL, created TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) ENGINE=InnoDB");
  await q(`CREATE TABLE \`order\` (
    id INT AUTO_INCREMENT PRIMARY KEY, \`select\` INT, \`from\` VARCHAR(20), customer_id INT, total DECIMAL(10,2),
    note VARCHAR(50) NOT NULL DEFAULT '', hidden_col INT INVISIBLE DEFAULT 7,
    KEY (customer_id), CONSTRAINT fk_customer FOREIGN KEY (customer_id) REFERENCES customer (id)
  ) ENGINE=InnoDB`);
  await q("CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(100), at_ DATETIME(6)) ENGINE=InnoDB");
  await q("CREATE TABLE `Ünïcødé表` (`naïve列` VARCHAR(20) PRIMARY KEY, `ünïts€` INT) ENGINE=InnoDB");
  await q("CREATE TABLE `we``ird; name` (`a b` INT) ENGINE=InnoDB");
  await q("CREATE TABLE empty_table (id INT PRIMARY KEY, v TEXT) ENGINE=InnoDB");
  await q("CREATE TABLE legacy (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=MyISAM");
  await q("CREATE SEQUENCE seq1 START WITH 100 INCREMENT BY 5");
  // The bytes the stock client's line reader treats specially, where a line
  // ends, inside text of every kind: CRLF (text from web forms), lone CR, CR
  // before the row's end, NUL, Ctrl-Z, backslashes next to them, and what
  // looks like an escape or a client command at the start of a line.
  await q(`CREATE TABLE line_ends (
    id INT PRIMARY KEY, t TEXT, vc VARCHAR(200), lat VARCHAR(200) CHARACTER SET latin1, j JSON, b BLOB, vb VARBINARY(64)
  ) ENGINE=InnoDB`);
  const lineEnds = [
    "first line\r\nsecond line\r\n\r\nthird, after an empty one\r\n",
    "lone\rcr", "ends with cr\r", "\r", "\r\n", "\n", "\r\r\n\n\r", "cr cr lf\r\r\nx",
    "nul\0in the middle", "ends with nul\0", "ctrl-z \x1a and \x1a\r\n", "backslash cr \\\r\n backslash lf \\\n",
    "looks escaped: \\r \\n \\0 \\Z \\\\", "quote '\r\n' dquote \"\r\n\"",
    "\r\ndelimiter ;;\r\n", "\r\n-- a comment?\r\n# another\r\n/* and */ \\g \\q\r\n", "\ttab\r\n\ttab",
  ];
  for (const [i, v] of lineEnds.entries()) {
    await q("INSERT INTO line_ends VALUES (?, ?, ?, ?, ?, ?, ?)", [
      i + 1, v, v.slice(0, 200), v.slice(0, 200), JSON.stringify({ v, i }).replace("{", "{\r\n").replace("}", "\r\n}"),
      Buffer.from(`${v}\r\n`, "latin1"), Buffer.from(v.slice(0, 64), "latin1"),
    ]);
  }

  await q("CREATE FUNCTION f_double(x INT) RETURNS INT DETERMINISTIC RETURN x * 2");
  // Created under NO_BACKSLASH_ESCAPES: '\' is one backslash and ends the string. A restore that read
  // it as an escaped quote ran every later statement of the object into one, which the server refused.
  await q("SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'");
  await q("CREATE FUNCTION f_win_path(p VARCHAR(100)) RETURNS VARCHAR(100) DETERMINISTIC RETURN REPLACE(p, '\\', '/')");
  await q("SET SESSION sql_mode = ''");
  await q(`CREATE PROCEDURE p_note(IN n VARCHAR(50))
    BEGIN
      DECLARE s VARCHAR(100) DEFAULT 'semi;colon;; and $$ // inside';
      INSERT INTO audit (what, at_) VALUES (CONCAT(n, s), '2020-01-01');
    END`);
  // If these fired during a restore, `order`.note and audit would change: the checksums would show it.
  await q("CREATE TRIGGER trg_order_bi BEFORE INSERT ON `order` FOR EACH ROW SET NEW.note = CONCAT(NEW.note, '+bi')");
  await q("CREATE TRIGGER trg_order_ai AFTER INSERT ON `order` FOR EACH ROW INSERT INTO audit (what, at_) VALUES (CONCAT('order ', NEW.id), '2020-01-01')");
  await q(
    "CREATE TRIGGER trg_order_ai_first AFTER INSERT ON `order` FOR EACH ROW PRECEDES trg_order_ai INSERT INTO audit (what, at_) VALUES (CONCAT('first ', NEW.id), '2020-01-02')",
  );
  await q(
    "CREATE EVENT ev_cleanup ON SCHEDULE EVERY 1 DAY STARTS '2030-01-01 00:00:00' ON COMPLETION PRESERVE DISABLE COMMENT 'never runs' DO DELETE FROM audit WHERE at_ < '2000-01-01'",
  );
  // v_nested sorts before v_orders, which it reads: created in name order, it would fail.
  await q("CREATE VIEW v_orders AS SELECT o.id, o.`select`, c.name, f_double(o.`select`) AS doubled FROM `order` o JOIN customer c ON c.id = o.customer_id");
  await q("CREATE VIEW v_nested AS SELECT name, COUNT(*) AS n FROM v_orders GROUP BY name");
  await q("CREATE ALGORITHM=MERGE SQL SECURITY INVOKER VIEW `v_ünï` AS SELECT `naïve列` FROM `Ünïcødé表` WHERE `ünïts€` > 0 WITH CHECK OPTION");

  await q("INSERT INTO customer VALUES (1, 'Ada', '2020-02-02 02:02:02'), (2, 'Bob ''the'' builder', '2021-03-03 03:03:03'), (3, 'Zoë 表', '1999-12-31 23:59:59')");
  await q("INSERT INTO `order` (`select`, `from`, customer_id, total, note) VALUES (1, 'web', 1, 10.50, 'a'), (2, 'shop', 2, 0, ''), (3, NULL, 3, NULL, 'c'), (4, 'x', NULL, 99999999.99, 'd')");
  await q("CALL p_note('called; ')");
  await q("INSERT INTO `Ünïcødé表` VALUES ('ключ', 1), ('🎉', 2), ('', 3), ('tab\\there', -1)");
  await q("INSERT INTO `we``ird; name` VALUES (1), (NULL), (-5)");
  await q("INSERT INTO legacy VALUES (1, 'myisam'), (2, NULL)");
  await q("SELECT NEXTVAL(seq1), NEXTVAL(seq1), NEXTVAL(seq1)");
  await q("SET SESSION time_zone = SYSTEM");
}

/** A database with one table of `count` rows (generated server-side in seconds). */
export async function createBigDatabase(conn: Conn, db: string, count: number): Promise<void> {
  await conn.query(`CREATE DATABASE ${id(db)}`);
  await conn.query(`CREATE TABLE ${id(db)}.big (
    id BIGINT PRIMARY KEY, name VARCHAR(64), qty INT, created DATETIME, price DECIMAL(12,2), note VARCHAR(255)
  ) ENGINE=InnoDB`);
  await conn.query(
    `INSERT INTO ${id(db)}.big SELECT seq, CONCAT('name-', seq, '-', MD5(seq)), seq % 1000, '2020-01-01' + INTERVAL seq SECOND,
      (seq % 100000) / 100, REPEAT(MD5(seq), 3) FROM ${id(db)}.seq_1_to_${count}`,
  );
}

/** What a restore must reproduce: table checksums, sequence states and every object's definition. */
export interface DatabaseFingerprint {
  checksums: Record<string, string>;
  sequences: Record<string, Row[]>;
  definitions: Record<string, Row>;
}

function withoutCreated(row: Row | undefined): Row {
  const { Created: _created, ...rest } = row ?? {};
  return rest;
}

export async function fingerprint(conn: Conn, db: string): Promise<DatabaseFingerprint> {
  const out: DatabaseFingerprint = { checksums: {}, sequences: {}, definitions: {} };
  // SHOW CREATE VIEW leaves out the database only when it is the current one.
  await conn.query(`USE ${id(db)}`);
  const [createDb] = await rows(conn, `SHOW CREATE DATABASE ${id(db)}`);
  out.definitions["database"] = createDb ?? {};
  const tables = await rows(conn, "SELECT TABLE_NAME AS name, TABLE_TYPE AS type FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME", [db]);
  for (const t of tables) {
    const name = String(t.name);
    const qualified = `${id(db)}.${id(name)}`;
    if (t.type === "VIEW") {
      out.definitions[`view ${name}`] = (await rows(conn, `SHOW CREATE VIEW ${qualified}`))[0] ?? {};
    } else if (t.type === "SEQUENCE") {
      out.definitions[`sequence ${name}`] = (await rows(conn, `SHOW CREATE SEQUENCE ${qualified}`))[0] ?? {};
      out.sequences[name] = await rows(conn, `SELECT * FROM ${qualified}`);
    } else {
      out.definitions[`table ${name}`] = (await rows(conn, `SHOW CREATE TABLE ${qualified}`))[0] ?? {};
      const [checksum] = await rows(conn, `CHECKSUM TABLE ${qualified} EXTENDED`);
      out.checksums[name] = String(checksum?.Checksum);
    }
  }
  for (const r of await rows(conn, "SELECT ROUTINE_NAME AS name, ROUTINE_TYPE AS type FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ?", [db])) {
    out.definitions[`${String(r.type)} ${String(r.name)}`] = (await rows(conn, `SHOW CREATE ${String(r.type)} ${id(db)}.${id(String(r.name))}`))[0] ?? {};
  }
  for (const r of await rows(conn, "SELECT TRIGGER_NAME AS name FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?", [db])) {
    out.definitions[`trigger ${String(r.name)}`] = withoutCreated((await rows(conn, `SHOW CREATE TRIGGER ${id(db)}.${id(String(r.name))}`))[0]);
  }
  const order = await rows(
    conn,
    "SELECT TRIGGER_NAME AS name, ACTION_ORDER AS actionOrder FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? ORDER BY TRIGGER_NAME",
    [db],
  );
  out.definitions["trigger order"] = { order: order.map((r) => `${String(r.name)}:${String(r.actionOrder)}`).join(",") };
  for (const r of await rows(conn, "SELECT EVENT_NAME AS name FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ?", [db])) {
    out.definitions[`event ${String(r.name)}`] = (await rows(conn, `SHOW CREATE EVENT ${id(db)}.${id(String(r.name))}`))[0] ?? {};
  }
  return out;
}
