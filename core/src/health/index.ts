// /healthz, /readyz and /metrics HTTP servers.
export { parseBindAddress } from "./address.ts";
export type { ListenAddress } from "./address.ts";
export type { BoundAddress } from "./listener.ts";
export { MetricsServer } from "./metrics-server.ts";
export type { MetricsSource } from "./metrics-server.ts";
export { ProbeServer } from "./probe-server.ts";
export type { Check, ProbeServerOptions } from "./probe-server.ts";
