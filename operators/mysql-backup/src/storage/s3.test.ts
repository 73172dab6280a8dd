import { describe, expect, it } from "vitest";
import { BackupError } from "../errors.ts";
import { BucketClient, normalizePrefix, s3Failure } from "./s3.ts";

const where = { bucket: "backups", endpoint: "https://s3.example" };
const sdkError = (name: string, status?: number, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(name), { name, ...(status === undefined ? {} : { $metadata: { httpStatusCode: status } }), ...extra });

describe("S3 locations and failures", () => {
  it("normalizes prefixes and refuses dot segments", () => {
    expect(normalizePrefix("/a//b/")).toBe("a/b");
    expect(normalizePrefix("")).toBe("");
    expect(() => normalizePrefix("a/../b")).toThrow(/must not contain/);
  });

  it("tells unreachable, denied, missing and other failures apart", () => {
    const refused = s3Failure(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }), "read x", where);
    expect(refused).toMatchObject({ reason: "StorageUnreachable", retryable: true });
    expect(refused.message).toBe("could not read x: S3 endpoint https://s3.example is unreachable (ECONNREFUSED)");
    expect(s3Failure(sdkError("SignatureDoesNotMatch", 403), "read x", where)).toMatchObject({ reason: "StorageAccessDenied", retryable: false });
    expect(s3Failure(sdkError("NoSuchBucket", 404), "read x", where).message).toBe('bucket "backups" does not exist at https://s3.example');
    expect(s3Failure(sdkError("NoSuchKey", 404), "read x", where).reason).toBe("ObjectNotFound");
    expect(s3Failure(sdkError("InternalError", 503), "read x", where)).toMatchObject({ reason: "StorageError", retryable: true });
    expect(s3Failure(sdkError("AbortError"), "read x", where).reason).toBe("Aborted");
  });

  it("reads again only when S3's stored checksum refused the bytes, never on a mismatch of the caller's own", async () => {
    const bucket = new BucketClient({ bucket: "backups", endpoint: "https://s3.example", region: "us-east-1" });
    // The SDK's refusal of a body that misses x-amz-checksum-*: a plain Error, this message, no $metadata.
    const refusedByS3 = () => new Error('Checksum mismatch: expected "AAAAAA==" but received "BBBBBB==" in response header "x-amz-checksum-crc32".');
    let reads = 0;
    const once = await bucket.rereadDamaged("k", undefined, () => {
      reads++;
      if (reads === 1) throw bucket.fail(refusedByS3(), "download k");
      return Promise.resolve("bytes");
    });
    expect({ once, reads }).toEqual({ once: "bytes", reads: 2 });

    reads = 0;
    const larger = new BackupError("ChecksumMismatch", "object k of s3://backups is larger than the manifest says");
    const err = await bucket.rereadDamaged("k", undefined, () => {
      reads++;
      return Promise.reject(larger);
    }).catch((e: unknown) => e);
    expect({ err, reads }).toEqual({ err: larger, reads: 1 });
  });
});
