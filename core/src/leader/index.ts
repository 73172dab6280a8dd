export { LeaderElector, type LeaderElectionOptions } from "./lease.ts";
