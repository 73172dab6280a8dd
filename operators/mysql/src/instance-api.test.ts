import { describe, expect, it } from "vitest";
import { instanceSecrets, type MySQLInstance } from "./instance-api.ts";

describe("instanceSecrets", () => {
  const instance = (tls?: MySQLInstance["spec"]["tls"]): MySQLInstance => ({
    apiVersion: "stateward.io/v1alpha1",
    kind: "MySQLInstance",
    metadata: { name: "db", namespace: "team" },
    spec: { host: "db", adminSecretRef: { name: "admin" }, ...(tls ? { tls } : {}) },
  });

  it("names the admin Secret, and the CA Secret when there is one", () => {
    expect(instanceSecrets(instance())).toEqual(["team/admin"]);
    expect(instanceSecrets(instance({ mode: "verify-ca", caSecretRef: { name: "ca" } }))).toEqual(["team/admin", "team/ca"]);
  });
});
