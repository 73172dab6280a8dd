// The key of the password fingerprints (password.ts): 32 random bytes in a
// Secret the operator creates the first time it needs one, in the manager's
// own namespace (the chart grants create there, and get on that one name:
// no new cluster-wide right over Secrets).
//
// Losing the key (the Secret deleted) is harmless: the manager creates a new
// one the next time it starts, fingerprints made with the old key no longer
// match, and each account's password is set again once from its Secret when
// that Secret next changes. Replacing the key by hand works the same way (the
// manager reads it once, at its first fingerprint after start).
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { builtin, isAlreadyExists, isNotFound, type KubeClient, type KubeObject } from "@stateward/core";

export const FINGERPRINT_KEY_SECRET = "stateward-fingerprint-key";
const DATA_KEY = "key";
const KEY_BYTES = 32;
const SA_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

interface Secret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

/**
 * Where the key Secret lives: the manager's namespace (POD_NAMESPACE, as the
 * chart sets it, or the service account's), else the first watched namespace,
 * else "default" (a manager run from a workstation).
 */
export function fingerprintKeyNamespace(watched: readonly string[], env: NodeJS.ProcessEnv = process.env, saFile = SA_NAMESPACE_FILE): string {
  if (env.POD_NAMESPACE) return env.POD_NAMESPACE;
  if (existsSync(saFile)) return readFileSync(saFile, "utf8").trim();
  return watched[0] ?? "default";
}

/** The key as the Secret holds it; undefined when the Secret holds none a fingerprint can use. */
export function keyOf(secret: Secret): Buffer | undefined {
  const encoded = secret.data?.[DATA_KEY];
  if (encoded === undefined) return undefined;
  const key = Buffer.from(encoded, "base64");
  return key.length >= 16 ? key : undefined;
}

/** Reads the key once (creating its Secret when there is none) and keeps it for the life of the manager. */
export class FingerprintKey {
  private loading: Promise<Buffer> | undefined;
  private readonly client: KubeClient;
  private readonly namespace: string;
  private readonly name: string;

  constructor(client: KubeClient, namespace: string, name = FINGERPRINT_KEY_SECRET) {
    this.client = client;
    this.namespace = namespace;
    this.name = name;
  }

  get(): Promise<Buffer> {
    this.loading ??= this.load().catch((err: unknown) => {
      this.loading = undefined; // a failed read is tried again by the next reconcile
      throw err;
    });
    return this.loading;
  }

  private async load(): Promise<Buffer> {
    const existing = await this.read();
    if (existing) return this.usable(existing);
    const secret: Secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: this.name,
        namespace: this.namespace,
        labels: { "app.kubernetes.io/managed-by": "stateward" },
        annotations: { "stateward.io/purpose": "Key of DatabaseUser status.passwordFingerprint. Deleting it makes every account's password be set again once." },
      },
      type: "Opaque",
      data: { [DATA_KEY]: randomBytes(KEY_BYTES).toString("base64") },
    };
    try {
      return this.usable(await this.client.create<Secret>(builtin.secret, secret));
    } catch (err) {
      // Another replica (or a manager on another namespace set) created it first: use theirs.
      if (!isAlreadyExists(err)) throw err;
      const created = await this.read();
      if (!created) throw err;
      return this.usable(created);
    }
  }

  private async read(): Promise<Secret | undefined> {
    try {
      return await this.client.get<Secret>(builtin.secret, this.namespace, this.name);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private usable(secret: Secret): Buffer {
    const key = keyOf(secret);
    if (!key) throw new Error(`Secret ${this.namespace}/${this.name} has no usable "${DATA_KEY}" (at least 16 bytes, base64): delete it and the manager creates a new one`);
    return key;
  }
}
