// Noticing that a Secret's password changed without keeping the password: the
// status records a fingerprint of the password last applied.
//
// The fingerprint is an HMAC-SHA-256 keyed with a random 256-bit key the
// operator keeps in a Secret of its own (fingerprint-key.ts). Whoever may read
// DatabaseUsers need not be allowed to read Secrets, and a plain hash of a weak
// password is cheap to brute-force; without the key an HMAC reveals nothing to
// guess against, and with it one costs microseconds where the scrypt used
// before cost ~33 ms and 16 MiB per create and rotation.
//
// Fingerprints written by older releases (scrypt, salted with the object's uid)
// are still recognised: a converged user is not touched on upgrade, and the
// next time its Secret moves its fingerprint is rewritten in the HMAC format.
import { createHash, createHmac, scrypt, timingSafeEqual } from "node:crypto";

const HMAC_PREFIX = "hmac-sha256:";

/** The scrypt parameters of the fingerprints older releases wrote (N = 2^14, r = 8, p = 1). */
const SCRYPT = { N: 16_384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
const SCRYPT_PREFIX = `scrypt:${SCRYPT.N}:${SCRYPT.r}:${SCRYPT.p}:`;
const SCRYPT_KEY_LENGTH = 32;

/**
 * A short, public name for a key (the first 8 hex digits of its SHA-256): a
 * fingerprint made with another key is then told apart from one of another
 * password, in the status and in tests. It says nothing about the key itself.
 */
export function keyId(key: Buffer): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 8);
}

/**
 * The fingerprint of `password` under `key`, bound to `salt` (the DatabaseUser's
 * uid: a fingerprint is never comparable across objects): `hmac-sha256:<key id>:<base64>`.
 */
export function passwordFingerprint(password: string, salt: string, key: Buffer): string {
  const mac = createHmac("sha256", key).update(`stateward.io/databaseuser/${salt}\0`).update(password, "utf8").digest("base64");
  return `${HMAC_PREFIX}${keyId(key)}:${mac}`;
}

/** The scrypt fingerprint older releases wrote; kept to recognise them, never written any more. */
export function legacyPasswordFingerprint(password: string, salt: string): Promise<string> {
  return new Promise((resolve, reject) => {
    scrypt(password, `stateward.io/databaseuser/${salt}`, SCRYPT_KEY_LENGTH, SCRYPT, (err, key) => {
      if (err) reject(err);
      else resolve(SCRYPT_PREFIX + key.toString("base64"));
    });
  });
}

/**
 * Whether `fingerprint` (from the status) is one of `password`. An HMAC made with
 * another key (the key Secret was deleted) or in a format this release does not
 * know counts as no match: the password is then set again once, which is harmless.
 * A scrypt fingerprint costs one scrypt (~33 ms), paid once per user, on the first
 * Secret change after the upgrade.
 */
export async function fingerprintMatches(fingerprint: string, password: string, salt: string, key: Buffer): Promise<boolean> {
  if (fingerprint.startsWith(HMAC_PREFIX)) return sameText(fingerprint, passwordFingerprint(password, salt, key));
  if (fingerprint.startsWith(SCRYPT_PREFIX)) return sameText(fingerprint, await legacyPasswordFingerprint(password, salt));
  return false;
}

/** Whether `fingerprint` is an HMAC made with `key` (then checking it costs microseconds, and a mismatch means another password). */
export function madeWithKey(fingerprint: string, key: Buffer): boolean {
  return fingerprint.startsWith(`${HMAC_PREFIX}${keyId(key)}:`);
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
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
