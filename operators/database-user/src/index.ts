// Public surface of @stateward/operator-database-user; filled in by its issue.
export {};
