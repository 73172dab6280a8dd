// The format's promise: a backup's objects, downloaded and piped through
// `gunzip | mariadb` in manifest order, give back every byte — with the stock
// client alone, as a user without Stateward would restore. The torture schema
// has a table of the values the client's line reader treats specially (CRLF
// text from web forms, lone CR, NUL, Ctrl-Z, backslashes, binary).
import { GetObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";
import { deleteBackup, runBackup, type S3Location } from "@stateward/operator-mysql-backup";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { s3Client } from "../../harness/index.ts";
import { createTortureDatabase, fingerprint, id } from "./torture.ts";

const env = inject("environment");
const suffix = randomBytes(3).toString("hex");
const db = `sw_stock_${suffix}`;
const prefix = `stock-client/${suffix}`;
const root = { host: env.mysql.host, port: env.mysql.port, user: env.mysql.user, password: env.mysql.password };
const at: S3Location = {
  endpoint: env.s3.endpoint, region: env.s3.region, forcePathStyle: true,
  credentials: { accessKeyId: env.s3.accessKeyId, secretAccessKey: env.s3.secretAccessKey },
  bucket: env.s3.bucket, prefix,
};
let s3: S3Client;
let admin: mysql.Connection;

/** `gunzip -c | mariadb`, fed with one stored object, exactly as a user's shell would run it. */
function gunzipIntoMariadb(object: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", `gunzip -c | mariadb -h "$MYSQL_HOST" -P "$MYSQL_PORT" -u "$MYSQL_USER"`], {
      env: { ...process.env, MYSQL_HOST: root.host, MYSQL_PORT: String(root.port), MYSQL_USER: root.user, MYSQL_PWD: root.password },
      stdio: ["pipe", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`gunzip | mariadb exited with ${code}: ${stderr}`))));
    child.stdin.end(object);
  });
}

async function download(key: string): Promise<Buffer> {
  const res = await s3.send(new GetObjectCommand({ Bucket: env.s3.bucket, Key: key }));
  return Buffer.from(await res.Body!.transformToByteArray());
}

beforeAll(async () => {
  s3 = s3Client(env.s3);
  admin = await mysql.createConnection({ ...root, charset: "utf8mb4" });
  await createTortureDatabase(admin, db);
}, 60_000);

afterAll(async () => {
  await admin?.query(`DROP DATABASE IF EXISTS ${id(db)}`);
  await admin?.end();
  await deleteBackup(at).catch(() => undefined);
  s3?.destroy();
});

describe("a backup restored with the stock client", () => {
  it("is identical, CR, NUL and Ctrl-Z in text included (CHECKSUM TABLE and definitions)", async () => {
    const [hex] = await admin.query(`SELECT HEX(t) AS t FROM ${id(db)}.line_ends WHERE id = 1`);
    expect((hex as { t: string }[])[0]?.t).toContain("0D0A");
    const before = await fingerprint(admin, db);
    const backup = await runBackup({ source: root, storage: at, databases: [db] });

    await admin.query(`DROP DATABASE ${id(db)}`);
    for (const o of backup.manifest.objects) await gunzipIntoMariadb(await download(`${prefix}/${o.key}`));

    const after = await fingerprint(admin, db);
    expect(after.checksums.line_ends).toBe(before.checksums.line_ends);
    expect(after).toEqual(before);
  }, 120_000);
});
