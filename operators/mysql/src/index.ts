// Public surface of @stateward/mysql: what the MySQL operators share — the
// MySQLInstance kind, the per-instance connection pools, identifier quoting,
// flavor detection, the MySQLInstance controller every MySQL operator runs.
export { CLUSTER_REPLICATION_USER, SYSTEM_USERS } from "./accounts.ts";
export { directAddresses, replicationSource, type ServerAddress, type ServerAddressResolver } from "./addresses.ts";
export { driverDefaults, ownConnectionSsl, poolOptions, sslOptions, type ConnectionSettings, type PoolTuning } from "./connection-options.ts";
export { InstanceConnection, MySQLConnector, type ConnectError, type ConnectorOptions, type SqlValue, type StatementObservation } from "./connector.ts";
export { MySQLError, classifyMySQLError, isDriverError, redact, toMySQLError, type MySQLFailure } from "./errors.ts";
export { FLAVORS, atLeast, detectServer, flavorOf, type Flavor, type ServerInfo } from "./flavor.ts";
export {
  InvalidIdentifierError,
  MAX_HOST_LENGTH,
  MAX_IDENTIFIER_LENGTH,
  MAX_USER_LENGTH,
  checkPrivilegeKeyword,
  databaseInGrant,
  databasePattern,
  grantLevelSql,
  quoteAccount,
  quoteIdentifier,
} from "./identifiers.ts";
export {
  MySQLInstanceKind,
  OBJECT_NAME_PATTERN,
  SECRET_KEY_PATTERN,
  TLS_MODES,
  instanceSecrets,
  objectNameField,
  secretKeyField,
  type MySQLInstance,
  type MySQLInstanceSpec,
  type TlsMode,
} from "./instance-api.ts";
export { Failure, toFailure } from "./failures.ts";
export { INSTANCE_BY_SECRET, bindInstanceController, instanceControllerCache, type InstanceControllerOptions } from "./instance-controller.ts";
export { MySQLInstanceReconciler, jitter, type MySQLInstanceReconcilerOptions } from "./instance-reconciler.ts";
export { MissingSecretError, SecretReader, secretValue, type Secret } from "./secrets.ts";
export { SnapshotLockTimeoutError, readGtidPosition, takeConsistentSnapshot, type Snapshot, type SnapshotOptions, type SnapshotSession } from "./snapshot.ts";
export { SYSTEM_DATABASES, notSystemDatabase } from "./system-databases.ts";
export { MySQLTokens, bindMySQLServices, mysqlControllerDeps } from "./services.ts";
export { viewPlaceholder } from "./schema-objects.ts";
export { dumpedColumns, insertPrefix, rowExpression, valueEncoding, valueExpression, type ColumnInfo, type ValueEncoding } from "./row-format.ts";
