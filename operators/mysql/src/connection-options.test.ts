import { describe, expect, it } from "vitest";
import { ownConnectionSsl, poolOptions, sslOptions, type ConnectionSettings } from "./connection-options.ts";

describe("sslOptions", () => {
  it("maps each TLS mode as MySQL's client does", () => {
    expect(sslOptions("disabled", "CA")).toBeUndefined();
    expect(sslOptions("preferred", undefined)).toEqual({ rejectUnauthorized: false });
    expect(sslOptions("preferred", undefined, false)).toBeUndefined();
    expect(sslOptions("required", "CA")).toEqual({ rejectUnauthorized: false });
    expect(sslOptions("verify-ca", "CA")).toEqual({ ca: "CA", rejectUnauthorized: true, verifyIdentity: false });
    expect(sslOptions("verify-identity", "CA")).toEqual({ ca: "CA", rejectUnauthorized: true, verifyIdentity: true });
    expect(sslOptions("verify-identity", undefined)).toEqual({ rejectUnauthorized: true, verifyIdentity: true });
  });
});

describe("poolOptions", () => {
  it("never allows several statements per query, and bounds the pool", () => {
    const o = poolOptions({ host: "db", port: 3306, user: "root", password: "", tlsMode: "disabled", ca: undefined });
    expect(o).toMatchObject({ host: "db", port: 3306, user: "root", multipleStatements: false, connectionLimit: 4, maxIdle: 2, maxPreparedStatements: 1 });
    expect(o).not.toHaveProperty("ssl");
  });
});

describe("ownConnectionSsl", () => {
  const preferred: ConnectionSettings = { host: "db", port: 3306, user: "root", password: "", tlsMode: "preferred", ca: undefined };
  it("attempts TLS under preferred unless the server is known to offer none", () => {
    expect(ownConnectionSsl(preferred)).toEqual({ rejectUnauthorized: false });
    expect(ownConnectionSsl({ ...preferred, tlsOffered: true })).toEqual({ rejectUnauthorized: false });
    expect(ownConnectionSsl({ ...preferred, tlsOffered: false })).toBeUndefined();
    // Only preferred has a fallback: required stays encrypted whatever was found.
    expect(ownConnectionSsl({ ...preferred, tlsMode: "required", tlsOffered: false })).toEqual({ rejectUnauthorized: false });
  });
});
