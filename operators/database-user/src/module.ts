// The database-user operator as an OperatorModule: the MySQLInstance and
// DatabaseUser kinds, the shared MySQL services and MySQLInstance controller,
// and the DatabaseUser controller.
import {
  Tokens,
  builtin,
  cacheKind,
  generationChanged,
  labelsOrAnnotationsChangedExcept,
  or,
  bindResolved,
  type InformerEvent,
  type Resolved,
  type Metrics,
  type OperatorModule,
} from "@stateward/core";
import {
  MySQLInstanceKind,
  bindInstanceController,
  bindMySQLServices,
  instanceControllerCache,
  mysqlControllerDeps,
  type ConnectorOptions,
} from "@stateward/mysql";
import { ContainerModule } from "inversify";
import { DatabaseUserKind, type DatabaseUser } from "./api.ts";
import {
  USER_BY_ACCOUNT,
  USER_BY_INSTANCE,
  USER_BY_SECRET,
  objectIndexKey,
  toRequest,
  userAccount,
  userInstance,
  userSecret,
} from "./indexes.ts";
import { FINGERPRINT_KEY_SECRET, FingerprintKey, fingerprintKeyNamespace } from "./fingerprint-key.ts";
import { ACCOUNT_CREATED_BY } from "./ownership.ts";
import { InUseProtection, InUseReconciler, changedBeyondInUse } from "./in-use.ts";
import { DatabaseUserReconciler, FINALIZER, type DatabaseUserReconcilerDeps } from "./user-reconciler.ts";

export interface DatabaseUserOperatorOptions {
  /** How often a converged account is compared with the server again (reads only). Defaults to 5 min. */
  driftCheckIntervalMs?: number;
  /**
   * How long a deleted DatabaseUser keeps trying to drop its account on an instance being deleted too that
   * cannot be reached or logged in to (a namespace deleted with its MySQL server in it), before it is
   * released with the account not dropped (InstanceGone). Defaults to 60 s.
   */
  deletingInstanceGraceMs?: number;
  /**
   * How often a MySQLInstance is checked again once reachable. Defaults to 60 s.
   * Applies when this is the first MySQL operator bound in the manager (the instance controller is shared).
   */
  instanceCheckIntervalMs?: number;
  /** DatabaseUsers reconciled at once. Defaults to 4, the connector's pool size per instance. */
  maxConcurrentReconciles?: number;
  /** Connection pool settings; they apply when this is the first MySQL operator bound in the manager. */
  connector?: ConnectorOptions;
  /**
   * The Secret holding the key of status.passwordFingerprint (created when missing). Defaults to
   * `stateward-fingerprint-key` in the manager's namespace (POD_NAMESPACE, else the service account's,
   * else the first watched namespace, else "default").
   */
  fingerprintKeySecret?: { namespace?: string; name?: string };
}

const MYI = MySQLInstanceKind.resource;
const DBU = DatabaseUserKind.resource;

/** The database-user operator with non-default options (tests shorten the intervals). */
export function createDatabaseUserOperator(options: DatabaseUserOperatorOptions = {}): OperatorModule {
  return {
    name: "database-user",
    kinds: [MySQLInstanceKind, DatabaseUserKind],
    cache: [
      // MySQLInstances for the manager's target and Secrets as metadata only, as the shared MySQLInstance controller reads them.
      ...instanceControllerCache,
      cacheKind<DatabaseUser>(DBU, { target: true, indexers: { [USER_BY_INSTANCE]: userInstance, [USER_BY_SECRET]: userSecret, [USER_BY_ACCOUNT]: userAccount } }),
    ],
    container: new ContainerModule((container) => {
      bindMySQLServices(container, options.connector);
      const { bind } = container;

      bindInstanceController(container, { checkIntervalMs: options.instanceCheckIntervalMs });
      const deps = { ...mysqlControllerDeps, settings: Tokens.ManagerSettings, clock: Tokens.Clock, metrics: Tokens.Metrics };
      // One per manager, shared by the DatabaseUser reconciler (which protects) and the release below.
      let inUse: InUseProtection | undefined;
      const inUseOf = (d: Pick<Resolved<typeof deps>, "client" | "cache" | "secrets" | "clock">) =>
        (inUse ??= new InUseProtection(d.client, d.cache, d.secrets, d.clock));
      bindResolved(bind, Tokens.ControllerSetup, deps, ({ client, cache, events, connector, secrets, settings, clock, metrics }) => ({
        setup: (builder) => {
          const byIndex = (index: string) => (obj: Parameters<typeof objectIndexKey>[0]) =>
            cache.byIndex<DatabaseUser>(DBU, index, objectIndexKey(obj)).map(toRequest);
          const keySecret = options.fingerprintKeySecret;
          const fingerprintKey = new FingerprintKey(
            client,
            keySecret?.namespace ?? fingerprintKeyNamespace(settings.namespaces),
            keySecret?.name ?? FINGERPRINT_KEY_SECRET,
          );
          const reconciler = new DatabaseUserReconciler(
            {
              client,
              cache,
              events: events("databaseuser"),
              connector,
              secrets,
              clock,
              settings,
              fingerprintKey,
              inUse: inUseOf({ client, cache, secrets, clock }),
              ...userMetrics(metrics),
            },
            { driftCheckIntervalMs: options.driftCheckIntervalMs, deletingInstanceGraceMs: options.deletingInstanceGraceMs },
          );
          // When the DatabaseUser that owns an account goes away, another one naming the account takes over.
          const otherClaimants = (user: DatabaseUser) =>
            cache
              .byIndex<DatabaseUser>(DBU, USER_BY_ACCOUNT, userAccount(user)[0] ?? "")
              .filter((u) => u.metadata.uid !== user.metadata.uid)
              .map(toRequest);
          const leaving = (e: InformerEvent<DatabaseUser>) =>
            e.type === "delete" || (e.type === "update" && e.obj.metadata.deletionTimestamp !== undefined && e.old.metadata.deletionTimestamp === undefined);
          builder
            .named("databaseuser")
            // Spec, deletion, labels and annotations; not our own writes: the status, and the creation
            // claim written with the finalizer just before CREATE USER (it woke every new user a second time).
            .for(DBU, [or(generationChanged, labelsOrAnnotationsChangedExcept([ACCOUNT_CREATED_BY]))])
            .watches(DBU, otherClaimants, [leaving])
            .watches(MYI, byIndex(USER_BY_INSTANCE), [changedBeyondInUse])
            .watches(builtin.secret, byIndex(USER_BY_SECRET))
            .withOptions({ maxConcurrentReconciles: options.maxConcurrentReconciles ?? 4 })
            .complete(reconciler);
        },
      }));
      // Releases the in-use protection of MySQLInstances and their Secrets (in-use.ts).
      bindResolved(bind, Tokens.ControllerSetup, deps, ({ client, cache, secrets, clock, settings }) => ({
        setup: (builder) => {
          const instanceOf = (user: DatabaseUser) => [{ namespace: user.metadata.namespace, name: user.spec.instanceRef.name }];
          const dropsAccount = (u: DatabaseUser) => u.metadata.finalizers?.includes(FINALIZER) ?? false;
          const target = settings.target ? `${settings.targetLabel}=${settings.target}` : undefined;
          builder
            .named("mysqlinstance-in-use")
            .for(MYI)
            // A DatabaseUser gone, or no longer dropping its account: it may have been what kept the instance.
            .watches(DBU, instanceOf, [(e: InformerEvent<DatabaseUser>) => e.type === "delete" || (e.type === "update" && dropsAccount(e.old) && !dropsAccount(e.obj))])
            .complete(new InUseReconciler(client, cache, secrets, inUseOf({ client, cache, secrets, clock }), target));
        },
      }));
    }),
  };
}

/** The database-user operator with its defaults, as `stateward run --operators database-user` loads it. */
export const databaseUserOperator: OperatorModule = createDatabaseUserOperator();

/** The DatabaseUser's per-object metrics (README "Monitoring"). */
function userMetrics(metrics: Metrics): Pick<DatabaseUserReconcilerDeps, "failures" | "forgetMetrics"> {
  const kind = metrics.objects("databaseuser");
  return {
    failures: kind.counter("failures_total", "Failed DatabaseUser reconciles, by the reason the Ready condition gives.", ["reason"]),
    forgetMetrics: (namespace, name) => kind.forget({ namespace, name }),
  };
}
