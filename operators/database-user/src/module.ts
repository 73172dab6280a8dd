// The database-user operator as an OperatorModule: the MySQLInstance and
// DatabaseUser kinds, the shared MySQL services, and two controllers.
import {
  Tokens,
  builtin,
  generationChanged,
  labelsOrAnnotationsChanged,
  cacheKind,
  or,
  type Cache,
  type Clock,
  type ControllerSetup,
  type EventRecorder,
  type InformerEvent,
  type KubeClient,
  type ManagerSettings,
  type OperatorModule,
} from "@stateward/core";
import {
  MySQLInstanceKind,
  MySQLTokens,
  bindMySQLServices,
  type ConnectorOptions,
  type MySQLConnector,
  type MySQLInstance,
  type SecretReader,
} from "@stateward/mysql";
import { ContainerModule } from "inversify";
import { DatabaseUserKind, type DatabaseUser } from "./api.ts";
import {
  INSTANCE_BY_SECRET,
  USER_BY_ACCOUNT,
  USER_BY_INSTANCE,
  USER_BY_SECRET,
  instanceSecrets,
  objectIndexKey,
  toRequest,
  userAccount,
  userInstance,
  userSecret,
} from "./indexes.ts";
import { MySQLInstanceReconciler } from "./instance-reconciler.ts";
import { DatabaseUserReconciler } from "./user-reconciler.ts";

export interface DatabaseUserOperatorOptions {
  /** How often a converged account is compared with the server again (reads only). Defaults to 5 min. */
  driftCheckIntervalMs?: number;
  /** How often a MySQLInstance is checked again once reachable. Defaults to 60 s. */
  instanceCheckIntervalMs?: number;
  /** DatabaseUsers reconciled at once. Defaults to 4, the connector's pool size per instance. */
  maxConcurrentReconciles?: number;
  /** Connection pool settings; they apply when this is the first MySQL operator bound in the manager. */
  connector?: ConnectorOptions;
}

const MYI = MySQLInstanceKind.resource;
const DBU = DatabaseUserKind.resource;

/** The database-user operator with non-default options (tests shorten the intervals). */
export function createDatabaseUserOperator(options: DatabaseUserOperatorOptions = {}): OperatorModule {
  return {
    name: "database-user",
    kinds: [MySQLInstanceKind, DatabaseUserKind],
    cache: [
      // For the manager's target, as every MySQL operator caches them (instanceCache), and found by the Secrets they name.
      cacheKind<MySQLInstance>(MYI, { target: true, indexers: { [INSTANCE_BY_SECRET]: instanceSecrets } }),
      cacheKind<DatabaseUser>(DBU, { target: true, indexers: { [USER_BY_INSTANCE]: userInstance, [USER_BY_SECRET]: userSecret, [USER_BY_ACCOUNT]: userAccount } }),
      // Metadata only: a change bumps the resourceVersion; SecretReader GETs the one it needs.
      cacheKind(builtin.secret, { metadataOnly: true }),
    ],
    container: new ContainerModule((container) => {
      bindMySQLServices(container, options.connector);
      const { bind } = container;

      bind<ControllerSetup>(Tokens.ControllerSetup).toResolvedValue(
        (client: KubeClient, cache: Cache, events: (name: string) => EventRecorder, connector: MySQLConnector) => ({
          setup: (builder) => {
            builder
              .named("mysqlinstance")
              .for(MYI, [generationChanged])
              .watches(builtin.secret, (secret) => cache.byIndex<MySQLInstance>(MYI, INSTANCE_BY_SECRET, objectIndexKey(secret)).map(toRequest))
              // A server that does not answer is tried again at least as often as a healthy one is
              // checked: its status follows the server (a cluster's primary coming up, a restart),
              // not a backoff grown to many minutes.
              .withOptions({ maxRetryDelayMs: options.instanceCheckIntervalMs ?? 60_000 })
              .complete(new MySQLInstanceReconciler(client, cache, events("mysqlinstance"), connector, { checkIntervalMs: options.instanceCheckIntervalMs }));
          },
        }),
        [Tokens.KubeClient, Tokens.Cache, Tokens.EventRecorderFactory, MySQLTokens.Connector],
      );

      bind<ControllerSetup>(Tokens.ControllerSetup).toResolvedValue(
        (
          client: KubeClient,
          cache: Cache,
          events: (name: string) => EventRecorder,
          connector: MySQLConnector,
          secrets: SecretReader,
          settings: ManagerSettings,
          clock: Clock,
        ) => ({
          setup: (builder) => {
            const byIndex = (index: string) => (obj: Parameters<typeof objectIndexKey>[0]) =>
              cache.byIndex<DatabaseUser>(DBU, index, objectIndexKey(obj)).map(toRequest);
            const reconciler = new DatabaseUserReconciler(
              { client, cache, events: events("databaseuser"), connector, secrets, clock, settings },
              { driftCheckIntervalMs: options.driftCheckIntervalMs },
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
              // Spec, deletion, labels and annotations; not our own status writes.
              .for(DBU, [or(generationChanged, labelsOrAnnotationsChanged)])
              .watches(DBU, otherClaimants, [leaving])
              .watches(MYI, byIndex(USER_BY_INSTANCE))
              .watches(builtin.secret, byIndex(USER_BY_SECRET))
              .withOptions({ maxConcurrentReconciles: options.maxConcurrentReconciles ?? 4 })
              .complete(reconciler);
          },
        }),
        [
          Tokens.KubeClient,
          Tokens.Cache,
          Tokens.EventRecorderFactory,
          MySQLTokens.Connector,
          MySQLTokens.SecretReader,
          Tokens.ManagerSettings,
          Tokens.Clock,
        ],
      );
    }),
  };
}

/** The database-user operator with its defaults, as `stateward run --operators database-user` loads it. */
export const databaseUserOperator: OperatorModule = createDatabaseUserOperator();
