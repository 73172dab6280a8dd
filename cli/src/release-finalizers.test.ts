import { describe, expect, it } from "vitest";
import { describeCleanup, findingOf } from "./release-finalizers.ts";

const user = (spec: Record<string, unknown>) => ({ metadata: { name: "app", namespace: "shop", finalizers: ["stateward.io/drop-account", "other.io/keep"] }, spec: { instanceRef: { name: "db" }, ...spec } });

describe("release-finalizers: what each finalizer would have cleaned up", () => {
  it("names the MySQL account a DatabaseUser's finalizer would drop, and nothing under Retain", () => {
    expect(describeCleanup("DatabaseUser", user({}), "stateward.io/drop-account")).toEqual({
      action: "drop the MySQL account 'app'@'%' on MySQLInstance shop/db",
      leftBehind: "the MySQL account 'app'@'%' on MySQLInstance shop/db",
    });
    expect(describeCleanup("DatabaseUser", user({ user: "shop_rw", host: "10.0.%" }), "stateward.io/drop-account").leftBehind)
      .toBe("the MySQL account 'shop_rw'@'10.0.%' on MySQLInstance shop/db");
    expect(describeCleanup("DatabaseUser", user({ deletionPolicy: "Retain" }), "stateward.io/drop-account").leftBehind).toBeUndefined();
  });

  it("names the backup folder a MySQLBackup's finalizer would delete, and nothing when none was stored", () => {
    const storage = { s3: { bucket: "bk", prefix: "x", endpoint: "https://s3.example" } };
    const backup = {
      metadata: { name: "b", namespace: "shop" },
      spec: { deletionPolicy: "Delete", storage },
      status: { phase: "Completed", location: "s3://bk/x/shop/b/", storage: { bucket: "bk", prefix: "x/shop/b" } },
    };
    expect(describeCleanup("MySQLBackup", backup, "stateward.io/delete-stored-backup").leftBehind).toBe("the backup folder s3://bk/x/shop/b/");
    // Completed by a release that did not record status.storage: where the spec says, as the finalizer deletes it.
    expect(describeCleanup("MySQLBackup", { ...backup, status: { phase: "Completed" } }, "stateward.io/delete-stored-backup").leftBehind)
      .toBe("the backup folder s3://bk/x/shop/b/ at https://s3.example");
    expect(describeCleanup("MySQLBackup", { ...backup, status: {} }, "stateward.io/delete-stored-backup").leftBehind).toBeUndefined();
  });

  it("under Delete, names only the partial upload of a run that did not finish, and nothing for a failed one", () => {
    // A failed run's finalizer deletes nothing, and its location may be another backup's folder (it failed with BackupExists).
    const deleted = (phase: string) => ({ metadata: { name: "b", namespace: "shop" }, spec: { deletionPolicy: "Delete" }, status: { phase, location: "s3://bk/x/shop/other/" } });
    expect(describeCleanup("MySQLBackup", deleted("Failed"), "stateward.io/delete-stored-backup")).toEqual({
      action: "do nothing (the backup failed; its status and Events say whether its run left anything in the bucket)",
    });
    expect(describeCleanup("MySQLBackup", deleted("Running"), "stateward.io/delete-stored-backup").leftBehind)
      .toBe("the partial upload of a backup that did not finish, in s3://bk/x/shop/other/");
  });

  it("under Retain, names the partial upload of a backup that did not finish, and nothing once it did", () => {
    const retained = (phase: string) => ({ metadata: { name: "b", namespace: "shop" }, spec: {}, status: { phase, location: "s3://bk/x/shop/b/" } });
    expect(describeCleanup("MySQLBackup", retained("Running"), "stateward.io/delete-stored-backup")).toEqual({
      action: "remove the partial upload of a backup that did not finish, in s3://bk/x/shop/b/",
      leftBehind: "the partial upload of a backup that did not finish, in s3://bk/x/shop/b/",
    });
    expect(describeCleanup("MySQLBackup", retained("Completed"), "stateward.io/delete-stored-backup").leftBehind).toBeUndefined();
    expect(describeCleanup("MySQLBackup", retained("Failed"), "stateward.io/delete-stored-backup").leftBehind).toBeUndefined();
  });

  it("names the staging databases of a restore that did not finish, and nothing before it started or once it ended", () => {
    const restore = (phase?: string) => ({ metadata: { name: "r", namespace: "shop", uid: "0b7c7a3e-5f0e-4d55-9a3c-1f0e8a4b2c11" }, spec: { instanceRef: { name: "db" } }, status: phase ? { phase } : {} });
    const cleanup = describeCleanup("MySQLRestore", restore("Running"), "stateward.io/restore-cleanup");
    expect(cleanup.leftBehind).toMatch(/^the restore's staging databases \(stw_restore_[0-9a-f]{12}_\*\) on MySQLInstance shop\/db$/);
    expect(cleanup.action).toBe(`drop ${cleanup.leftBehind}`);
    for (const phase of [undefined, "Pending", "Completed", "Failed"]) expect(describeCleanup("MySQLRestore", restore(phase), "stateward.io/restore-cleanup").leftBehind).toBeUndefined();
    const inPlace = { ...restore("Running"), status: { phase: "Running", mode: "InPlace" } };
    expect(describeCleanup("MySQLRestore", inPlace, "stateward.io/restore-cleanup")).toEqual({ action: "do nothing (an in-place restore stages nothing; its target may hold part of the data)" });
  });

  it("says the in-use finalizer of a MySQLInstance and its Secrets cleans up nothing", () => {
    for (const kind of ["MySQLInstance", "Secret"]) {
      const f = findingOf(kind, { metadata: { name: "db", namespace: "shop", finalizers: ["stateward.io/in-use-by-databaseusers"] } });
      expect(f?.finalizers.map((x) => x.name)).toEqual(["stateward.io/in-use-by-databaseusers"]);
      expect(f?.finalizers[0]?.action).toMatch(/^do nothing \(it keeps the object while DatabaseUsers need it/);
      expect(f?.finalizers[0]?.leftBehind).toBeUndefined();
    }
  });

  it("lists only Stateward finalizers, and says so for one it does not know", () => {
    const f = findingOf("DatabaseUser", user({}));
    expect(f?.finalizers.map((x) => x.name)).toEqual(["stateward.io/drop-account"]);
    expect(f?.beingDeleted).toBe(false);
    expect(findingOf("DatabaseUser", { metadata: { name: "x", finalizers: ["other.io/keep"] } })).toBeUndefined();
    expect(describeCleanup("MySQLRestore", { metadata: { name: "r" } }, "stateward.io/future").action).toMatch(/not known to this version/);
  });
});
