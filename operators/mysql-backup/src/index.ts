// Public surface of @stateward/operator-mysql-backup; filled in by its issue.
export {};
