// A real S3-compatible server for the tests: versitygw on its POSIX backend,
// which verifies SigV4 signatures and the AWS SDK v3 default checksums.
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "./ports.ts";
import { startProcess, waitUntilReady } from "./process.ts";
import { tools } from "./tools.ts";

export interface S3Endpoint {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  bucket: string;
  pid: number;
  logFile: string;
  /** Where the server keeps the objects, <dataDir>/<bucket>/<key> (tests damage one at rest); absent in a state.json written before it. */
  dataDir?: string;
}

export function s3Client(ep: Pick<S3Endpoint, "endpoint" | "region" | "accessKeyId" | "secretAccessKey">): S3Client {
  return new S3Client({
    endpoint: ep.endpoint,
    region: ep.region,
    forcePathStyle: true,
    credentials: { accessKeyId: ep.accessKeyId, secretAccessKey: ep.secretAccessKey },
  });
}

export async function startS3(dir: string, detached: boolean): Promise<S3Endpoint> {
  const data = join(dir, "data");
  const meta = join(dir, "meta");
  mkdirSync(data, { recursive: true });
  mkdirSync(meta, { recursive: true });
  const port = await freePort();
  // Fresh random credentials per environment; they are written to the env file.
  const accessKeyId = `SW${randomBytes(9).toString("hex").toUpperCase()}`;
  const secretAccessKey = randomBytes(30).toString("base64url");
  const logFile = join(dir, "versitygw.log");
  const proc = startProcess({
    name: "versitygw",
    command: tools.versitygw(),
    args: ["--port", `127.0.0.1:${port}`, "posix", "--sidecar", meta, data],
    env: { ...process.env, ROOT_ACCESS_KEY: accessKeyId, ROOT_SECRET_KEY: secretAccessKey },
    logFile,
    detached,
  });
  const ep = { endpoint: `http://127.0.0.1:${port}`, region: "us-east-1", accessKeyId, secretAccessKey, bucket: "stateward" };
  const client = s3Client(ep);
  await waitUntilReady(proc, async () => {
    try {
      await client.send(new CreateBucketCommand({ Bucket: ep.bucket }));
    } catch (err) {
      const name = (err as { name?: string }).name;
      if (name !== "BucketAlreadyOwnedByYou" && name !== "BucketAlreadyExists") throw err;
    }
    return true;
  }, 30_000);
  client.destroy();
  return { ...ep, pid: proc.pid, logFile, dataDir: data };
}
