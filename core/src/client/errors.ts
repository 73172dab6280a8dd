// Errors from the API server, classified the way reconcilers need them.

/** A Status answer from the API server (4xx/5xx), with its reason. */
export class ApiError extends Error {
  override name = "ApiError";
  readonly status: number;
  /** The Status reason, e.g. "NotFound", "Conflict", "Expired", "Invalid". */
  readonly reason: string;
  readonly details: unknown;

  constructor(status: number, reason: string, message: string, details?: unknown) {
    super(message);
    this.status = status;
    this.reason = reason;
    this.details = details;
  }

  static fromBody(status: number, body: string, what: string): ApiError {
    try {
      const s = JSON.parse(body) as { reason?: string; message?: string; details?: unknown };
      return new ApiError(status, s.reason ?? String(status), `${what}: ${s.message ?? body}`, s.details);
    } catch {
      return new ApiError(status, String(status), `${what}: HTTP ${status} ${body.slice(0, 200)}`);
    }
  }
}

const hasStatus = (err: unknown, status: number): boolean => err instanceof ApiError && err.status === status;

export const isNotFound = (err: unknown): boolean => hasStatus(err, 404);
export const isConflict = (err: unknown): boolean => hasStatus(err, 409) && (err as ApiError).reason === "Conflict";
export const isAlreadyExists = (err: unknown): boolean => hasStatus(err, 409) && (err as ApiError).reason === "AlreadyExists";
/** 410 Gone: the resourceVersion asked for is older than etcd keeps; relist. */
export const isGone = (err: unknown): boolean => hasStatus(err, 410);
export const isInvalid = (err: unknown): boolean => hasStatus(err, 422);
export const isForbidden = (err: unknown): boolean => hasStatus(err, 403);

/**
 * The API server could not be reached or the connection failed before a whole answer
 * (refused, reset, TLS, DNS, undici's headers or body timeout); the socket error is the
 * cause. Not an abort: a request whose signal aborted (its timeout included) fails with
 * the signal's reason, a DOMException "TimeoutError" or "AbortError".
 */
export class ApiConnectionError extends Error {
  override name = "ApiConnectionError";
  readonly code: string;
  constructor(server: string, cause: Error & { code?: string }) {
    super(`cannot reach the Kubernetes API at ${server}: ${cause.message || cause.code || cause.name}`, { cause });
    this.code = cause.code ?? "";
  }
}
