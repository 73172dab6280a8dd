// DatabaseUser: make the account exist on its instance with the Secret's
// password, its limits and exactly its grants; drop it on delete.
//
// A converged object is not even connected for: when its generation, the
// Secret's resourceVersion and the instance are what the status says was last
// applied, the reconcile returns at once and only a periodic drift check
// (reads: the account's row and SHOW GRANTS) goes to the server.
import {
  addFinalizer,
  findCondition,
  hasFinalizer,
  isBeingDeleted,
  isConflict,
  isNotFound,
  messageOf,
  removeFinalizer,
  type Cache,
  type Clock,
  type EventRecorder,
  type KubeClient,
  type ManagerSettings,
  type ObjectCounter,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
} from "@stateward/core";
import {
  Failure,
  MissingSecretError,
  MySQLError,
  MySQLInstanceKind,
  jitter,
  quoteAccount,
  secretValue,
  toFailure,
  type InstanceConnection,
  type MySQLConnector,
  type MySQLInstance,
  type SecretReader,
} from "@stateward/mysql";
import {
  createAccount,
  describeAccount,
  dropAccount,
  readAccount,
  runStatement,
  setLimits,
  setPassword,
  showGrants,
  sslTypeFor,
  type Account,
  type AccountState,
} from "./account.ts";
import { DatabaseUserKind, type DatabaseUser } from "./api.ts";
import { actualGrants, changeStatements, describeChange, desiredGrants, diffGrants, isEmptyDiff } from "./grants.ts";
import { USER_BY_ACCOUNT, mysqlUserName, userAccount } from "./indexes.ts";
import { fingerprintMatches, madeWithKey, nativePasswordHash, passwordFingerprint } from "./password.ts";
import type { FingerprintKey } from "./fingerprint-key.ts";
import { readyStatus, writeStatus } from "@stateward/core";
import { specProblems } from "./validation.ts";
import { protectable, type InUseProtection } from "./in-use.ts";
import { ACCOUNT_CREATED_BY, adminPrivileges, creationClaim, isClusterInstance, knownOrigin, protectedAccount } from "./ownership.ts";

/** How long a reconcile that found the cache behind the API server waits before it looks again. */
const CACHE_CATCH_UP_MS = 1_000;

/**
 * How long a DatabaseUser being deleted keeps trying to drop its account on an instance that is being deleted
 * too and cannot be reached or logged in to, before it is released undropped (InstanceGone): a namespace
 * deleted with the MySQL server in it takes the server's pods first.
 */
export const DELETING_INSTANCE_GRACE_MS = 60_000;
/** Meanwhile, how often it tries. */
const DELETING_INSTANCE_RETRY_MS = 5_000;

/** On DatabaseUsers whose account is dropped on delete (deletionPolicy: Delete). */
export const FINALIZER = "stateward.io/drop-account";

const DBU = DatabaseUserKind.resource;
const MYI = MySQLInstanceKind.resource;

/** Diff passes per reconcile: the second catches what a server's ALL held beyond our catalogue. */
const MAX_GRANT_PASSES = 3;

export interface DatabaseUserReconcilerOptions {
  /** How often a converged account is compared with the server again (reads only). Defaults to 5 min. */
  driftCheckIntervalMs?: number;
  /** See DELETING_INSTANCE_GRACE_MS (the default). */
  deletingInstanceGraceMs?: number;
}

export interface DatabaseUserReconcilerDeps {
  client: KubeClient;
  cache: Cache;
  events: EventRecorder;
  connector: MySQLConnector;
  secrets: SecretReader;
  clock: Clock;
  settings: ManagerSettings;
  /**
   * stateward_databaseuser_failures_total{namespace,name,reason}: failed
   * reconciles by the reason the Ready condition and the Event give (a fixed
   * word such as InstanceNotFound, never the message: it may quote the server).
   */
  failures: ObjectCounter<"reason">;
  /** Drops a deleted DatabaseUser's series. */
  forgetMetrics(namespace: string, name: string): void;
  /** The key of status.passwordFingerprint. */
  fingerprintKey: FingerprintKey;
  /** Keeps the instance and its Secrets while accounts to drop on delete need them. */
  inUse: InUseProtection;
}

/** A DatabaseUser being converged: the object as last written, and a password set on the server before a later step failed. */
interface Converging {
  user: DatabaseUser;
  applied?: { passwordSecretVersion: string | undefined; passwordFingerprint: string | undefined };
}

export class DatabaseUserReconciler implements Reconciler {
  private readonly d: DatabaseUserReconcilerDeps;
  private readonly driftCheckIntervalMs: number;
  private readonly deletingInstanceGraceMs: number;
  /** When each account (by DatabaseUser uid) was last compared with the server. In memory: after a restart the status is trusted until the first drift check. */
  private readonly verifiedAt = new Map<string, number>();

  constructor(deps: DatabaseUserReconcilerDeps, opts: DatabaseUserReconcilerOptions = {}) {
    this.d = deps;
    this.driftCheckIntervalMs = opts.driftCheckIntervalMs ?? 5 * 60_000;
    this.deletingInstanceGraceMs = opts.deletingInstanceGraceMs ?? DELETING_INSTANCE_GRACE_MS;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const cached = this.d.cache.get<DatabaseUser>(DBU, req.namespace, req.name);
    if (!cached) {
      this.d.forgetMetrics(req.namespace ?? "", req.name);
      return undefined;
    }
    if (isBeingDeleted(cached)) return this.finalize(cached, ctx);
    // A finalizer only where deleting must clean up outside Kubernetes. With Delete it is added by the
    // first write this reconcile makes to the object (see holdFinalizer): the claim right before CREATE USER,
    // before any change to an existing account, or the failure status — never in a request of its own.
    const user = dropsOnDelete(cached) ? cached : await removeFinalizer(this.d.client, DBU, cached, FINALIZER);

    // converge() replaces `current.user` when it writes the object midway (the finalizer, with the claim
    // right before CREATE USER), so that the writes after it carry its resourceVersion.
    const current: Converging = { user };
    try {
      return await this.converge(current, ctx);
    } catch (err) {
      if (isConflict(err)) throw err; // the object changed under us: retry with the new version
      const failure = toFailure(err, user.spec.instanceRef.name);
      this.d.failures.inc(user.metadata, 1, { reason: failure.reason });
      // Also a DatabaseUser that never got to its account holds the finalizer: deleting it then says what
      // became of the account (AccountNotDropped, AccountKept) instead of going without a word.
      current.user = await this.holdFinalizer(current.user);
      await writeStatus(this.d.client, DBU, current.user, readyStatus(current.applied ?? {}, { status: "False", reason: failure.reason, message: failure.message }));
      await this.d.events.record(current.user, "Warning", failure.reason, failure.message);
      // A terminal failure (an invalid spec, a protected account) waits for the next change of the DatabaseUser.
      throw failure;
    }
  }

  /**
   * A DatabaseUser next in the queue whose reconcile will read its password Secret (not converged,
   * not being deleted): that Secret's GET is started now, so the reconcile finds it fetched
   * (SecretReader.readAhead: the same one GET, earlier; docs/performance.md, finding 27).
   */
  readAhead(req: Request): void {
    const user = this.d.cache.get<DatabaseUser>(DBU, req.namespace, req.name);
    if (!user || isBeingDeleted(user)) return;
    const namespace = user.metadata.namespace ?? "";
    const instance = this.d.cache.get<MySQLInstance>(MYI, namespace, user.spec.instanceRef.name);
    const secret = user.spec.passwordSecretRef.name;
    if (!instance || this.converged(user, instance, this.d.secrets.version(namespace, secret))) return;
    this.d.secrets.readAhead(namespace, secret);
  }

  /** The fingerprint key; a failure to read or create its Secret is reported as such (it retries). */
  private async key(): Promise<Buffer> {
    try {
      return await this.d.fingerprintKey.get();
    } catch (err) {
      throw new Failure("FingerprintKeyUnavailable", `cannot read or create the password fingerprint key: ${messageOf(err)}`);
    }
  }

  private account(user: DatabaseUser): Account {
    return { user: mysqlUserName(user), host: user.spec.host ?? "%" };
  }

  private instanceNotFound(user: DatabaseUser): Failure {
    const { target, targetLabel } = this.d.settings;
    const scope = target ? ` (this manager only sees MySQLInstances labelled ${targetLabel}=${target})` : "";
    return new Failure("InstanceNotFound", `MySQLInstance ${user.spec.instanceRef.name} not found in namespace ${user.metadata.namespace ?? ""}${scope}`);
  }

  /** Whether the status says this very spec, Secret and instance were applied (and the finalizer, if any, is in place). */
  private converged(user: DatabaseUser, instance: MySQLInstance, secretVersion: string | undefined): boolean {
    const status = user.status;
    const ready = findCondition(status?.conditions, "Ready");
    return (
      ready?.status === "True" &&
      (hasFinalizer(user, FINALIZER) || !dropsOnDelete(user)) &&
      ready.observedGeneration === user.metadata.generation &&
      secretVersion !== undefined &&
      status?.passwordSecretVersion === secretVersion &&
      status.instanceUID === instance.metadata.uid &&
      status.instanceGeneration === instance.metadata.generation
    );
  }

  /** Milliseconds until the next drift check is due; 0 when it is due now. */
  private driftCheckIn(uid: string): number {
    const now = this.d.clock.now().getTime();
    const last = this.verifiedAt.get(uid);
    if (last === undefined) {
      this.verifiedAt.set(uid, now);
      return jitter(this.driftCheckIntervalMs);
    }
    return Math.max(0, last + this.driftCheckIntervalMs - now);
  }

  /**
   * The DatabaseUser that owns the account when several name it: the one managing it (its origin known: it
   * created or adopted the account), else the oldest. By age alone, an older object that comes into view
   * later — a target label added, one created in the same second but seen second — would take the account
   * from the one that created it, and leave it managed by neither.
   */
  private owner(user: DatabaseUser): DatabaseUser {
    const claims = this.d.cache
      .byIndex<DatabaseUser>(DBU, USER_BY_ACCOUNT, userAccount(user)[0] ?? "")
      .filter((u) => !isBeingDeleted(u) || u.metadata.uid === user.metadata.uid);
    const all = claims.some((u) => u.metadata.uid === user.metadata.uid) ? claims : [...claims, user];
    const order = (u: DatabaseUser) => `${knownOrigin(u) === undefined ? 1 : 0}\u0000${u.metadata.creationTimestamp ?? ""}\u0000${u.metadata.name ?? ""}`;
    return all.reduce((a, b) => (order(b) < order(a) ? b : a));
  }

  private async converge(current: Converging, ctx: ReconcileContext): Promise<Result> {
    const user = current.user;
    const namespace = user.metadata.namespace ?? "";
    const uid = user.metadata.uid ?? "";
    const account = this.account(user);
    const instance = this.d.cache.get<MySQLInstance>(MYI, namespace, user.spec.instanceRef.name);
    if (!instance) throw this.instanceNotFound(user);
    if (isBeingDeleted(instance) && protectable(instance)) {
      // Kept (in-use.ts) only until the accounts on record are dropped: none is created or changed now.
      throw new Failure(
        "InstanceBeingDeleted",
        `MySQLInstance ${instance.metadata.name ?? ""} is being deleted: no account is created or changed on it; it is kept until the DatabaseUsers that drop their accounts on delete are deleted`,
        true,
      );
    }
    const owner = this.owner(user);
    if (owner.metadata.uid !== user.metadata.uid) {
      throw new Failure(
        "AccountConflict",
        `account ${describeAccount(account)} on MySQLInstance ${instance.metadata.name ?? ""} is already managed by DatabaseUser ${owner.metadata.name ?? ""}`,
        true,
      );
    }
    const cluster = isClusterInstance(instance);
    // Refused by name before anything else (the admin user's name is known once connected, below).
    this.refuseProtected(account, undefined, cluster);
    const secretRef = user.spec.passwordSecretRef;
    if (this.converged(user, instance, this.d.secrets.version(namespace, secretRef.name))) {
      const wait = this.driftCheckIn(uid);
      if (wait > 0) return { requeueAfter: wait };
      ctx.log.debug("drift check");
    }

    quoteAccount(account.user, account.host); // refuses, as terminal, a name the schema let through but MySQL cannot hold
    // The Secret and the account are read at the same time: neither needs the other, and a new
    // account's reconcile is otherwise a chain of seven round trips (GET Secret, SELECT, PATCH,
    // CREATE USER, GRANT, SHOW GRANTS, PUT status), each waited for in turn (docs/performance.md,
    // findings 19 and 24). Both are reads: nothing on the server changes before the
    // Secret is known. A failed Secret is still the failure reported, whatever the server says.
    // The Secret's GET has usually been started while this DatabaseUser waited in the queue
    // (readAhead, finding 27), leaving the account's read as the first round trip.
    const onServer = this.readServer(instance, account, cluster);
    onServer.catch(() => undefined); // awaited below unless the Secret fails first
    const secret = await this.d.secrets.read(namespace, secretRef.name);
    if (!secret) throw new MissingSecretError("SecretNotFound", `Secret ${secretRef.name} not found in namespace ${namespace}`);
    const password = secretValue(secret, secretRef.key ?? "password");
    if (password === "") throw new Failure("SecretKeyEmpty", `Secret ${secretRef.name} has an empty ${secretRef.key ?? "password"}: set a password`);
    const secretVersion = secret.metadata.resourceVersion;

    const { conn, state } = await onServer;
    const problems = specProblems(user.spec, conn.server);
    if (problems.length > 0) throw new Failure("InvalidSpec", problems.join("; "), true);
    // Before the account is created or changed: deleting the namespace must leave something to drop it with.
    if (dropsOnDelete(user)) await this.d.inUse.protect(instance);

    const changed: string[] = [];
    const sameInstance = user.status?.instanceUID === instance.metadata.uid && user.status?.instanceGeneration === instance.metadata.generation;
    let fingerprint = sameInstance ? user.status?.passwordFingerprint : undefined;
    const limits = { tls: user.spec.tlsRequirement ?? "None", maxUserConnections: user.spec.maxUserConnections ?? 0 };

    let origin = knownOrigin(user);
    if (!state) {
      const key = await this.key(); // before CREATE USER: an account is never left without its fingerprint
      // The claim: CREATE USER is recorded on the object before it runs, so that if the operator stops
      // between CREATE USER and the status write below, the next reconcile still knows the account is
      // its own (to manage, and to drop on delete) — where a record written after it could be lost and
      // leave the operator's own account looking like someone else's (AccountExists, never dropped).
      //
      // It is the annotation ACCOUNT_CREATED_BY, in the same request that adds the finalizer (the first
      // write to a new object: no request of its own, 3 writes per new account as controller-runtime's).
      // Where and when it is written is what keeps "never take what isn't yours": exactly where an
      // earlier release wrote status.accountOrigin: Created, after the read above found no account, in
      // this reconcile, right before CREATE USER. Written earlier (with the finalizer at the start of
      // the reconcile, before the account was looked at) it would outlive a reconcile failing before
      // CREATE USER (Secret missing, instance down) and claim an account created by someone else while
      // it waits. Crash windows:
      // - claim written, CREATE USER not run: the next reconcile finds no account and creates it, or
      //   finds one made meanwhile by someone else and takes it as its own — the same window as
      //   status.accountOrigin: Created before, nothing wider;
      // - claim written, CREATE USER run, status not: the next reconcile finds the account and the
      //   claim (knownOrigin: Created): it manages it, the status then records Created;
      // - claim not written (conflict, API down): nothing was created;
      // - claim written, CREATE USER refused by the server (a missing privilege, a rejected password, an
      //   account of that name made since the read above): nothing was created, and the claim is withdrawn
      //   before the failure is reported. Left in place it would make an account someone creates by hand
      //   while this DatabaseUser keeps failing look like its own: taken over, and dropped on delete.
      //   A connection lost mid-statement keeps it (CREATE USER may have run: the window above).
      // An object whose origin is already known (the account was dropped by hand) needs no new claim.
      const claiming = origin === undefined;
      if (claiming) current.user = await this.claimCreation(current.user);
      else current.user = await this.holdFinalizer(current.user);
      origin = "Created";
      try {
        await createAccount(conn, account, password, limits);
      } catch (err) {
        if (claiming && err instanceof MySQLError && err.refusedByServer) current.user = await this.withdrawClaim(current.user, ctx);
        throw err;
      }
      fingerprint = passwordFingerprint(password, uid, key);
      changed.push("created the account");
      ctx.log.info("account created", { account: describeAccount(account) });
    } else {
      // The account exists and only the creation claim says it is ours (no status records it): the claim is
      // confirmed against the API server first. The cached object can be behind this object's last write — a
      // claim withdrawn after a refused CREATE USER (above) while someone made the account by hand — and
      // would then have the account taken over. Rare (the crash window above), so the GET costs nothing.
      if (origin === "Created" && user.status?.accountOrigin === undefined && !(await this.isCurrent(user))) {
        return { requeueAfter: CACHE_CATCH_UP_MS };
      }
      if (origin === undefined) {
        // An account this DatabaseUser did not create: taken over only when asked to.
        if (user.spec.adoptExisting !== true) throw await this.accountExists(conn, account, instance);
        origin = "Adopted";
        changed.push("adopted the existing account");
        ctx.log.info("adopting an existing account", { account: describeAccount(account) });
      }
      current.user = await this.holdFinalizer(current.user); // before the account is changed: it is dropped on delete
      // Whether the fingerprint on record is this password's. Always looked at when it is an HMAC under
      // the current key (microseconds): the Secret's version alone misses a password named another way
      // while the Secret stays (spec.passwordSecretRef.key edited). Otherwise only when the Secret moved
      // since the password was last applied: an older release's scrypt fingerprint (~33 ms each) or one
      // under a lost key is kept as it is while the Secret stays, and checked once when it moves.
      // While the Secret stays, a key that cannot be read is no failure: the fingerprint is then trusted.
      const secretMoved = fingerprint === undefined || secretVersion !== user.status?.passwordSecretVersion;
      const key = secretMoved ? await this.key() : await this.d.fingerprintKey.get().catch(() => undefined);
      // mysql_native_password hashes are unsalted: the server's own hash says whether the password is right,
      // which also catches a password changed by hand. Other plugins: the fingerprint of what was last set.
      const native = state.plugin === "mysql_native_password" && state.authenticationString !== "";
      const checkable = fingerprint !== undefined && key !== undefined && (secretMoved || madeWithKey(fingerprint, key)) ? { fingerprint, key } : undefined;
      const stale = native
        ? state.authenticationString !== nativePasswordHash(password)
        : checkable ? !(await fingerprintMatches(checkable.fingerprint, password, uid, checkable.key)) : secretMoved;
      // Without the key the Secret has not moved, so a fingerprint is on record: it is kept.
      const fresh = key === undefined || (fingerprint !== undefined && !secretMoved && !stale) ? fingerprint : passwordFingerprint(password, uid, key);
      if (stale) {
        await setPassword(conn, account, password);
        // On record even if a later step fails: the status then says what the server holds, and a Secret
        // set back to the password before is seen as a change (not as the fingerprint's old password).
        current.applied = { passwordSecretVersion: secretVersion, passwordFingerprint: fresh };
        changed.push("set the password");
        ctx.log.info("password set", { account: describeAccount(account) });
      }
      fingerprint = fresh;
      if (state.sslType !== sslTypeFor(limits.tls) || state.maxUserConnections !== limits.maxUserConnections) {
        await setLimits(conn, account, limits);
        changed.push(`set REQUIRE ${limits.tls} and MAX_USER_CONNECTIONS ${limits.maxUserConnections}`);
        ctx.log.info("limits set", { account: describeAccount(account), tlsRequirement: limits.tls, maxUserConnections: limits.maxUserConnections });
      }
    }

    const grantCount = await this.convergeGrants(conn, user, account, changed, ctx, !state);

    const updated = await writeStatus(
      this.d.client,
      DBU,
      current.user,
      readyStatus({
        user: account.user,
        host: account.host,
        passwordSecretVersion: secretVersion,
        passwordFingerprint: fingerprint,
        instanceUID: instance.metadata.uid,
        instanceGeneration: instance.metadata.generation,
        accountOrigin: origin,
      },
      {
        status: "True",
        reason: "AccountReady",
        message: `Account ${describeAccount(account)} on MySQLInstance ${instance.metadata.name ?? ""} (${conn.server.flavor} ${conn.server.version}) has ${grantCount} grant${grantCount === 1 ? "" : "s"}`,
      }),
    );
    // In the background: Ready is already written, and the next user need not wait for this Event.
    if (changed.length > 0) this.d.events.emit(updated, "Normal", "AccountUpdated", capitalize(`${changed.join("; ")}`));
    this.verifiedAt.set(uid, this.d.clock.now().getTime());
    return { requeueAfter: jitter(this.driftCheckIntervalMs) };
  }

  /** Connects to the instance, refuses a protected account (its admin user is known now), reads the account. */
  private async readServer(instance: MySQLInstance, account: Account, cluster: boolean): Promise<{ conn: InstanceConnection; state: AccountState | undefined }> {
    const conn = await this.d.connector.connect(instance);
    this.refuseProtected(account, conn.username, cluster);
    return { conn, state: await readAccount(conn, account) };
  }

  /** Refuses, as terminal, an account no DatabaseUser may manage. */
  private refuseProtected(account: Account, adminUser: string | undefined, cluster: boolean): void {
    const why = protectedAccount(account, { adminUser, cluster });
    if (why !== undefined) {
      throw new Failure("ProtectedAccount", `${why}: a DatabaseUser never manages it, nothing was changed; choose another user name (spec.user)`, true);
    }
  }

  /** The failure for an existing account this DatabaseUser may not take over. Retried with backoff: dropping the account by hand also resolves it. */
  private async accountExists(conn: InstanceConnection, account: Account, instance: MySQLInstance): Promise<Failure> {
    const admin = adminPrivileges(await showGrants(conn, account));
    const note = admin.length > 0 ? ` It holds administrative privileges (${admin.join(", ")} on *.*): taking it over would reset the password of an administrator.` : "";
    return new Failure(
      "AccountExists",
      `account ${describeAccount(account)} already exists on MySQLInstance ${instance.metadata.name ?? ""} and was not created by this DatabaseUser: nothing was changed.${note} ` +
        "Set spec.adoptExisting: true to take it over (its password is set from the Secret, grants not listed are revoked, deleting the DatabaseUser drops it), or choose another user name",
    );
  }

  /** The finalizer added (one write) when deleting drops the account and it is missing; the object as it now is. */
  private async holdFinalizer(user: DatabaseUser): Promise<DatabaseUser> {
    return dropsOnDelete(user) ? addFinalizer(this.d.client, DBU, user, FINALIZER) : user;
  }

  /** Records the intent to create the account (see the caller), with the finalizer when deleting drops it: one write. */
  private async claimCreation(user: DatabaseUser): Promise<DatabaseUser> {
    const claim = creationClaim(user);
    if (dropsOnDelete(user)) return addFinalizer(this.d.client, DBU, user, FINALIZER, claim);
    return this.d.client.patch<DatabaseUser>(DBU, user.metadata.namespace, user.metadata.name ?? "", {
      metadata: { annotations: claim, resourceVersion: user.metadata.resourceVersion },
    });
  }

  /** Whether the API server still holds `user` as cached (same resourceVersion). */
  private async isCurrent(user: DatabaseUser): Promise<boolean> {
    const live = await this.d.client.get<DatabaseUser>(DBU, user.metadata.namespace, user.metadata.name ?? "");
    return live.metadata.resourceVersion === user.metadata.resourceVersion;
  }

  /**
   * Removes the creation claim of a CREATE USER the server refused (see the caller); the object as it now
   * is. A failed removal is logged and leaves the claim (the next reconcile creates the account or fails
   * again): the failure reported stays the server's, which says what to fix.
   */
  private async withdrawClaim(user: DatabaseUser, ctx: ReconcileContext): Promise<DatabaseUser> {
    try {
      return await this.d.client.patch<DatabaseUser>(DBU, user.metadata.namespace, user.metadata.name ?? "", {
        metadata: { annotations: { [ACCOUNT_CREATED_BY]: null }, resourceVersion: user.metadata.resourceVersion },
      });
    } catch (err) {
      ctx.log.warn("cannot withdraw the creation claim of a refused CREATE USER", { err: messageOf(err) });
      return user;
    }
  }

  /**
   * Grants first, then revokes; repeated while SHOW GRANTS still differs. Returns the number of levels granted.
   * `created`: the account was created by this reconcile. What it holds is then known without asking (USAGE
   * alone: DROP USER took every grant of an earlier account of the name), so the first pass grants without a
   * SHOW GRANTS, and the one after the grants checks the result as always (it would find, and revoke, grants
   * left in the grant tables by hand for a name with no account) — a round trip less on a new
   * account's path (docs/performance.md, finding 24). With nothing to grant, SHOW GRANTS checks it all the same.
   */
  private async convergeGrants(conn: InstanceConnection, user: DatabaseUser, account: Account, changed: string[], ctx: ReconcileContext, created: boolean): Promise<number> {
    const desired = desiredGrants(user.spec.grants ?? [], conn.server);
    const quoted = quoteAccount(account.user, account.host);
    for (let pass = 1; ; pass++) {
      const known = pass === 1 && created && desired.size > 0;
      const actual = known ? actualGrants([], conn.server) : actualGrants(await showGrants(conn, account), conn.server);
      const diff = diffGrants(desired, actual, conn.server);
      if (isEmptyDiff(diff)) return desired.size;
      if (pass > MAX_GRANT_PASSES) {
        const left = [...diff.grants, ...diff.revokes].map(describeChange).join("; ");
        throw new Failure("GrantsNotConverged", `SHOW GRANTS still differs from spec.grants after ${MAX_GRANT_PASSES} passes: ${left}`);
      }
      for (const change of [...diff.grants, ...diff.revokes]) {
        for (const sql of changeStatements(change, quoted)) await runStatement(conn, sql);
        const what = describeChange(change);
        changed.push(what);
        ctx.log.info(change.action === "GRANT" ? "granted" : "revoked", { account: describeAccount(account), change: what });
      }
    }
  }

  /** Deletion: drop the account (unless Retain), then release the finalizer. */
  private async finalize(user: DatabaseUser, ctx: ReconcileContext): Promise<Result | undefined> {
    if (!hasFinalizer(user, FINALIZER)) return undefined;
    const namespace = user.metadata.namespace ?? "";
    const account = this.account(user);
    const release = async (type: "Normal" | "Warning", reason: string, note: string) => {
      this.verifiedAt.delete(user.metadata.uid ?? "");
      await this.d.events.record(user, type, reason, note);
      await removeFinalizer(this.d.client, DBU, user, FINALIZER);
      ctx.log.info("finalized", { account: describeAccount(account), outcome: reason });
    };
    if ((user.spec.deletionPolicy ?? "Delete") === "Retain") {
      await release("Normal", "AccountRetained", `deletionPolicy is Retain: account ${describeAccount(account)} was left in place`);
      return;
    }
    const others = this.d.cache
      .byIndex<DatabaseUser>(DBU, USER_BY_ACCOUNT, userAccount(user)[0] ?? "")
      .filter((u) => u.metadata.uid !== user.metadata.uid && !isBeingDeleted(u));
    if (others.length > 0) {
      await release("Normal", "AccountKept", `account ${describeAccount(account)} is still declared by DatabaseUser ${others[0]?.metadata.name ?? ""}: not dropped`);
      return;
    }
    const instanceName = user.spec.instanceRef.name;
    let instance = this.d.cache.get<MySQLInstance>(MYI, namespace, instanceName);
    if (!instance) {
      // The cache may be behind, or filtered by target: ask the API server before giving up on the account.
      try {
        instance = await this.d.client.get<MySQLInstance>(MYI, namespace, instanceName);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        await release("Warning", "InstanceGone", `MySQLInstance ${instanceName} no longer exists: account ${describeAccount(account)} was not dropped (nothing left to connect to)`);
        return;
      }
    }
    if (knownOrigin(user) === undefined) {
      await release("Normal", "AccountNotDropped", `account ${describeAccount(account)} was neither created nor adopted by this DatabaseUser: not dropped`);
      return;
    }
    let guarded: string | undefined;
    try {
      const conn = await this.d.connector.connect(instance);
      // An account managed before protection existed (an earlier release) is still never dropped.
      guarded = protectedAccount(account, { adminUser: conn.username, cluster: isClusterInstance(instance) });
      if (guarded === undefined) await dropAccount(conn, account);
    } catch (err) {
      if (isConflict(err)) throw err;
      const failure = toFailure(err, instanceName);
      // The instance is being deleted too (its namespace, say) and cannot be logged in to: its admin Secret gone
      // (deleted before it was protected, or its protection removed by hand), or its server (pods deleted with
      // the namespace). Waited for deletingInstanceGraceMs at most: retrying for ever would keep the instance,
      // and the namespace, from being deleted.
      const waited = isBeingDeleted(instance) ? this.d.clock.now().getTime() - Date.parse(instance.metadata.deletionTimestamp ?? "") : undefined;
      if (waited !== undefined && (err instanceof MissingSecretError || waited >= this.deletingInstanceGraceMs)) {
        await release("Warning", "InstanceGone", `MySQLInstance ${instanceName} is being deleted and ${failure.message}: account ${describeAccount(account)} was not dropped`);
        return undefined;
      }
      this.d.failures.inc(user.metadata, 1, { reason: failure.reason });
      const message = `cannot drop account ${describeAccount(account)} yet, retrying (set deletionPolicy: Retain to delete without dropping it): ${failure.message}`;
      await writeStatus(this.d.client, DBU, user, readyStatus({}, { status: "False", reason: failure.reason, message }));
      await this.d.events.record(user, "Warning", failure.reason, message);
      if (waited !== undefined) return { requeueAfter: Math.min(DELETING_INSTANCE_RETRY_MS, this.deletingInstanceGraceMs - waited) };
      // Never terminal: the finalizer stays until the account is gone or the user says Retain.
      throw new Failure(failure.reason, message);
    }
    if (guarded !== undefined) {
      await release("Warning", "ProtectedAccount", `${guarded}: account ${describeAccount(account)} was not dropped`);
      return;
    }
    await release("Normal", "AccountDropped", `dropped account ${describeAccount(account)}`);
    return undefined;
  }
}

function dropsOnDelete(user: DatabaseUser): boolean {
  return (user.spec.deletionPolicy ?? "Delete") === "Delete";
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
