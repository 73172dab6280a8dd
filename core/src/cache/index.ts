export { Informer, type InformerEvent, type InformerHandler, type InformerLogger, type InformerOptions, type InformerStats } from "./informer.ts";
export { Store, type IndexFunc } from "./store.ts";
export { Cache, type CacheOptions } from "./cache.ts";
export { cacheKind, type CacheDeclaration, type CacheScope, type Declarer } from "./scopes.ts";
