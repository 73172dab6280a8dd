import { describe, expect, it } from "vitest";
import type { MySQLInstance } from "@stateward/mysql";
import type { ParsedGrant } from "./show-grants.ts";
import { ACCOUNT_CREATED_BY, adminPrivileges, creationClaim, isClusterInstance, knownOrigin, protectedAccount } from "./ownership.ts";

describe("protectedAccount", () => {
  const plain = { adminUser: "dba", cluster: false };

  it("refuses the instance's admin user and the system users, on any host", () => {
    expect(protectedAccount({ user: "dba", host: "10.0.%" }, plain)).toMatch(/admin account of the MySQLInstance/);
    for (const user of ["root", "mysql", "mariadb.sys", "mysql.sys", "mysql.session", "mysql.infoschema"]) {
      expect(protectedAccount({ user, host: "localhost" }, plain)).toMatch(/system account/);
    }
  });

  it("refuses the replication account only on a MySQLCluster's instance", () => {
    expect(protectedAccount({ user: "replication", host: "%" }, { adminUser: "root", cluster: true })).toMatch(/replication account of the MySQLCluster/);
    expect(protectedAccount({ user: "replication", host: "%" }, plain)).toBeUndefined();
  });

  it("lets any other account through, and names are exact (no case folding, no patterns)", () => {
    expect(protectedAccount({ user: "shop", host: "%" }, plain)).toBeUndefined();
    expect(protectedAccount({ user: "Root", host: "%" }, plain)).toBeUndefined();
    expect(protectedAccount({ user: "dba2", host: "%" }, plain)).toBeUndefined();
    expect(protectedAccount({ user: "dba", host: "%" }, { adminUser: undefined, cluster: false })).toBeUndefined();
  });
});

describe("knownOrigin", () => {
  it("is the recorded origin", () => {
    expect(knownOrigin({ status: { accountOrigin: "Created" } })).toBe("Created");
    expect(knownOrigin({ status: { accountOrigin: "Adopted", user: "a", passwordFingerprint: "f" } })).toBe("Adopted");
  });

  it("treats an account converged by a release without accountOrigin as adopted, and anything else as not ours", () => {
    expect(knownOrigin({ status: { user: "shop", host: "%", passwordFingerprint: "scrypt$x" } })).toBe("Adopted");
    expect(knownOrigin({ status: undefined })).toBeUndefined();
    expect(knownOrigin({ status: { conditions: [] } })).toBeUndefined();
    expect(knownOrigin({ status: { passwordFingerprint: "scrypt$x" } })).toBeUndefined();
  });

  const claimed = (uid: string, claim: string) => ({ uid, annotations: { [ACCOUNT_CREATED_BY]: claim } });

  it("is Created when the object carries its own creation claim and no status says otherwise (CREATE USER ran, the status write was lost)", () => {
    expect(knownOrigin({ metadata: claimed("u-1", "u-1"), status: undefined })).toBe("Created");
    expect(knownOrigin({ metadata: claimed("u-1", "u-1"), status: { conditions: [] } })).toBe("Created");
    // What the status recorded comes first.
    expect(knownOrigin({ metadata: claimed("u-1", "u-1"), status: { accountOrigin: "Adopted" } })).toBe("Adopted");
  });

  it("ignores a claim made for another object (a copied manifest) or for no object", () => {
    expect(knownOrigin({ metadata: claimed("u-2", "u-1"), status: undefined })).toBeUndefined();
    expect(knownOrigin({ metadata: claimed("", ""), status: undefined })).toBeUndefined();
    expect(knownOrigin({ metadata: { annotations: { [ACCOUNT_CREATED_BY]: "u-1" } }, status: undefined })).toBeUndefined();
    expect(knownOrigin({ metadata: { uid: "u-1", annotations: { "stateward.io/other": "u-1" } }, status: undefined })).toBeUndefined();
  });

  it("reads back the claim that creationClaim writes", () => {
    const metadata = { uid: "5e0c1d2a-uid", name: "app" };
    expect(creationClaim({ metadata })).toEqual({ [ACCOUNT_CREATED_BY]: "5e0c1d2a-uid" });
    expect(knownOrigin({ metadata: { ...metadata, annotations: creationClaim({ metadata }) } })).toBe("Created");
  });
});

describe("adminPrivileges", () => {
  const grant = (database: string, table: string, privileges: string[], grantOption = false): ParsedGrant => ({ kind: "object", privileges, columnPrivileges: [], database, table, grantOption });

  it("finds ALL, SUPER and the grant option on *.* only", () => {
    expect(adminPrivileges([grant("*", "*", ["ALL PRIVILEGES"], true)])).toEqual(["ALL PRIVILEGES", "GRANT OPTION"]);
    expect(adminPrivileges([grant("*", "*", ["SUPER", "SELECT"])])).toEqual(["SUPER"]);
    expect(adminPrivileges([grant("shop", "*", ["ALL PRIVILEGES"], true), grant("*", "*", ["SELECT"])])).toEqual([]);
  });
});

describe("isClusterInstance", () => {
  const instance = (ownerReferences: unknown[]) => ({ metadata: { name: "db", ownerReferences } }) as unknown as MySQLInstance;
  it("is true for the instance a MySQLCluster controls", () => {
    expect(isClusterInstance(instance([{ kind: "MySQLCluster", controller: true, name: "db", uid: "u", apiVersion: "stateward.io/v1alpha1" }]))).toBe(true);
    expect(isClusterInstance(instance([{ kind: "MySQLCluster", controller: false, name: "db", uid: "u", apiVersion: "stateward.io/v1alpha1" }]))).toBe(false);
    expect(isClusterInstance(instance([]))).toBe(false);
  });
});
