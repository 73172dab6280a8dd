// Public surface of @stateward/cli; filled in by its issue.
export {};
