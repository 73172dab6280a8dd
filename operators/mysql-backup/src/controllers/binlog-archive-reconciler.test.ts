import { describe, expect, it } from "vitest";
import { BackupError } from "../errors.ts";
import type { MySQLBackup } from "../api.ts";
import { archiveStatus, defaultServerId, keptBackups } from "./binlog-archive-reconciler.ts";

const location = "s3://b/archives/ns/orders/";
const streaming = {
  streaming: true,
  source: { endpoint: "orders-db-primary:3306", serverId: 1001, version: "10.11.19-MariaDB" },
  startPosition: "0-1000-5",
  archivedPosition: "0-1001-42",
  lastArchivedGtid: "0-1001-42",
  lastArchivedTime: "2026-12-01T10:00:00Z",
  files: 3,
  lagSeconds: 12,
};

describe("archiveStatus", () => {
  it("is Ready while streaming, with the position, the last GTID and its time, the lag and the source", () => {
    expect(archiveStatus(streaming, location)).toEqual({
      fields: {
        location,
        startPosition: "0-1000-5",
        archivedPosition: "0-1001-42",
        lastArchivedGtid: "0-1001-42",
        lastArchivedTime: "2026-12-01T10:00:00Z",
        lagSeconds: 12,
        files: 3,
        source: "server 1001 at orders-db-primary:3306",
      },
      ready: { status: "True", reason: "Archiving", message: 'Streaming from server 1001 at orders-db-primary:3306; archived up to "0-1001-42"' },
    });
  });

  it("is not Ready with a gap, even while a stream is open, and says what is missing", () => {
    const error = new BackupError("GtidGap", "GTID gap: the server sent 0-1001-45 after 0-1001-42; sequence number 43 is missing from the stream");
    expect(archiveStatus({ ...streaming, error }, location).ready).toEqual({
      status: "False",
      reason: "GtidGap",
      message: "GTID gap: the server sent 0-1001-45 after 0-1001-42; sequence number 43 is missing from the stream; retrying",
    });
  });

  it("says Connecting before the first stream, and leaves out what is not known yet", () => {
    const { fields, ready } = archiveStatus({ streaming: false, archivedPosition: "", files: 0, lagSeconds: 0 }, location);
    expect(ready).toMatchObject({ status: "False", reason: "Connecting" });
    expect(fields).toEqual({ location, archivedPosition: "", lagSeconds: 0, files: 0 });
  });
});

describe("defaultServerId", () => {
  it("is stable per object, differs between objects, and stays clear of the cluster members' ids", () => {
    const a = defaultServerId("shop", "orders");
    expect(defaultServerId("shop", "orders")).toBe(a);
    expect(defaultServerId("shop", "orders-2")).not.toBe(a);
    for (const [ns, name] of [["a", "b"], ["prod", "orders"], ["x".repeat(63), "y".repeat(253)]] as const) {
      const id = defaultServerId(ns, name);
      expect(id).toBeGreaterThanOrEqual(4_000_000_000);
      expect(id).toBeLessThanOrEqual(4_294_967_295);
    }
  });
});

describe("keptBackups", () => {
  const backup = (name: string, instance: string, phase: string, gtid?: string) =>
    ({ metadata: { name }, spec: { instanceRef: { name: instance } }, status: { phase, ...(gtid !== undefined ? { position: { gtid } } : {}) } }) as unknown as MySQLBackup;

  it("is the Completed backups of the archived instance, with their snapshot positions (none recorded stays undefined)", () => {
    const all = [
      backup("done", "db", "Completed", "0-1-10"),
      backup("no-position", "db", "Completed"),
      backup("running", "db", "Running"),
      backup("failed", "db", "Failed", "0-1-3"),
      backup("other", "other-db", "Completed", "0-1-1"),
    ];
    expect(keptBackups(all, "db")).toEqual([
      { name: "done", position: "0-1-10" },
      { name: "no-position", position: undefined },
    ]);
  });
});
