// Noticing that a Secret's password changed without keeping the password: the
// status records a salted scrypt hash of the password last applied. scrypt
// rather than a plain salted SHA-256 because whoever may read DatabaseUsers
// need not be allowed to read Secrets, and a fast hash of a weak password is
// cheap to brute-force. It is computed only when the Secret's resourceVersion
// moved, so its cost is paid on create and rotate, not on every reconcile.
import { createHash, scrypt } from "node:crypto";

/**
 * scrypt cost. N = 2^14, r = 8, p = 1 (16 MiB, ~30 ms on one core) is
 * scrypt's interactive-login setting from its paper; the hash is a
 * change detector, not a login check, so it need not be stronger.
 */
const N = 16_384;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
const PREFIX = `scrypt:${N}:${R}:${P}:`;

/** A fingerprint of `password`, salted with `salt` (the DatabaseUser's uid: a fingerprint is never comparable across objects). */
export function passwordFingerprint(password: string, salt: string): Promise<string> {
  return new Promise((resolve, reject) => {
    scrypt(password, `stateward.io/databaseuser/${salt}`, KEY_LENGTH, { N, r: R, p: P, maxmem: 64 * 1024 * 1024 }, (err, key) => {
      if (err) reject(err);
      else resolve(PREFIX + key.toString("base64"));
    });
  });
}

/**
 * What mysql_native_password stores for `password` (`*` and the upper-case
 * hex of SHA1(SHA1(password))): for accounts with that plugin, the drift
 * check can tell whether someone changed the password on the server. Other
 * plugins salt their hashes, and only the fingerprint is compared.
 */
export function nativePasswordHash(password: string): string {
  const inner = createHash("sha1").update(password, "utf8").digest();
  return `*${createHash("sha1").update(inner).digest("hex").toUpperCase()}`;
}
