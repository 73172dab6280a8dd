// The real test environment, for Vitest global setup, `make dev-up` and the benchmarks.
export { ControlPlane, type ControlPlaneInfo, type ControlPlaneOptions } from "./controlplane.ts";
export {
  devDir,
  envFile,
  isRunning,
  localBin,
  readState,
  releaseRealNode,
  startEnvironment,
  stopAbandonedRuns,
  stopStrayServers,
  stopRecorded,
  useRealNode,
  type EnvironmentHandle,
  type EnvironmentInfo,
  type RealNodeMode,
} from "./environment.ts";
export { NODE_NAME, namespaceAnnotations, nodePlacement, stopRealNode, type RealNodeInfo } from "./realnode/node.ts";
export { hostFacts, type HostFacts } from "./realnode/host-state.ts";
export { imageRefs } from "./realnode/images.ts";
export { machineSupport, realNodeSupport, type RealNodeSupport } from "./realnode/support.ts";
export { canConnect, ensureMariaDB, startMariaDB, stopMariaDB, type MariaDBEndpoint } from "./mariadb.ts";
export { EnvironmentError, isAlive, logTail } from "./process.ts";
export { freePort } from "./ports.ts";
export { s3Client, startS3, type S3Endpoint } from "./s3.ts";
export { cacheDir, kubernetesVersion, repoRoot, tools } from "./tools.ts";
export { TcpProxy } from "./tcp-proxy.ts";
