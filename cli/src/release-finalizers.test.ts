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
    const backup = { metadata: { name: "b", namespace: "shop" }, spec: { deletionPolicy: "Delete" }, status: { location: "s3://bk/x/shop/b/" } };
    expect(describeCleanup("MySQLBackup", backup, "stateward.io/delete-stored-backup").leftBehind).toBe("the backup folder s3://bk/x/shop/b/");
    expect(describeCleanup("MySQLBackup", { ...backup, status: {} }, "stateward.io/delete-stored-backup").leftBehind).toBeUndefined();
  });

  it("lists only Stateward finalizers, and says so for one it does not know", () => {
    const f = findingOf("DatabaseUser", user({}));
    expect(f?.finalizers.map((x) => x.name)).toEqual(["stateward.io/drop-account"]);
    expect(f?.beingDeleted).toBe(false);
    expect(findingOf("DatabaseUser", { metadata: { name: "x", finalizers: ["other.io/keep"] } })).toBeUndefined();
    expect(describeCleanup("MySQLRestore", { metadata: { name: "r" } }, "stateward.io/future").action).toMatch(/not known to this version/);
  });
});
