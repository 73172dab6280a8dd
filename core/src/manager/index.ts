export { BackgroundTasks, type BackgroundTask } from "./background.ts";
export { settledWithin } from "./bounded-wait.ts";
export { FatalErrorStop, fatalExitCode, installCrashPolicy, type CrashPolicyOptions } from "./crash-policy.ts";
export { ensureCrds, type CrdPolicy } from "./crds.ts";
export { Manager, TARGET_LABEL, type LeaderElectionConfig, type ManagerOptions, type RequestCounts } from "./manager.ts";
export { resourceOf, uniqueKinds, type ControllerSetup, type CustomKind, type OperatorModule } from "./module.ts";
export { Tokens, bindResolved, resolve, systemClock, token, type Clock, type ManagerSettings, type Resolved, type SecretAccess, type Token } from "./tokens.ts";
