// Public surface of @stateward/operator-database-user.
export { DatabaseUserKind, type DatabaseUser, type DatabaseUserSpec, type Grant } from "./api.ts";
export { FINALIZER } from "./user-reconciler.ts";
export { createDatabaseUserOperator, databaseUserOperator, type DatabaseUserOperatorOptions } from "./module.ts";
