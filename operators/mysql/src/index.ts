// Public surface of @stateward/mysql; filled in by its issue.
export {};
