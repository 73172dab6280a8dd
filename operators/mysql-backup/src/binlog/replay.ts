// PLACEHOLDER until branch pitr-replay is merged: the replay engine's
// interface as agreed, so that the point-in-time restore type-checks. The
// merge replaces this file with the real engine; nothing here replays.
import type { Logger } from "@stateward/core";
import type { MySQLSession } from "../engine/connection.ts";
import { BackupError } from "../errors.ts";
import type { ArchiveIndex, ArchivedFile } from "./archive-index.ts";

export type RecoveryPoint = { time: Date } | { gtid: string };

export interface ReplayPlan {
  files: ArchivedFile[];
}

export interface ReplayProgress {
  transactions: number;
  lastGtid: string | null;
  lastEventTime: string | null;
}

export function planReplay(_index: ArchiveIndex, _after: string, _until: RecoveryPoint): ReplayPlan {
  throw new BackupError("ReplayFailed", "the replay engine is not merged yet (branch pitr-replay)");
}

export function replayBinlog(
  _session: MySQLSession,
  _files: AsyncIterable<Buffer> | Iterable<string>,
  _options: { after: string; until: RecoveryPoint; databases?: string[]; signal?: AbortSignal; logger?: Logger; onProgress?: (p: ReplayProgress) => void },
): Promise<ReplayProgress & { transactions: number }> {
  return Promise.reject(new BackupError("ReplayFailed", "the replay engine is not merged yet (branch pitr-replay)"));
}
