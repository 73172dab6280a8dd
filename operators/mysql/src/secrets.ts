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
  declare readonly reason: "SecretNotFound" | "SecretKeyMissing";
  /** Retried: the Secret may be created or completed any time. */
  constructor(reason: "SecretNotFound" | "SecretKeyMissing", message: string) {
    super(reason, message);
  }
}

const isSecretsInformer = (rt: { apiVersion: string; plural: string }) => rt.apiVersion === "v1" && rt.plural === "secrets";

export class SecretReader {
  private readonly client: KubeClient;
  private readonly cache: Cache;
  /** What readRecurring fetched, by `<namespace>/<name>`: the Secret as of its resourceVersion. */
  private readonly recurring = new Map<string, Secret>();
  /** Counts forgetRecurring calls: a read that was in flight across one does not put back what was forgotten. */
  private forgets = 0;

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

  /** The Secret's resourceVersion, from the cache; undefined when absent or when Secrets are not cached. */
  version(namespace: string, name: string): string | undefined {
    if (!this.cached()) return undefined;
    return this.cache.get<Secret>(builtin.secret, namespace, name)?.metadata.resourceVersion;
  }

  /** The whole Secret, or undefined when it does not exist. */
  async read(namespace: string, name: string): Promise<Secret | undefined> {
    if (this.cached()) {
      const hit = this.cache.get<Secret>(builtin.secret, namespace, name);
      if (hit === undefined) return undefined;
      // A metadata-only cache has no `type` (the API server always sets it on a full Secret).
      if (hit.type !== undefined) return hit;
    }
    try {
      return await this.client.get<Secret>(builtin.secret, namespace, name);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
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

/**
 * The decoded value of `key` in `secret`.
 * @throws MissingSecretError when the key is absent.
 */
export function secretValue(secret: Secret, key: string): string {
  const encoded = secret.data?.[key];
  if (encoded === undefined) throw new MissingSecretError("SecretKeyMissing", `Secret ${secret.metadata.name ?? ""} has no key ${key}`);
  return Buffer.from(encoded, "base64").toString("utf8");
}
