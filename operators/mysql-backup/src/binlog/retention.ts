// Which archived files no kept backup needs. A point-in-time restore starts
// from a full backup and replays the archive's transactions after that
// backup's snapshot position; a file all of whose transactions are at or
// before the snapshot of every kept (Completed) backup is never replayed by
// any of them. Only the oldest files can be such, and only a run of them from
// the front of the index goes (the archive stays one chain: its startPosition
// becomes the first kept file's). Nothing is chosen when anything is unknown:
// no Completed backup, one without a recorded GTID position, a position that
// cannot be read. The newest file always stays (its number is where the next
// file's comes from), and a file younger than the minimum age stays too.
import type { ArchiveIndex, ArchivedFile } from "./archive-index.ts";
import { parsePosition, type GtidPosition } from "./gtid.ts";

/** A kept backup of the archive's server, as a retention pass sees it. */
export interface KeptBackup {
  name: string;
  /** Its snapshot's GTID position (status.position.gtid), undefined when the backup did not record one. */
  position: string | undefined;
}

export interface RetentionChoice {
  /** Files to delete: a run from the front of the index, in order. */
  files: ArchivedFile[];
  /** Why not more (or none): for logs and Events. */
  reason: string;
  /** The backup whose position bounded the choice, when one did. */
  oldestBackup?: string;
}

/** Whether every transaction up to `end` is at or before `position`, domain by domain. */
function atOrBefore(end: GtidPosition, position: GtidPosition): boolean {
  for (const g of end.values()) {
    if (g.seq > (position.get(g.domain)?.seq ?? 0n)) return false;
  }
  return true;
}

/**
 * The files of `index` that no backup of `backups` needs and that are older
 * than `minimumAgeMs` (by their last event time) at `now`.
 */
export function selectPrunable(index: ArchiveIndex, backups: readonly KeptBackup[], now: number, minimumAgeMs: number): RetentionChoice {
  if (backups.length === 0) return { files: [], reason: "no Completed backup of the archived server: every file is kept" };
  const positions: { name: string; position: GtidPosition }[] = [];
  for (const b of backups) {
    if (b.position === undefined) return { files: [], reason: `backup ${b.name} recorded no GTID position: every file is kept` };
    try {
      positions.push({ name: b.name, position: parsePosition(b.position) });
    } catch {
      return { files: [], reason: `backup ${b.name} has a GTID position that cannot be read ("${b.position}"): every file is kept` };
    }
  }
  const files: ArchivedFile[] = [];
  // The newest file stays whatever it holds.
  for (const f of index.files.slice(0, -1)) {
    const end = parsePosition(f.endPosition);
    const needing = positions.find((b) => !atOrBefore(end, b.position));
    if (needing) return { files, reason: `${f.key} holds transactions after the snapshot of backup ${needing.name}`, oldestBackup: needing.name };
    if (now - Date.parse(f.lastEventTime) < minimumAgeMs) return { files, reason: `${f.key} is younger than the minimum age` };
    files.push(f);
  }
  return { files, reason: index.files.length === 0 ? "the archive has no file" : "the newest file is always kept" };
}
