// The operators this build of the `stateward` command can run, by the name
// given to `--operators`. The CLI is the only package that imports them all.
import type { OperatorModule } from "@stateward/core";
import { databaseUserOperator } from "@stateward/operator-database-user";
import { mysqlBackupOperator } from "@stateward/operator-mysql-backup";
import { mysqlClusterOperator } from "@stateward/operator-mysql-cluster";

/** Every available operator, in a stable order. */
export const availableOperators: OperatorModule[] = [databaseUserOperator, mysqlBackupOperator, mysqlClusterOperator];

export function selectOperators(names: string[] | undefined): OperatorModule[] {
  if (!names || names.length === 0) return availableOperators;
  const unknown = names.filter((n) => !availableOperators.some((m) => m.name === n));
  if (unknown.length) {
    const known = availableOperators.map((m) => m.name).join(", ") || "(none yet)";
    throw new UsageError(`unknown operator(s): ${unknown.join(", ")}; available: ${known}`);
  }
  return availableOperators.filter((m) => names.includes(m.name));
}

export class UsageError extends Error {
  override name = "UsageError";
}
