// Reading referenced Secrets. Operators watch Secrets to notice changes, but
// what the cache holds may be only their metadata (a metadata-only informer
// keeps every Secret's data out of the process); `SecretReader` then fetches
// the one Secret it needs from the API server. With today's cache, which
// holds whole objects, it reads the data straight from the cache.
import { ReconcileError, builtin, isNotFound, type Cache, type KubeClient, type KubeObject } from "@stateward/core";

export interface Secret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

/** A referenced Secret or key that is not there; the message names both, never a value. */
export class MissingSecretError extends ReconcileError {
  override name = "MissingSecretError";
  declare readonly reason: "SecretNotFound" | "SecretKeyMissing" | "SecretValueNotText";
  /** Retried: the Secret may be created, completed or corrected any time. */
  constructor(reason: "SecretNotFound" | "SecretKeyMissing" | "SecretValueNotText", message: string) {
    super(reason, message);
  }
}

const isSecretsInformer = (rt: { apiVersion: string; plural: string }) => rt.apiVersion === "v1" && rt.plural === "secrets";

/** Secrets read ahead and not yet asked for, at most: beyond it nothing more is read ahead. */
const READ_AHEAD_LIMIT = 64;
/** A Secret read ahead and not asked for within this long is dropped (its reconcile did not come). */
const READ_AHEAD_TTL_MS = 10_000;

interface ReadAhead {
  /** The GET's answer; undefined for a Secret not found or a failed read (then read fetches again). */
  secret: Promise<Secret | undefined>;
  /** Drops it after READ_AHEAD_TTL_MS when no read took it (its object was deleted while queued, say). */
  expiry: NodeJS.Timeout;
}

export class SecretReader {
  private readonly client: KubeClient;
  private readonly cache: Cache;
  /** What readRecurring fetched, by `<namespace>/<name>`: the Secret as of its resourceVersion. */
  private readonly recurring = new Map<string, Secret>();
  /** Counts forgetRecurring calls: a read that was in flight across one does not put back what was forgotten. */
  private forgets = 0;
  /** Secrets read ahead of the reconcile that needs them (readAhead), by `<namespace>/<name>`, until read asks. */
  private readonly ahead = new Map<string, ReadAhead>();

  constructor(client: KubeClient, cache: Cache) {
    this.client = client;
    this.cache = cache;
  }

  /**
   * True when Secrets are in the cache and it has synced. (Asking the cache
   * for a kind nobody registered would start an informer for it — and answer
   * "not found" until it synced — so the informers are inspected instead.)
   */
  private cached(): boolean {
    const informers = this.cache.informers().filter((i) => isSecretsInformer(i.resource));
    return informers.length > 0 && informers.every((i) => i.hasSynced());
  }

  /** Whether Secrets are watched (cached, as metadata or whole) and the cache has synced. */
  watched(): boolean {
    return this.cached();
  }

  /**
   * The Secret's metadata — for its finalizers, not its values: from the cache when Secrets are watched,
   * else by GET. Undefined when it does not exist.
   */
  async metadata(namespace: string, name: string): Promise<KubeObject | undefined> {
    if (this.cached()) return this.cache.get<KubeObject>(builtin.secret, namespace, name);
    return this.fetch(namespace, name);
  }

  /** The Secret's resourceVersion, from the cache; undefined when absent or when Secrets are not cached. */
  version(namespace: string, name: string): string | undefined {
    if (!this.cached()) return undefined;
    return this.cache.get<Secret>(builtin.secret, namespace, name)?.metadata.resourceVersion;
  }

  /** What the cache answers for the Secret: `{ secret }` when it settles the read, undefined when the API server must be asked. */
  private fromCache(namespace: string, name: string): { secret: Secret | undefined } | undefined {
    if (!this.cached()) return undefined;
    const hit = this.cache.get<Secret>(builtin.secret, namespace, name);
    if (hit === undefined) return { secret: undefined };
    // A metadata-only cache has no `type` (the API server always sets it on a full Secret).
    return hit.type !== undefined ? { secret: hit } : undefined;
  }

  private async fetch(namespace: string, name: string): Promise<Secret | undefined> {
    try {
      return await this.client.get<Secret>(builtin.secret, namespace, name);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** The whole Secret, or undefined when it does not exist. */
  async read(namespace: string, name: string): Promise<Secret | undefined> {
    const cached = this.fromCache(namespace, name);
    if (cached) return cached.secret;
    const held = this.takeReadAhead(namespace, name);
    const early = held === undefined ? undefined : await held;
    return early ?? (await this.fetch(namespace, name));
  }

  /**
   * Starts the GET of a Secret that a reconcile about to run will read (its object is next in the
   * queue), so that the reconcile finds it fetched instead of waiting for it: the first round trip
   * of a new DatabaseUser's chain (docs/performance.md, finding 27). The same one GET, earlier;
   * nothing when the cache answers the read, when the Secret is already being read ahead, or when
   * READ_AHEAD_LIMIT are waiting. What is read ahead is held only until `read` asks for it (at most
   * READ_AHEAD_TTL_MS), and `read` uses it only while the cache shows no newer resourceVersion.
   */
  readAhead(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    if (this.ahead.has(key) || this.ahead.size >= READ_AHEAD_LIMIT || this.fromCache(namespace, name)) return;
    const held: ReadAhead = {
      // A failed read ahead is forgotten: the reconcile's own read fetches and reports it.
      secret: this.fetch(namespace, name).catch(() => undefined),
      expiry: setTimeout(() => {
        if (this.ahead.get(key) === held) this.ahead.delete(key);
      }, READ_AHEAD_TTL_MS).unref(),
    };
    this.ahead.set(key, held);
  }

  /**
   * The Secret read ahead, if one was (taken out), resolving to undefined unless it is still current.
   * Undefined at once when none was: a read without one starts its GET without waiting a turn.
   */
  private takeReadAhead(namespace: string, name: string): Promise<Secret | undefined> | undefined {
    const key = `${namespace}/${name}`;
    const held = this.ahead.get(key);
    if (held === undefined) return undefined;
    this.ahead.delete(key);
    clearTimeout(held.expiry);
    return held.secret.then((secret) => {
      // Changed since (the watch shows another resourceVersion): fetched again. Not found then:
      // fetched again too, it may have been created since.
      const version = this.version(namespace, name);
      return secret !== undefined && (version === undefined || version === secret.metadata.resourceVersion) ? secret : undefined;
    });
  }

  /**
   * read, for one of the few Secrets read again and again — an instance's admin and CA Secrets,
   * read each time an operator asks for the instance's connection, once per reconcile: fetched once
   * per resourceVersion, and answered from what was fetched for as long as the cache shows that
   * resourceVersion (its watch says when it changes). Each DatabaseUser's reconcile otherwise
   * fetched the same admin Secret again (docs/performance.md, finding 23). Only for those few: the
   * cache keeps Secrets as metadata so that the process does not hold every Secret's data.
   * Without a synced cache, or when the cache does not show the Secret, it is fetched as by read.
   */
  async readRecurring(namespace: string, name: string): Promise<Secret | undefined> {
    const key = `${namespace}/${name}`;
    const version = this.version(namespace, name);
    const known = this.recurring.get(key);
    if (version !== undefined && known?.metadata.resourceVersion === version) return known;
    const forgetsBefore = this.forgets;
    const secret = await this.read(namespace, name);
    if (secret === undefined) this.recurring.delete(key);
    else if (this.forgets === forgetsBefore) this.recurring.set(key, secret);
    return secret;
  }

  /** Drops what readRecurring holds of these Secrets (`<namespace>/<name>`), e.g. those of a deleted instance. */
  forgetRecurring(keys: readonly string[]): void {
    this.forgets++;
    for (const key of keys) this.recurring.delete(key);
  }

  /**
   * The decoded value of `key` in Secret `name`.
   * @throws MissingSecretError naming the Secret and key.
   */
  async value(namespace: string, name: string, key: string): Promise<string> {
    const secret = await this.read(namespace, name);
    if (secret === undefined) throw new MissingSecretError("SecretNotFound", `Secret ${name} not found in namespace ${namespace}`);
    return secretValue(secret, key);
  }
}

/** Refuses bytes that are not UTF-8 instead of replacing them with U+FFFD. */
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * The decoded value of `key` in `secret`.
 * @throws MissingSecretError when the key is absent, or its value is not UTF-8 text: decoded leniently, a
 *   password such as Latin-1 `pé` would be set on the server as `p\uFFFD`, a password no one knows, and
 *   the account reported Ready. The message never holds the value.
 */
export function secretValue(secret: Secret, key: string): string {
  const encoded = secret.data?.[key];
  if (encoded === undefined) throw new MissingSecretError("SecretKeyMissing", `Secret ${secret.metadata.name ?? ""} has no key ${key}`);
  try {
    return utf8.decode(Buffer.from(encoded, "base64"));
  } catch {
    throw new MissingSecretError("SecretValueNotText", `Secret ${secret.metadata.name ?? ""} key ${key} is not UTF-8 text: store the value UTF-8 encoded`);
  }
}
