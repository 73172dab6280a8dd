import { describe, expect, it } from "vitest";
import { NameConflictError, type KubeObject } from "@stateward/core";
import type { MySQLCluster } from "../api.ts";
import { commonLabels } from "../resources/names.ts";
import { checkGeneratedSecret } from "./ownership.ts";

const cluster = { metadata: { name: "db", namespace: "ns", uid: "c1" }, spec: { storage: { size: "1Gi" } } } as unknown as MySQLCluster;
const secret = (name: string, meta: Partial<KubeObject["metadata"]> = {}): KubeObject => ({ metadata: { name, namespace: "ns", ...meta } });

describe("checkGeneratedSecret", () => {
  it("uses a Secret the cluster owns, or one generated for a cluster of this name and retained unowned", () => {
    expect(() => checkGeneratedSecret(secret("db-root", { ownerReferences: [{ apiVersion: "x", kind: "MySQLCluster", name: "db", uid: "c1", controller: true }] }), cluster)).not.toThrow();
    expect(() => checkGeneratedSecret(secret("db-replication", { labels: commonLabels("db") }), cluster)).not.toThrow();
  });

  it("refuses someone else's Secret of that name; for the root Secret it points at rootPasswordSecretRef", () => {
    expect(() => checkGeneratedSecret(secret("db-replication"), cluster)).toThrow(NameConflictError);
    expect(() => checkGeneratedSecret(secret("db-replication", { labels: commonLabels("other") }), cluster)).toThrow(/Secret db-replication already exists/);
    expect(() => checkGeneratedSecret(secret("db-root"), cluster)).toThrow(/set spec.rootPasswordSecretRef/);
  });
});
