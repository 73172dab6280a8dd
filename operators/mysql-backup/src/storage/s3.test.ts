import { describe, expect, it } from "vitest";
import { normalizePrefix, s3Failure } from "./s3.ts";

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
});
