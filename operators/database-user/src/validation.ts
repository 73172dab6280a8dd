// What the CRD schema cannot check because it depends on the server: a
// privilege that exists on MariaDB only, or on MySQL only. Found before any
// statement runs and reported as a terminal condition (editing the object is
// the only fix).
import { type ServerInfo } from "@stateward/mysql";
import { isKnownPrivilege, privilegeFlavors } from "./privileges.ts";
import type { DatabaseUserSpec } from "./api.ts";

/** Problems with `spec` on `server`, as sentences; empty when there are none. */
export function specProblems(spec: DatabaseUserSpec, server: Pick<ServerInfo, "flavor" | "version">): string[] {
  const problems: string[] = [];
  const foreign = new Set<string>();
  for (const grant of spec.grants ?? []) {
    for (const p of grant.privileges) {
      if (isKnownPrivilege(p) && !privilegeFlavors(p).includes(server.flavor)) foreign.add(p);
    }
  }
  if (foreign.size > 0) {
    const names = [...foreign].join(", ");
    const other = server.flavor === "MySQL" ? "MariaDB" : "MySQL";
    problems.push(`${names} ${foreign.size === 1 ? "exists" : "exist"} only on ${other}; the instance runs ${server.flavor} ${server.version}`);
  }
  return problems;
}
