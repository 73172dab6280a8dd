// Public surface of the mysql-cluster operator.
export { CLUSTER_PHASES, MAX_REPLICAS, MySQLClusterKind, type MemberStatus, type MySQLCluster, type MySQLClusterSpec, type MySQLClusterStatus } from "./api.ts";
export { SERVER_ID_BASE, flavorOfImage, renderMyCnf } from "./config/my-cnf.ts";
export { createMySQLClusterOperator, mysqlClusterOperator, type MySQLClusterOperatorOptions } from "./module.ts";
export { MANAGED_OBJECTS_SELECTOR, MEMBER_READY_CONDITION, ROLE_LABEL, clusterNames, podHost, podName, primaryHost, selectorLabels } from "./resources/names.ts";
export { MY_CNF_KEY } from "./resources/objects.ts";
