// Public surface of @stateward/operator-database-user.
export { DatabaseUserKind, type DatabaseUser, type DatabaseUserSpec, type Grant } from "./api.ts";
export { FINALIZER } from "./user-reconciler.ts";
export { ACCOUNT_CREATED_BY } from "./ownership.ts";
export { IN_USE_FINALIZER, IN_USE_SECRETS } from "./in-use.ts";
export { createDatabaseUserOperator, databaseUserOperator, type DatabaseUserOperatorOptions } from "./module.ts";
export { FINGERPRINT_KEY_SECRET } from "./fingerprint-key.ts";
export { passwordFingerprint } from "./password.ts";
