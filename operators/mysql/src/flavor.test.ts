import { describe, expect, it } from "vitest";
import { atLeast, detectServer, flavorOf } from "./flavor.ts";

describe("flavorOf", () => {
  it("tells MariaDB from MySQL by the version string", () => {
    expect(flavorOf("10.11.19-MariaDB-0+deb12u1")).toBe("MariaDB");
    expect(flavorOf("8.4.3")).toBe("MySQL");
  });
});

describe("detectServer", () => {
  it("recognises MariaDB by its version string, with or without the replication prefix", () => {
    expect(detectServer("10.11.19-MariaDB-0+deb12u1", "Debian 12")).toEqual({
      flavor: "MariaDB",
      version: "10.11.19",
      major: 10,
      minor: 11,
      patch: 19,
      versionString: "10.11.19-MariaDB-0+deb12u1",
    });
    expect(detectServer("5.5.5-10.6.16-MariaDB-log")).toMatchObject({ flavor: "MariaDB", version: "10.6.16" });
    expect(detectServer("11.4.2-MariaDB")).toMatchObject({ flavor: "MariaDB", major: 11 });
  });

  it("takes everything else for MySQL, Percona and cloud builds included", () => {
    expect(detectServer("8.0.36", "MySQL Community Server - GPL")).toMatchObject({ flavor: "MySQL", version: "8.0.36" });
    expect(detectServer("8.0.35-27", "Percona Server (GPL), Release 27")).toMatchObject({ flavor: "MySQL", version: "8.0.35" });
    expect(detectServer("8.4.0-commercial")).toMatchObject({ flavor: "MySQL", major: 8, minor: 4 });
  });

  it("refuses a version it cannot read", () => {
    expect(() => detectServer("unknown")).toThrow(/cannot read a version number/);
  });
});

describe("atLeast", () => {
  it("compares major, then minor, then patch", () => {
    const v = detectServer("10.5.2-MariaDB");
    expect(atLeast(v, 10, 5, 2)).toBe(true);
    expect(atLeast(v, 10, 5, 3)).toBe(false);
    expect(atLeast(v, 10, 4)).toBe(true);
    expect(atLeast(v, 11)).toBe(false);
    expect(atLeast(v, 9, 99, 99)).toBe(true);
  });
});
