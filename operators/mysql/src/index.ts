// Public surface of @stateward/mysql: what the MySQL operators share — the
// MySQLInstance kind, the per-instance connection pools, identifier quoting,
// flavor detection, the privilege catalogue and the SHOW GRANTS parser.
export { CLUSTER_REPLICATION_USER, SYSTEM_USERS } from "./accounts.ts";
export { directAddresses, replicationSource, type ServerAddress, type ServerAddressResolver } from "./addresses.ts";
export { poolOptions, sslOptions, type ConnectionSettings, type PoolTuning } from "./connection-options.ts";
export { InstanceConnection, MySQLConnector, type ConnectError, type ConnectorOptions, type SqlValue, type StatementObservation } from "./connector.ts";
export { MySQLError, isDriverError, redact, toMySQLError, type MySQLFailure } from "./errors.ts";
export { FLAVORS, atLeast, detectServer, type Flavor, type ServerInfo } from "./flavor.ts";
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
  objectNameField,
  secretKeyField,
  type MySQLInstance,
  type MySQLInstanceSpec,
  type TlsMode,
} from "./instance-api.ts";
export {
  ALL_PRIVILEGES,
  GLOBAL_ONLY_PRIVILEGES,
  NOT_TABLE_PRIVILEGES,
  PRIVILEGE_NAMES,
  allPrivilegesAt,
  canonicalPrivilege,
  grantLevel,
  isKnownPrivilege,
  privilegeFlavors,
  privilegeLevels,
  type GrantLevel,
  type PrivilegeName,
} from "./privileges.ts";
export { MissingSecretError, SecretReader, secretValue, type Secret } from "./secrets.ts";
export { MySQLTokens, bindMySQLServices, instanceCache } from "./services.ts";
export { ShowGrantsParseError, parseGrantLine, parseShowGrants, type ObjectGrant, type OtherGrant, type ParsedGrant } from "./show-grants.ts";
export { viewPlaceholder } from "./schema-objects.ts";
export { dumpedColumns, insertPrefix, rowExpression, valueEncoding, valueExpression, type ColumnInfo, type ValueEncoding } from "./row-format.ts";
