// Public surface of @stateward/operator-mysql-cluster; filled in by its issue.
export {};
