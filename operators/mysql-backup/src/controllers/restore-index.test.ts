import { describe, expect, it } from "vitest";
import type { MySQLRestore } from "../api.ts";
import { restoreBackupRef, waitsForBackup } from "./restore-index.ts";

const restore = (source: MySQLRestore["spec"]["source"], phase?: string): MySQLRestore =>
  ({ metadata: { name: "r", namespace: "shop" }, spec: { instanceRef: { name: "db" }, source }, status: phase ? { phase } : undefined }) as unknown as MySQLRestore;

describe("restoreBackupRef", () => {
  it("indexes a restore by the MySQLBackup it names, in its own namespace", () => {
    expect(restoreBackupRef(restore({ backupRef: { name: "nightly" } }))).toEqual(["shop/nightly"]);
  });

  it("indexes a point-in-time restore by the backup it chose, once, also when it names it", () => {
    const chosen = { ...restore(undefined, "Running"), status: { phase: "Running", pointInTime: { backup: "hourly-1" } } } as unknown as MySQLRestore;
    expect(restoreBackupRef(chosen)).toEqual(["shop/hourly-1"]);
    const named = { ...restore({ backupRef: { name: "hourly-1" } }), status: { pointInTime: { backup: "hourly-1" } } } as unknown as MySQLRestore;
    expect(restoreBackupRef(named)).toEqual(["shop/hourly-1"]);
  });

  it("leaves out a restore from an S3 path", () => {
    expect(restoreBackupRef(restore({ s3: { bucket: "b", path: "p", credentialsSecretRef: { name: "s" } } }))).toEqual([]);
  });
});

describe("waitsForBackup", () => {
  it("is true only for a restore that has not started", () => {
    expect(waitsForBackup(restore({ backupRef: { name: "x" } }))).toBe(true);
    expect(waitsForBackup(restore({ backupRef: { name: "x" } }, "Pending"))).toBe(true);
    for (const phase of ["Running", "Completed", "Failed"]) expect(waitsForBackup(restore({ backupRef: { name: "x" } }, phase))).toBe(false);
  });
});
