// @stateward/core — the runtime every operator runs on. It knows nothing about MySQL.
// Each concept lives in its own folder with a small public surface; this file
// re-exports exactly that surface.
export * from "./cache/index.ts";
export * from "./client/index.ts";
export * from "./conditions/index.ts";
export * from "./controller/index.ts";
export * from "./crd/index.ts";
export * from "./errors/index.ts";
export * from "./events/index.ts";
export * from "./finalizers/index.ts";
export * from "./health/index.ts";
export * from "./leader/index.ts";
export * from "./log/index.ts";
export * from "./manager/index.ts";
export * from "./metrics/index.ts";
export * from "./queue/index.ts";
