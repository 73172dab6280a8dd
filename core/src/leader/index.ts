export { LeaderElector, LeadershipLostError, systemElectionClock, type ElectionClock, type LeaderElectionOptions } from "./lease.ts";
export type { Leadership } from "./leadership.ts";
