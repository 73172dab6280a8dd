// In-use protection: a MySQLInstance and the Secrets it logs in with stay
// while DatabaseUsers that drop their accounts on delete still need them.
//
// Deleting a namespace deletes everything in it at once, in no particular order:
// without this, the instance and its admin Secret were usually gone before the
// DatabaseUsers' finalizers ran, which then had nothing to log in with and
// released their accounts undropped (InstanceGone) — accounts with known
// passwords left on the server after the namespace that declared them. As
// Kubernetes keeps a PersistentVolumeClaim while a pod uses it, a finalizer
// keeps the instance and its Secrets until the last such DatabaseUser is gone.
//
// - Added by the DatabaseUser reconciler before it creates or changes an account
//   (protect): one write per instance and Secret, not per account.
// - Released by InUseReconciler, keyed by instance, once no DatabaseUser holding
//   the drop-account finalizer names it (confirmed with the API server, and not
//   within PROTECT_SETTLE_MS of a protect: a DatabaseUser about to create an
//   account writes its own finalizer right after protecting), from the instance
//   and its Secrets together; from a Secret the instance no longer names at once.
//   An instance being deleted gets no new account (the DatabaseUser reconciler
//   refuses it). With no DatabaseUser, nothing holds anything: deleting either
//   does not depend on the operator.
// - Not on a MySQLCluster's instance: its servers go with the cluster, and so
//   do the accounts.
import {
  addFinalizer,
  builtin,
  hasFinalizer,
  isNotFound,
  removeFinalizer,
  type Cache,
  type Clock,
  type KubeClient,
  type InformerEvent,
  type KubeObject,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
} from "@stateward/core";
import { INSTANCE_BY_SECRET, MySQLInstanceKind, instanceSecrets, type MySQLInstance, type SecretReader } from "@stateward/mysql";
import { DatabaseUserKind, type DatabaseUser } from "./api.ts";
import { USER_BY_INSTANCE, objectIndexKey } from "./indexes.ts";
import { isClusterInstance } from "./ownership.ts";

/** On a MySQLInstance and its admin and CA Secrets while DatabaseUsers that drop their accounts use them. */
export const IN_USE_FINALIZER = "stateward.io/in-use-by-databaseusers";

/**
 * On a protected MySQLInstance: the Secrets (names, comma-separated) that were given IN_USE_FINALIZER for
 * it, so that one no longer named (spec.adminSecretRef edited) is still released.
 */
export const IN_USE_SECRETS = "stateward.io/in-use-secrets";

/** The drop-account finalizer of DatabaseUsers (user-reconciler.ts). */
const DROP_ACCOUNT = "stateward.io/drop-account";

/** How long a Secret found protected is trusted to stay so when Secrets are not watched (read by GET). */
const UNWATCHED_SECRET_RECHECK_MS = 5 * 60_000;

/**
 * After a protect, how long nothing of that instance is released: the DatabaseUser that protected it writes
 * its drop-account finalizer next (one request), and until the API server shows it the instance looks unused.
 */
export const PROTECT_SETTLE_MS = 10_000;

/** How long the release waits when the API server shows a DatabaseUser the cache does not yet. */
const CACHE_CATCH_UP_MS = 1_000;

const MYI = MySQLInstanceKind.resource;
const DBU = DatabaseUserKind.resource;

/** Whether deleting `instance` must wait for its DatabaseUsers. */
export function protectable(instance: MySQLInstance): boolean {
  return !isClusterInstance(instance);
}

/** The instance as its DatabaseUsers see it: without what protect writes (and the write's own bookkeeping). */
function withoutInUse(instance: MySQLInstance): string {
  const { resourceVersion: _rv, managedFields: _mf, finalizers, annotations, ...metadata } = instance.metadata;
  const { [IN_USE_SECRETS]: _recorded, ...otherAnnotations } = annotations ?? {};
  return JSON.stringify({
    ...instance,
    metadata: { ...metadata, annotations: otherAnnotations, finalizers: (finalizers ?? []).filter((f) => f !== IN_USE_FINALIZER) },
  });
}

/**
 * For the DatabaseUser controller's watch of MySQLInstances: passes every change but protect's own write,
 * which would otherwise wake every DatabaseUser of the instance once more (a reconcile each, and one
 * against a cache not yet showing the write that woke it).
 */
export function changedBeyondInUse(event: InformerEvent<MySQLInstance>): boolean {
  return event.type !== "update" || withoutInUse(event.obj) !== withoutInUse(event.old);
}

/** `<namespace>/<name>` of a Secret, as instanceSecrets and the INSTANCE_BY_SECRET index spell it. */
function secretKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** The Secrets recorded in IN_USE_SECRETS and those the instance names now, as `<namespace>/<name>`. */
function protectedSecrets(instance: MySQLInstance): string[] {
  const namespace = instance.metadata.namespace ?? "";
  const recorded = (instance.metadata.annotations?.[IN_USE_SECRETS] ?? "")
    .split(",")
    .filter((name) => name !== "")
    .map((name) => secretKey(namespace, name));
  return [...new Set([...recorded, ...instanceSecrets(instance)])];
}

function holdsDropFinalizer(user: DatabaseUser): boolean {
  return hasFinalizer(user, DROP_ACCOUNT);
}

export class InUseProtection {
  /**
   * What this process wrote to protect an instance, by uid: the IN_USE_SECRETS value and the resourceVersion
   * it wrote over. Trusted while the cache still shows that version (it has not caught up with the write);
   * once it shows another, the cache is.
   */
  private readonly instances = new Map<string, { union: string; over: string | undefined }>();
  /** Likewise for Secrets, by `<namespace>/<name>`; `at` for the recheck when Secrets are not watched. */
  private readonly secrets = new Map<string, { over: string | undefined; at: number }>();
  /** When each instance (by uid) was last protected: see PROTECT_SETTLE_MS. */
  private readonly protectedAt = new Map<string, number>();
  /** Writes in flight, by object: concurrent reconciles of one instance's users make one. */
  private readonly inFlight = new Map<string, Promise<void>>();

  private readonly client: KubeClient;
  private readonly cache: Cache;
  private readonly secretReader: SecretReader;
  private readonly clock: Clock;

  constructor(client: KubeClient, cache: Cache, secretReader: SecretReader, clock: Clock) {
    this.client = client;
    this.cache = cache;
    this.secretReader = secretReader;
    this.clock = clock;
  }

  /**
   * Gives the instance and its Secrets IN_USE_FINALIZER unless they have it: called before an account is
   * created or changed. A Secret that does not exist is left (the connection to the instance fails first).
   */
  async protect(instance: MySQLInstance): Promise<void> {
    if (!protectable(instance)) return;
    const uid = instance.metadata.uid ?? "";
    this.protectedAt.set(uid, this.clock.now().getTime());
    const namespace = instance.metadata.namespace ?? "";
    const names = instanceSecrets(instance).map((key) => key.slice(namespace.length + 1));
    const recorded = instance.metadata.annotations?.[IN_USE_SECRETS] ?? "";
    const union = [...new Set([...recorded.split(",").filter((n) => n !== ""), ...names])].sort().join(",");
    const written = this.instances.get(uid);
    const done =
      (hasFinalizer(instance, IN_USE_FINALIZER) && union === recorded) ||
      (written !== undefined && written.union === union && written.over === instance.metadata.resourceVersion);
    if (!done) {
      await this.once(`instance/${uid}`, async () => {
        await addFinalizer(this.client, MYI, instance, IN_USE_FINALIZER, { [IN_USE_SECRETS]: union });
        this.instances.set(uid, { union, over: instance.metadata.resourceVersion });
      });
    }
    for (const name of names) await this.protectSecret(namespace, name);
  }

  private async protectSecret(namespace: string, name: string): Promise<void> {
    const key = secretKey(namespace, name);
    const written = this.secrets.get(key);
    if (this.secretReader.watched()) {
      const cached = this.cache.get<KubeObject>(builtin.secret, namespace, name);
      if (cached === undefined || hasFinalizer(cached, IN_USE_FINALIZER) || written?.over === cached.metadata.resourceVersion) return;
    } else if (written !== undefined && this.clock.now().getTime() - written.at < UNWATCHED_SECRET_RECHECK_MS) {
      return;
    }
    await this.once(`secret/${key}`, async () => {
      const secret = await this.secretReader.metadata(namespace, name);
      if (secret === undefined) return;
      if (!hasFinalizer(secret, IN_USE_FINALIZER)) await addFinalizer(this.client, builtin.secret, secret, IN_USE_FINALIZER);
      this.secrets.set(key, { over: secret.metadata.resourceVersion, at: this.clock.now().getTime() });
    });
  }

  /** Runs `write` unless one for the same object is in flight, which is awaited instead. */
  private async once(key: string, write: () => Promise<void>): Promise<void> {
    const running = this.inFlight.get(key);
    if (running) return running;
    const started = write().finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, started);
    return started;
  }

  /** Milliseconds until the instance's last protect is PROTECT_SETTLE_MS old (0: it is, or none was made). */
  settling(uid: string | undefined): number {
    const at = this.protectedAt.get(uid ?? "");
    return at === undefined ? 0 : Math.max(0, at + PROTECT_SETTLE_MS - this.clock.now().getTime());
  }

  /** Forgets what protect remembered of the instance and the Secret (released by InUseReconciler). */
  forget(uid: string | undefined, secret?: string): void {
    if (uid !== undefined) {
      this.instances.delete(uid);
      this.protectedAt.delete(uid);
    }
    if (secret !== undefined) this.secrets.delete(secret);
  }
}

/**
 * Releases IN_USE_FINALIZER (see the top of the file), keyed by MySQLInstance: run when the instance changes
 * or goes, when one of its Secrets changes (watched Secrets), and when a DatabaseUser naming it is deleted or
 * stops dropping its account.
 */
export class InUseReconciler implements Reconciler {
  /**
   * The Secrets last seen protected for each instance (`<namespace>/<name>`): released when the instance
   * goes without having released them (its finalizer removed by hand).
   */
  private readonly lastSeen = new Map<string, string[]>();

  private readonly client: KubeClient;
  private readonly cache: Cache;
  private readonly secretReader: SecretReader;
  private readonly protection: InUseProtection;
  /** The manager's target as a label selector (`stateward.io/target=a`), or undefined: the DatabaseUsers it manages. */
  private readonly targetSelector: string | undefined;

  constructor(client: KubeClient, cache: Cache, secretReader: SecretReader, protection: InUseProtection, targetSelector: string | undefined) {
    this.client = client;
    this.cache = cache;
    this.secretReader = secretReader;
    this.protection = protection;
    this.targetSelector = targetSelector;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const namespace = req.namespace ?? "";
    const instanceKey = `${namespace}/${req.name}`;
    const instance = this.cache.get<MySQLInstance>(MYI, req.namespace, req.name);
    if (!instance) {
      const secrets = this.lastSeen.get(instanceKey) ?? [];
      this.lastSeen.delete(instanceKey);
      for (const key of secrets) if (!this.neededByOthers(key, undefined)) await this.releaseSecret(key, ctx);
      return undefined;
    }
    if (!hasFinalizer(instance, IN_USE_FINALIZER) && instance.metadata.annotations?.[IN_USE_SECRETS] === undefined) {
      this.lastSeen.delete(instanceKey);
      return undefined;
    }
    const recorded = protectedSecrets(instance);
    this.lastSeen.set(instanceKey, recorded);
    const named = new Set(instanceSecrets(instance));
    // A Secret the instance no longer names is not needed by it, whatever its users.
    for (const key of recorded) if (!named.has(key) && !this.neededByOthers(key, instance)) await this.releaseSecret(key, ctx);
    if (this.cachedUsers(instance) > 0) return undefined;
    // None in the cache: nothing is released within PROTECT_SETTLE_MS of a protect, nor while the API server
    // shows one the cache does not yet (one LIST, only then).
    const settling = this.protection.settling(instance.metadata.uid);
    if (settling > 0) return { requeueAfter: settling };
    if (await this.usedLive(instance)) return { requeueAfter: CACHE_CATCH_UP_MS };
    for (const key of recorded) if (named.has(key) && !this.neededByOthers(key, instance)) await this.releaseSecret(key, ctx);
    this.protection.forget(instance.metadata.uid);
    this.lastSeen.delete(instanceKey);
    const finalizers = (instance.metadata.finalizers ?? []).filter((f) => f !== IN_USE_FINALIZER);
    await this.client.patch(MYI, namespace, req.name, {
      metadata: { finalizers, annotations: { [IN_USE_SECRETS]: null }, resourceVersion: instance.metadata.resourceVersion },
    });
    ctx.log.info("released: no DatabaseUser that drops its account uses the instance", { instance: instanceKey });
    return undefined;
  }

  /** The DatabaseUsers in the cache naming the instance that still hold the drop-account finalizer. */
  private cachedUsers(instance: MySQLInstance): number {
    return this.cache.byIndex<DatabaseUser>(DBU, USER_BY_INSTANCE, objectIndexKey(instance)).filter(holdsDropFinalizer).length;
  }

  /** Whether the API server shows a DatabaseUser of this manager naming the instance that holds the drop-account finalizer. */
  private async usedLive(instance: MySQLInstance): Promise<boolean> {
    const live = await this.client.list<DatabaseUser>(DBU, { namespace: instance.metadata.namespace, labelSelector: this.targetSelector });
    return live.items.some((u) => u.spec.instanceRef.name === instance.metadata.name && holdsDropFinalizer(u));
  }

  /** Whether another protected instance, with DatabaseUsers holding the drop-account finalizer, names the Secret. */
  private neededByOthers(key: string, instance: MySQLInstance | undefined): boolean {
    return this.cache
      .byIndex<MySQLInstance>(MYI, INSTANCE_BY_SECRET, key)
      .some((other) => other.metadata.uid !== instance?.metadata.uid && hasFinalizer(other, IN_USE_FINALIZER) && this.cachedUsers(other) > 0);
  }

  private async releaseSecret(key: string, ctx: ReconcileContext): Promise<void> {
    const slash = key.indexOf("/");
    const namespace = key.slice(0, slash);
    const secret = await this.secretReader.metadata(namespace, key.slice(slash + 1));
    this.protection.forget(undefined, key);
    if (secret === undefined || !hasFinalizer(secret, IN_USE_FINALIZER)) return;
    try {
      await removeFinalizer(this.client, builtin.secret, secret, IN_USE_FINALIZER);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      return;
    }
    ctx.log.info("released a Secret no DatabaseUser needs any more", { secret: key });
  }
}
