// From a resource's `storage.s3` (or `source.s3`) to the engine's S3 options:
// credentials and CA are read from the referenced Secrets here and passed
// on in memory only.
import { MissingSecretError, type SecretReader } from "@stateward/mysql";
import type { S3Options } from "../storage/index.ts";

export interface S3Spec {
  bucket: string;
  prefix?: string;
  endpoint?: string;
  region?: string;
  forcePathStyle?: boolean;
  credentialsSecretRef: { name: string; accessKeyIdKey?: string; secretAccessKeyKey?: string };
  tls?: { caSecretRef?: { name: string; key: string } };
  requestChecksumCalculation?: "WhenSupported" | "WhenRequired";
}

/** @throws MissingSecretError naming the Secret or key that is missing. */
export async function resolveS3(namespace: string, spec: S3Spec, secrets: SecretReader): Promise<S3Options & { bucket: string }> {
  const ref = spec.credentialsSecretRef;
  const accessKeyId = await secrets.value(namespace, ref.name, ref.accessKeyIdKey ?? "AWS_ACCESS_KEY_ID");
  const secretAccessKey = await secrets.value(namespace, ref.name, ref.secretAccessKeyKey ?? "AWS_SECRET_ACCESS_KEY");
  const ca = spec.tls?.caSecretRef ? await secrets.value(namespace, spec.tls.caSecretRef.name, spec.tls.caSecretRef.key) : undefined;
  return {
    bucket: spec.bucket,
    endpoint: spec.endpoint,
    region: spec.region ?? "us-east-1",
    forcePathStyle: spec.forcePathStyle ?? false,
    credentials: { accessKeyId, secretAccessKey },
    ...(ca !== undefined ? { caBundle: ca } : {}),
    requestChecksumCalculation: spec.requestChecksumCalculation === "WhenRequired" ? "WHEN_REQUIRED" : "WHEN_SUPPORTED",
  };
}

/** `<prefix>/<namespace>/<name>`, the folder of one backup (docs/conventions.md, "The backup format"). */
export function backupFolder(prefix: string | undefined, namespace: string, name: string): string {
  const p = (prefix ?? "").replace(/^\/+|\/+$/g, "");
  return [p, namespace, name].filter(Boolean).join("/");
}

export { MissingSecretError };
