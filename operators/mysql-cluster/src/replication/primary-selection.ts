// Which server is the primary when the cluster's status does not say (a
// cluster re-created on retained volumes, an object restored by GitOps or
// Velero without its status). Ordinal 0 is not assumed: after a rollout or a
// switchover the primary is usually another pod, and promoting a server that
// is behind turns the real primary into its replica and loses writes.
//
//   the member whose history contains every other member's is the primary
//   (ties: the one not configured as a replica — the old primary — then the
//   lowest ordinal; a brand-new cluster of empty servers therefore gets pod 0);
//   a member whose volume exists but whose server does not answer: nothing is
//   decided yet (it may hold the newest writes);
//   no member contains all the others (diverged): nothing is promoted, the
//   user names the primary with spec.primary.
import type { Flavor } from "@stateward/mysql";
import { historyContains } from "./gtid.ts";

export type Candidate =
  /** No pod and no volume: a server that never existed (a new cluster's later ordinals). */
  | { ordinal: number; kind: "absent" }
  /** A volume (or pod) exists but its server does not answer (yet). */
  | { ordinal: number; kind: "unreachable"; why: string }
  | {
      ordinal: number;
      kind: "reachable";
      /** MariaDB gtid_binlog_state, MySQL gtid_executed. */
      history: string;
      /** Configured to replicate from some server (SHOW SLAVE/REPLICA STATUS has a source). */
      replica: boolean;
    };

export type Selection =
  | { kind: "chosen"; ordinal: number; why: string }
  | { kind: "unknown"; reason: "MembersUnreachable" | "Diverged" | "NoMembers"; message: string };

export function choosePrimary(flavor: Flavor, candidates: Candidate[], podName: (ordinal: number) => string): Selection {
  const unreachable = candidates.filter((c) => c.kind === "unreachable");
  if (unreachable.length > 0) {
    return {
      kind: "unknown",
      reason: "MembersUnreachable",
      message: `no primary on record and ${unreachable.map((c) => `${podName(c.ordinal)} (${c.why})`).join(", ")} cannot be compared yet; the primary is chosen once every server with a volume answers, or set spec.primary`,
    };
  }
  const reachable = candidates.filter((c) => c.kind === "reachable");
  if (reachable.length === 0) return { kind: "unknown", reason: "NoMembers", message: "waiting for the first server to answer" };
  const complete = reachable.filter((c) => reachable.every((o) => o === c || historyContains(flavor, c.history, o.history)));
  if (complete.length === 0) {
    return {
      kind: "unknown",
      reason: "Diverged",
      message: `no primary on record and no server has every transaction of the others (diverged: ${reachable.map((c) => `${podName(c.ordinal)} has ${c.history === "" ? "none" : c.history}`).join("; ")}); nothing was promoted: set spec.primary to the ordinal whose data should win`,
    };
  }
  const chosen = [...complete].sort((a, b) => Number(a.replica) - Number(b.replica) || a.ordinal - b.ordinal)[0]!;
  const why = reachable.every((c) => c.history === "")
    ? "every server is empty (a new cluster)"
    : reachable.length === 1
      ? "it is the only server with data"
      : `its history (${chosen.history}) contains every other server's`;
  return { kind: "chosen", ordinal: chosen.ordinal, why };
}
