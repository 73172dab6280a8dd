import { describe, expect, it } from "vitest";
import { MAX_SCHEDULE_NAME_LENGTH, MySQLBackupScheduleKind } from "./api.ts";
import { backupNameFor } from "./controllers/schedule-reconciler.ts";

// What the API server checks: a label value (63 at most) and an object name (a DNS subdomain, 253 at most).
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

describe("the MySQLBackupSchedule CRD", () => {
  const root = MySQLBackupScheduleKind.crdManifest().spec.versions[0]?.schema.openAPIV3Schema;

  it("refuses a name longer than the longest label value at apply time (each backup's stateward.io/backup-schedule label)", () => {
    expect(MAX_SCHEDULE_NAME_LENGTH).toBe(63);
    expect(root?.["x-kubernetes-validations"]).toEqual([
      {
        rule: "self.metadata.name.size() <= 63",
        message: "metadata.name is longer than 63 characters, the longest label value: each MySQLBackup of the schedule carries the name in the label stateward.io/backup-schedule",
      },
    ]);
  });

  it("lets through only names whose derived label value and backup names the API server accepts", () => {
    const isLabelValue = (v: string) => v.length <= 63 && LABEL_VALUE.test(v);
    const longest = `s${"x".repeat(MAX_SCHEDULE_NAME_LENGTH - 4)}.a1`;
    expect(longest).toHaveLength(MAX_SCHEDULE_NAME_LENGTH);
    expect(isLabelValue(longest)).toBe(true);
    expect(isLabelValue(`${longest}x`)).toBe(false);
    const backup = backupNameFor(longest, new Date("2026-12-31T23:59:59.999Z"));
    expect(backup).toBe(`${longest}-20261231235959`);
    expect(backup.length).toBeLessThanOrEqual(253 - 16); // room for its Events' names, "<backup>.<16 hex>"
    expect(SUBDOMAIN.test(backup)).toBe(true);
  });
});
