// Which replica replaces a lost primary, and whether promoting it can lose a
// write the old primary acknowledged.
//
//   the candidate is the reachable replica whose received transactions (what
//   its I/O thread got, applied or still in its relay log) contain every other
//   reachable replica's — ties: the most applied, then the lowest ordinal;
//   with SemiSync (active at the last look) every acknowledged commit reached
//   some replica, so the candidate has them all — as long as every replica
//   answers (one that does not may be the only one that acknowledged some);
//   whatever the mode, the candidate must have the old primary's last position
//   the operator saw: without it, transactions known to have committed are gone.
import type { Flavor } from "@stateward/mysql";
import { gtidContains, gtidCount } from "./gtid.ts";

export interface ReplicaProgress {
  ordinal: number;
  name: string;
  /** What it received (its I/O position merged with what it executed). */
  received: string;
  /** What it has applied. */
  executed: string;
}

export type CandidateChoice = { kind: "chosen"; replica: ReplicaProgress } | { kind: "none"; message: string };

/** What the candidate's received and executed positions mean together: MariaDB, the higher sequence per domain; MySQL, the union. */
export function receivedOf(io: string | undefined, executed: string): string {
  // The same GTID in both (a replica that applied all it received) is said once: the list is shown to users.
  const parts = [io ?? "", executed].flatMap((p) => p.split(",")).map((p) => p.trim()).filter((p) => p !== "");
  return [...new Set(parts)].join(",");
}

/**
 * The replica to promote. `preferred` (spec.primary) is taken when it has
 * everything the others received; otherwise none is chosen and the message
 * says who has more.
 */
export function chooseCandidate(flavor: Flavor, replicas: ReplicaProgress[], preferred?: number): CandidateChoice {
  if (replicas.length === 0) return { kind: "none", message: "no replica answers" };
  const complete = replicas.filter((r) => replicas.every((o) => o === r || gtidContains(flavor, r.received, o.received)));
  const described = replicas.map((r) => `${r.name} received ${r.received || "nothing"}`).join("; ");
  if (preferred !== undefined) {
    const wanted = replicas.find((r) => r.ordinal === preferred);
    if (!wanted) return { kind: "none", message: `spec.primary ${preferred} is not a replica that answers (${described})` };
    if (!complete.includes(wanted)) return { kind: "none", message: `spec.primary names ${wanted.name}, which lacks transactions another replica received (${described})` };
    return { kind: "chosen", replica: wanted };
  }
  if (complete.length === 0) return { kind: "none", message: `no replica received every transaction the others did (${described})` };
  const [best] = [...complete].sort((a, b) => {
    const x = gtidCount(flavor, a.executed);
    const y = gtidCount(flavor, b.executed);
    return x > y ? -1 : x < y ? 1 : a.ordinal - b.ordinal;
  });
  return { kind: "chosen", replica: best! };
}

export interface PromotionFacts {
  /** The SemiSync condition was True at the last status: commits waited for an acknowledgement. */
  semiSyncActive: boolean;
  /** Replicas that do not answer (one may be the only one that acknowledged a commit). */
  unreachableReplicas: string[];
  /** The old primary's executed position in the last status, if known. */
  lastKnownPrimary: string | undefined;
  oldPrimary: string;
}

/**
 * `mayLose`, whenever the promotion is not loss-free: every transaction the old primary
 * committed beyond what the candidate received — the boundary the FailedOver Event and
 * status.lastFailover.dataLoss report, so a lost write is named, never hidden.
 */
export type Safety = { safe: true; note: string; mayLose?: string } | { safe: false; mayLose: string };

/** Whether promoting `candidate` keeps every acknowledged write; when not, which writes may be lost. */
export function promotionSafety(flavor: Flavor, candidate: ReplicaProgress, facts: PromotionFacts): Safety {
  const { lastKnownPrimary, oldPrimary } = facts;
  const beyond = `every transaction ${oldPrimary} committed beyond ${candidate.received || "an empty position"} (what ${candidate.name} received)`;
  if (lastKnownPrimary && !gtidContains(flavor, candidate.received, lastKnownPrimary)) {
    return { safe: false, mayLose: `${beyond}: ${oldPrimary} had executed ${lastKnownPrimary} when last seen` };
  }
  if (!facts.semiSyncActive) {
    return {
      safe: true,
      note: `commits were not waiting for replicas (asynchronous): ${beyond} is lost, acknowledged writes among them`,
      mayLose: `${beyond}: commits were not waiting for replicas (asynchronous)`,
    };
  }
  if (facts.unreachableReplicas.length > 0) {
    return { safe: false, mayLose: `${beyond}, acknowledged by ${facts.unreachableReplicas.join(", ")} only, which does not answer` };
  }
  return { safe: true, note: "semi-synchronous: every acknowledged commit had reached a replica, and the candidate has everything any replica received" };
}
