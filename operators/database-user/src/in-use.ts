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
// - Released by InUseReconciler once no DatabaseUser holding the drop-account
//   finalizer names the instance and the instance or the Secret is being deleted
//   (and at once from a Secret the instance no longer names). An instance being
//   deleted gets no new accounts (the DatabaseUser reconciler refuses it), so
//   none can come to need it after the check.
// - Not on a MySQLCluster's instance: its servers go with the cluster, and so
//   do the accounts.
import {
  addFinalizer,
  builtin,
  hasFinalizer,
  isBeingDeleted,
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

/** When Secrets are not watched, how often a protected Secret no DatabaseUser needs is looked at for its deletion. */
const UNWATCHED_SECRET_RELEASE_CHECK_MS = 60_000;

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
  /** Instances this process protected, by uid, with the IN_USE_SECRETS it wrote (until released). */
  private readonly instances = new Map<string, string>();
  /** Protected Secrets by `<namespace>/<name>`, and when that was seen (rechecked when Secrets are not watched). */
  private readonly secrets = new Map<string, number>();
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
    const namespace = instance.metadata.namespace ?? "";
    const names = instanceSecrets(instance).map((key) => key.slice(namespace.length + 1));
    const recorded = instance.metadata.annotations?.[IN_USE_SECRETS] ?? "";
    const union = [...new Set([...recorded.split(",").filter((n) => n !== ""), ...names])].sort().join(",");
    // Protected when the cache says so, or when this process wrote it (the cache may not show it yet:
    // a write from the cached object would then conflict).
    const done = (hasFinalizer(instance, IN_USE_FINALIZER) && union === recorded) || this.instances.get(uid) === union;
    if (!done) {
      await this.once(`instance/${uid}`, async () => {
        await addFinalizer(this.client, MYI, instance, IN_USE_FINALIZER, { [IN_USE_SECRETS]: union });
        this.instances.set(uid, union);
      });
    }
    for (const name of names) await this.protectSecret(namespace, name);
  }

  private async protectSecret(namespace: string, name: string): Promise<void> {
    const key = secretKey(namespace, name);
    if (this.secretReader.watched()) {
      const cached = this.cache.get<KubeObject>(builtin.secret, namespace, name);
      if (cached === undefined || hasFinalizer(cached, IN_USE_FINALIZER) || this.secrets.has(key)) return;
    } else {
      const seen = this.secrets.get(key);
      if (seen !== undefined && this.clock.now().getTime() - seen < UNWATCHED_SECRET_RECHECK_MS) return;
    }
    await this.once(`secret/${key}`, async () => {
      const secret = await this.secretReader.metadata(namespace, name);
      if (secret === undefined) return;
      if (!hasFinalizer(secret, IN_USE_FINALIZER)) await addFinalizer(this.client, builtin.secret, secret, IN_USE_FINALIZER);
      this.secrets.set(key, this.clock.now().getTime());
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

  /** Forgets what protect remembered of the instance and the Secret (released by InUseReconciler). */
  forget(uid: string | undefined, secret?: string): void {
    if (uid !== undefined) this.instances.delete(uid);
    if (secret !== undefined) this.secrets.delete(secret);
  }
}

/**
 * Releases IN_USE_FINALIZER (see the top of the file), keyed by MySQLInstance: run when the instance
 * changes (its deletion, its spec naming other Secrets), when one of its Secrets does (watched Secrets),
 * and when a DatabaseUser naming it is deleted. A Secret is released when the instance no longer names
 * it, or when no DatabaseUser needs the instance and the Secret or the instance is being deleted; the
 * instance once it is being deleted and no DatabaseUser needs it. Until then deleting them waits.
 */
export class InUseReconciler implements Reconciler {
  private readonly client: KubeClient;
  private readonly cache: Cache;
  private readonly secretReader: SecretReader;
  private readonly protection: InUseProtection;

  constructor(client: KubeClient, cache: Cache, secretReader: SecretReader, protection: InUseProtection) {
    this.client = client;
    this.cache = cache;
    this.secretReader = secretReader;
    this.protection = protection;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const instance = this.cache.get<MySQLInstance>(MYI, req.namespace, req.name);
    if (!instance || !hasFinalizer(instance, IN_USE_FINALIZER)) return undefined;
    const namespace = instance.metadata.namespace ?? "";
    const deleting = isBeingDeleted(instance);
    const named = new Set(instanceSecrets(instance));
    const used = this.cachedUsers(instance) > 0;
    const release: KubeObject[] = [];
    let watchLater = false;
    for (const key of protectedSecrets(instance)) {
      // Two instances may log in with one Secret: it stays while the other's users need it.
      if (this.neededByOthers(key, instance) || (used && named.has(key))) continue;
      const secret = await this.secretReader.metadata(namespace, key.slice(namespace.length + 1));
      if (secret === undefined || !hasFinalizer(secret, IN_USE_FINALIZER)) continue;
      if (!named.has(key) || deleting || isBeingDeleted(secret)) release.push(secret);
      // Unwatched, a Secret's deletion is not an event: looked at again now and then.
      else if (!this.secretReader.watched()) watchLater = true;
    }
    const releaseInstance = deleting && !used;
    const confirm = releaseInstance || release.some((s) => named.has(secretKey(namespace, s.metadata.name ?? "")));
    // The cache may not show a DatabaseUser's drop-account finalizer yet: the API server is asked before
    // anything its accounts need is released (one LIST, only then).
    if (confirm && (await this.usedLive(instance))) return { requeueAfter: CACHE_CATCH_UP_MS };
    for (const secret of release) {
      this.protection.forget(undefined, secretKey(namespace, secret.metadata.name ?? ""));
      try {
        await removeFinalizer(this.client, builtin.secret, secret, IN_USE_FINALIZER);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      ctx.log.info("released a Secret no DatabaseUser needs any more", { secret: `${namespace}/${secret.metadata.name ?? ""}` });
    }
    if (releaseInstance) {
      this.protection.forget(instance.metadata.uid);
      await removeFinalizer(this.client, MYI, instance, IN_USE_FINALIZER);
      ctx.log.info("released: no DatabaseUser that drops its account uses the instance any more", { instance: `${namespace}/${req.name}` });
      return undefined;
    }
    return watchLater ? { requeueAfter: UNWATCHED_SECRET_RELEASE_CHECK_MS } : undefined;
  }

  /** The DatabaseUsers in the cache naming the instance that still hold the drop-account finalizer. */
  private cachedUsers(instance: MySQLInstance): number {
    return this.cache.byIndex<DatabaseUser>(DBU, USER_BY_INSTANCE, objectIndexKey(instance)).filter(holdsDropFinalizer).length;
  }

  /** Whether the API server shows a DatabaseUser naming the instance that holds the drop-account finalizer. */
  private async usedLive(instance: MySQLInstance): Promise<boolean> {
    const live = await this.client.list<DatabaseUser>(DBU, { namespace: instance.metadata.namespace });
    return live.items.some((u) => u.spec.instanceRef.name === instance.metadata.name && holdsDropFinalizer(u));
  }

  /** Whether another protected instance, with DatabaseUsers holding the drop-account finalizer, names the Secret. */
  private neededByOthers(key: string, instance: MySQLInstance): boolean {
    return this.cache
      .byIndex<MySQLInstance>(MYI, INSTANCE_BY_SECRET, key)
      .some((other) => other.metadata.uid !== instance.metadata.uid && hasFinalizer(other, IN_USE_FINALIZER) && this.cachedUsers(other) > 0);
  }
}
