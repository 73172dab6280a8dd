import { MySQLInstanceKind } from "@stateward/mysql";
import { PRIVILEGE_NAMES } from "./privileges.ts";
import { describe, expect, it } from "vitest";
import { DatabaseUserKind } from "./api.ts";

describe("the CRDs", () => {
  const dbu = DatabaseUserKind.crdManifest();
  const version = dbu.spec.versions[0];
  const spec = version?.schema.openAPIV3Schema.properties?.spec;

  it("name DatabaseUser dbu, in the stateward category, with the columns of the issue", () => {
    expect(dbu.metadata.name).toBe("databaseusers.stateward.io");
    expect(dbu.spec.names).toMatchObject({ kind: "DatabaseUser", shortNames: ["dbu"], categories: ["stateward"] });
    expect(version?.additionalPrinterColumns.map((c) => c.name)).toEqual(["User", "Host", "Instance", "Ready", "Reason", "Age"]);
    const myi = MySQLInstanceKind.crdManifest();
    expect(myi.spec.versions[0]?.additionalPrinterColumns.filter((c) => !c.priority).map((c) => c.name)).toEqual(["Host", "Port", "Flavor", "Version", "Ready", "Age"]);
  });

  it("enumerate the privileges, and keep grants a map by database and table", () => {
    const grants = spec?.properties?.grants;
    expect(grants?.items?.properties?.privileges?.items?.enum).toEqual(PRIVILEGE_NAMES);
    expect(PRIVILEGE_NAMES).not.toContain("USAGE");
    expect(PRIVILEGE_NAMES).not.toContain("GRANT OPTION");
    expect(grants).toMatchObject({ "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["database", "table"] });
  });

  it("defaults what docs/conventions.md and the README promise (host %, Delete, port 3306)", () => {
    const p = spec?.properties ?? {};
    expect(p.host?.default).toBe("%");
    expect(p.deletionPolicy).toMatchObject({ enum: ["Delete", "Retain"], default: "Delete" });
    expect(p.tlsRequirement).toMatchObject({ enum: ["None", "SSL", "X509"], default: "None" });
    expect(p.passwordSecretRef?.properties?.key?.default).toBe("password");
    expect(MySQLInstanceKind.crdManifest().spec.versions[0]?.schema.openAPIV3Schema.properties?.spec?.properties?.port?.default).toBe(3306);
  });
});
