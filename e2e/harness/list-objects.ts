// Lists the objects under an s3:// URL in the dev environment's S3 server
// (credentials from the environment written by `make dev-up`). Used by `make demo`.
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { s3Client } from "./s3.ts";

const url = process.argv[2] ?? "";
const m = /^s3:\/\/([^/]+)\/(.*)$/.exec(url);
if (!m) {
  console.error(`usage: list-objects.ts s3://bucket/prefix/ (got "${url}")`);
  process.exit(2);
}
const env = (k: string) => process.env[k] ?? "";
const client = s3Client({ endpoint: env("S3_ENDPOINT"), region: env("S3_REGION"), accessKeyId: env("S3_ACCESS_KEY_ID"), secretAccessKey: env("S3_SECRET_ACCESS_KEY") });
const out = await client.send(new ListObjectsV2Command({ Bucket: m[1], Prefix: m[2] }));
for (const o of out.Contents ?? []) console.log(`  ${String(o.Size ?? 0).padStart(8)}  ${o.Key ?? ""}`);
client.destroy();
