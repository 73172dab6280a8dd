// The operators this build of the `stateward` command can run, by the name
// given to `--operators`. The CLI is the only package that imports them all.
//
// Each operator's module is imported only when it is selected: an operator
// brings its own dependencies (mysql-backup the AWS SDK, node-cron), and a
// manager running only database-user should not pay their load time and
// memory (docs/performance.md).
import { uniqueKinds, type CustomKind, type OperatorModule } from "@stateward/core";

/**
 * Every available operator, in a stable order, and how to load it. `movesData`: the operator
 * streams a database's rows through the manager (mysql-backup's dumps and restores, mysql-cluster's
 * seeding of a replica), loops that need V8's optimizing compiler and room to allocate (see engineFlagsFor).
 */
export const operatorLoaders: readonly { name: string; movesData: boolean; load: () => Promise<OperatorModule> }[] = [
  { name: "database-user", movesData: false, load: async () => (await import("@stateward/operator-database-user")).databaseUserOperator },
  { name: "mysql-backup", movesData: true, load: async () => (await import("@stateward/operator-mysql-backup")).mysqlBackupOperator },
  { name: "mysql-cluster", movesData: true, load: async () => (await import("@stateward/operator-mysql-cluster")).mysqlClusterOperator },
];

/**
 * The V8 settings `stateward run` applies for these operators, before loading any of them. A
 * manager with an operator that moves data keeps V8's defaults and the image's flags. Without one,
 * the work is API requests and a few SQL statements per object, and memory is worth more than
 * the last few percent of CPU:
 * - `--no-turbofan`: V8's mid tier (Maglev) compiles that work as fast, and the optimizing
 *   compiler's own code and zones are ~6 MiB of the peak RSS (docs/performance.md, finding 17).
 *   A dump or a restore runs a third more CPU without it.
 * - `--heap-growing-percent=20` (the image starts every manager with 50): after each full GC the
 *   old generation may grow by a fifth before the next instead of by half; ~4 MiB less at the peak
 *   of 1,000 accounts for a few more collections (finding 18). A backup's CPU rose by a fifth with it.
 */
export function engineFlagsFor(selected: readonly string[]): string[] {
  const movesData = operatorLoaders.some((o) => o.movesData && selected.includes(o.name));
  return movesData ? [] : ["--no-turbofan", "--heap-growing-percent=20"];
}

/** The names `--operators` accepts, in the registry's order. */
export const operatorNames: readonly string[] = operatorLoaders.map((o) => o.name);

/** The operators named (every one when none is named), in the registry's order; a UsageError on an unknown name, before anything is loaded. */
export function selectOperatorNames(names: readonly string[] | undefined): string[] {
  if (!names || names.length === 0) return [...operatorNames];
  const unknown = names.filter((n) => !operatorNames.includes(n));
  if (unknown.length) {
    const known = operatorNames.join(", ") || "(none yet)";
    throw new UsageError(`unknown operator(s): ${unknown.join(", ")}; available: ${known}`);
  }
  return operatorNames.filter((n) => names.includes(n));
}

/** Loads the operators named (every one when none is named); see selectOperatorNames. */
export async function selectOperators(names?: readonly string[]): Promise<OperatorModule[]> {
  const selected = selectOperatorNames(names);
  return Promise.all(operatorLoaders.filter((o) => selected.includes(o.name)).map((o) => o.load()));
}

/** Every kind of every available operator (loads them all: for the commands that read any Stateward object). */
export async function allKinds(): Promise<CustomKind[]> {
  return uniqueKinds((await selectOperators()).flatMap((m) => m.kinds));
}

export class UsageError extends Error {
  override name = "UsageError";
}
