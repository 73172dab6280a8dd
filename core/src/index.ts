// Public surface of @stateward/core; filled in by its issue.
export {};
