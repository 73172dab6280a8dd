// Accounts no Stateward operator may take over: the ones the server itself
// runs on, and the ones a MySQLCluster creates for its own use. Changing the
// password of one of them, revoking its grants or dropping it breaks the
// server, replication, or the operator's own access.

/**
 * User names the servers create for themselves (any host): the superuser;
 * MariaDB's `mysql` (since 10.4 a second superuser, `mysql`@`localhost`, for
 * the operating system's mysql user, logging in by unix_socket) and its definer
 * of the sys views; MySQL's internal accounts.
 */
export const SYSTEM_USERS: readonly string[] = ["root", "mysql", "mariadb.sys", "mysql.sys", "mysql.session", "mysql.infoschema"];

/** The account a MySQLCluster's replicas log in to its primary with (`'replication'@'%'`). */
export const CLUSTER_REPLICATION_USER = "replication";
