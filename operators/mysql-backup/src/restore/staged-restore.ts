// The phases of a Staged restore (see restore.ts), in the order
// backup-restore.ts runs them:
//   1. stage: staging databases (staging.ts) built from the schema and data objects
//   2. readPostData: routines, views, triggers and events read into memory and verified
//   3. swapIntoTarget: the target's databases created if missing, the staged
//      tables swapped in by one RENAME TABLE — the first change to the target
//   4. applyPostData: the post-data objects applied to the target
//   5. dropStaging: the replaced tables and the staging databases dropped
import { Readable } from "node:stream";
import { MySQLSession } from "../engine/connection.ts";
import { throwIfAborted } from "../engine/errors.ts";
import { messageOf } from "@stateward/core";
import { BackupError } from "../errors.ts";
import { quoteIdentifier } from "../engine/sql.ts";
import type { ManifestObject } from "../storage/manifest.ts";
import { applySql } from "./apply.ts";
import { databaseStatement } from "./dump-file.ts";
import { applyData, applyObject, type RestorePlan, type RestoreRun } from "./restore-run.ts";
import { createViewStandIns, dropLeftovers, dropReplaced, keptReplaced, planSwap, stagingDatabaseName, SwapUndoFailed, swapIn, type SwapPlan } from "./staging.ts";
import type { Statement } from "./statements.ts";
import { corrupt, decompress, readObject } from "./verified-object.ts";

/** Stored bytes of post-data objects (definitions only, all databases together) a staged restore holds in memory until after the swap. */
const maxPostDataBytes = 32 * 1024 * 1024;

/** What a failure before the swap means for the target. */
const consequence = "the target was not changed";

/** The staging database of each restored database, and the backup's own CREATE DATABASE of each, for the swap. */
interface StagedDatabases {
  staging: { database: string; staging: string }[];
  createStatements: Map<string, string>;
}

/** A post-data object, verified, held until after the swap. */
interface PostDataObject {
  object: ManifestObject;
  bytes: Buffer;
}

/** The connection that swapped the tables in, and what it swapped. */
interface Swapped {
  swapper: MySQLSession;
  plan: SwapPlan;
}

/**
 * Phase 1: the staging databases an earlier, killed run left are dropped; the
 * staging databases are created and the schema and data objects applied to
 * them. Refused, before anything changes, when an earlier run with this run id
 * kept the target's replaced tables: they may be the only copy of what was
 * written since the backup, and this run's swap would move tables aside to the
 * same names.
 */
export async function stage(run: RestoreRun, plan: RestorePlan, main: MySQLSession): Promise<StagedDatabases> {
  const { options, runId, store, progress } = run;
  const { databases, objects } = plan;
  const found = await dropLeftovers(main, runId, "staging");
  if (found.replacedTables.length > 0) {
    throw new BackupError(
      "InvalidOptions",
      `an earlier run of this restore swapped its tables in and stopped. ${keptReplaced(found, runId)}. This run would move the target's tables aside to the same names: rename or drop those first, then restore again`,
    );
  }
  if (found.stagingDatabases.length + found.replacedTables.length > 0) {
    run.leftoversDropped = found;
    options.logger?.info("dropped what an earlier, interrupted run of this restore left", { ...found });
  }
  const staging = databases.map((database, i) => ({ database, staging: stagingDatabaseName(runId, i) }));
  const stagingOf = new Map(staging.map((s) => [s.database, s.staging]));
  run.stagingCreated = true;
  for (const s of staging) await main.query(`CREATE DATABASE ${quoteIdentifier(s.staging)}`, [], `create staging database ${quoteIdentifier(s.staging)}`);
  // Each object names its database (CREATE DATABASE, USE): the staging one is used instead.
  const createStatements = new Map<string, string>();
  const toStaging = (statement: Statement): string | null => {
    const named = databaseStatement(statement);
    if (!named) return statement.sql;
    const into = stagingOf.get(named.database);
    if (into === undefined) {
      throw new BackupError("InvalidManifest", `an object of ${store.url} at line ${statement.line} names database ${quoteIdentifier(named.database)}, which is not one being restored; ${consequence}`);
    }
    if (named.kind === "create") {
      createStatements.set(named.database, statement.sql);
      return null;
    }
    return `USE ${quoteIdentifier(into)}`;
  };
  for (const o of objects.filter((x) => x.kind === "schema")) await applyObject(run, plan, o, main, toStaging, consequence);
  progress.phase = "data";
  await applyData(run, plan, toStaging, consequence);
  return { staging, createStatements };
}

/** Phase 2: the post-data objects, read whole and verified, to apply once the tables are swapped in. */
export async function readPostData(run: RestoreRun, plan: RestorePlan): Promise<PostDataObject[]> {
  const { store, signal } = run;
  run.progress.phase = "post-data";
  const postData: PostDataObject[] = [];
  let budget = maxPostDataBytes;
  for (const o of plan.objects.filter((x) => x.kind === "post-data")) {
    throwIfAborted(signal, "the restore");
    const bytes = await readObject(store, o, signal, budget);
    budget -= bytes.length;
    postData.push({ object: o, bytes });
  }
  return postData;
}

/** Phase 3: every object is verified and applied to staging: now the target changes. */
export async function swapIntoTarget(run: RestoreRun, plan: RestorePlan, main: MySQLSession, staged: StagedDatabases): Promise<Swapped> {
  const { options, runId, signal, progress, sessions } = run;
  const { staging, createStatements } = staged;
  progress.phase = "swap";
  run.report(true);
  // Trigger definitions are read and written as text: a utf8mb4 session of its own.
  const swapper = await MySQLSession.open(options.target);
  sessions.push(swapper);
  const swap = await planSwap(swapper, runId, staging);
  throwIfAborted(signal, "the restore");
  await main.query("SET NAMES utf8mb4", [], "prepare the swap");
  for (const d of plan.databases) {
    // The backup's own CREATE DATABASE (IF NOT EXISTS, its character set) for a database the target lacks.
    const create = createStatements.get(d) ?? `CREATE DATABASE IF NOT EXISTS ${quoteIdentifier(d)}`;
    await main.execute(create).catch((err: unknown) => {
      throw new BackupError("DatabaseError", `could not create database ${quoteIdentifier(d)}: ${messageOf(err)}; ${consequence}`);
    });
  }
  throwIfAborted(signal, "the restore");
  run.swapSent = true;
  await swapIn(swapper, swap).catch((err: unknown) => {
    if (err instanceof SwapUndoFailed) run.targetChanged = true;
    // A RENAME the server refused changed nothing (it is atomic); one that got no answer may have run.
    // When it moves target tables aside, the cleanup finds them if it did (failed() in backup-restore.ts);
    // when it moves none, nothing left tells.
    if (swap.replaced.length === 0 && !answeredByServer(err instanceof SwapUndoFailed ? err.cause : err)) run.swapUnanswered = true;
    throw err;
  });
  run.targetChanged = true;
  await createViewStandIns(swapper, staging);
  return { swapper, plan: swap };
}

/** Phase 4: the post-data objects applied to the target, on the connection that applied the schema. */
export async function applyPostData(run: RestoreRun, plan: RestorePlan, main: MySQLSession, postData: readonly PostDataObject[]): Promise<void> {
  const { store, signal, progress } = run;
  const { manifest } = plan;
  progress.phase = "post-data";
  for (const { object, bytes } of postData) {
    const source = `object ${object.key} of ${store.url}`;
    const applied = await applySql(decompress(Readable.from([bytes]), manifest.compression), {
      session: main,
      source,
      signal,
      onApplied: (n) => {
        progress.bytesApplied += n;
        progress.statements += 1;
      },
    }).catch((err: unknown) => {
      throw corrupt(err, source) ?? err;
    });
    run.storedBytes += bytes.length;
    run.sqlBytes += applied.bytes;
    progress.objectsDone += 1;
    run.report(true);
  }
}

/** Whether `err` is the server's own refusal (it carries an SQLSTATE), not a connection that gave no answer. */
function answeredByServer(err: unknown): boolean {
  const cause = err instanceof BackupError ? err.cause : err;
  return typeof (cause as { sqlState?: unknown } | undefined)?.sqlState === "string";
}

/** Phase 5: the tables the swap replaced, and the staging databases, dropped. */
export async function dropStaging(run: RestoreRun, main: MySQLSession, swapped: Swapped): Promise<void> {
  await dropReplaced(swapped.swapper, swapped.plan);
  // Only what this run made: its replaced tables are gone now, and the holding database with them.
  await dropLeftovers(main, run.runId, "staging");
  run.stagingCreated = false;
}
