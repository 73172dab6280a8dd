import { statfs } from "node:fs/promises";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import type { MySQLBinlogArchive } from "../api.ts";
import { BackupError } from "../errors.ts";
import { NotReady, Refused } from "./operation-reconciler.ts";
import { coversBackup, notArchived, scratchRoom } from "./point-in-time.ts";

const archive = { metadata: { name: "arch" }, spec: { rotation: { maxFileAgeSeconds: 30 } } } as unknown as MySQLBinlogArchive;
const err = new BackupError("PointNotArchived", "2026-12-02T03:00:00Z is past what is archived");

describe("notArchived", () => {
  it("waits, polled, while the point is younger than the archive's rotation age plus a margin", () => {
    const r = notArchived(err, archive, { time: new Date(Date.now() - 60_000) }, new Date(), undefined);
    expect(r).toBeInstanceOf(NotReady);
    expect((r as NotReady).retryAfterMs).toBe(5_000);
    expect(r.message).toContain("Waiting for MySQLBinlogArchive arch");
  });

  it("fails once the archive should have reached it, saying what it reached and what to do", () => {
    const r = notArchived(err, archive, { time: new Date(Date.now() - 91_000) }, new Date(), undefined);
    expect(r).toBeInstanceOf(Refused);
    expect((r as Refused).reason).toBe("PointNotArchived");
    expect(r.message).toContain("it holds no transaction yet");
    expect(r.message).toContain("Check the archive's status");
  });

  it("bounds a GTID point's wait from the restore's creation", () => {
    const old = new Date(Date.now() - 120_000);
    expect(notArchived(err, archive, { gtid: "0-1-9" }, old, undefined)).toBeInstanceOf(Refused);
    expect(notArchived(err, archive, { gtid: "0-1-9" }, new Date(), undefined)).toBeInstanceOf(NotReady);
  });
});

describe("coversBackup", () => {
  it("holds for a restore of every database, or of a list including all of a listed backup's", () => {
    expect(coversBackup(undefined, undefined)).toBe(true);
    expect(coversBackup(undefined, ["shop"])).toBe(true);
    expect(coversBackup(["shop", "crm"], ["crm", "shop"])).toBe(true);
    expect(coversBackup(["shop"], ["shop", "crm"])).toBe(false);
    // A backup of every database holds what its manifest says: a list is taken as a part.
    expect(coversBackup(["shop"], undefined)).toBe(false);
  });
});

describe("scratchRoom", () => {
  it("is the configured limit when it is below the free space, and says where it comes from", async () => {
    expect(await scratchRoom({ STATEWARD_SCRATCH_LIMIT: "1Ki" })).toEqual({ bytes: 1024, bound: "its scratch space limit (STATEWARD_SCRATCH_LIMIT 1Ki: the chart's scratchSizeLimit)" });
  });

  it("is the filesystem's free space without a limit, with a limit above it, or with one that is not a quantity", async () => {
    const fs = await statfs(tmpdir());
    const free = fs.bavail * fs.bsize;
    for (const env of [{}, { STATEWARD_SCRATCH_LIMIT: "1000Ti" }, { STATEWARD_SCRATCH_LIMIT: "lots" }]) {
      const room = await scratchRoom(env);
      expect(room.bound).toBe(`the free space of ${tmpdir()}`);
      // The free space moves with whatever else writes there: within 64 MiB of what was read just before.
      expect(Math.abs(room.bytes - free)).toBeLessThan(64 * 2 ** 20);
    }
  });
});
