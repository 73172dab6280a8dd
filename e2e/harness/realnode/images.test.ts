import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { hostDebianMirrors } from "./images.ts";

describe("hostDebianMirrors", () => {
  let dir = "";
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("takes the archive and security mirrors from the machine's deb822 and one-line apt sources", () => {
    dir = mkdtempSync(join(tmpdir(), "apt-"));
    mkdirSync(join(dir, "sources.list.d"));
    writeFileSync(
      join(dir, "sources.list.d", "debian.sources"),
      [
        "Types: deb",
        "URIs: http://mirror.example/debian",
        "Suites: bookworm bookworm-updates",
        "Components: main",
        "",
        "Types: deb-src",
        "URIs: http://src.example/debian",
        "Suites: bookworm-security",
        "",
        "Types: deb",
        "# a comment line",
        "URIs: http://mirror.example/debian-security",
        "Suites: bookworm-security",
      ].join("\n"),
    );
    writeFileSync(join(dir, "sources.list"), "deb [arch=amd64] https://other.example/apt stable main\n");
    expect(hostDebianMirrors("bookworm", dir)).toEqual({ main: "http://mirror.example/debian", security: "http://mirror.example/debian-security" });
    expect(hostDebianMirrors("trixie", dir)).toEqual({ main: undefined, security: undefined });
  });

  it("reads one-line entries", () => {
    dir = mkdtempSync(join(tmpdir(), "apt-"));
    writeFileSync(join(dir, "sources.list"), "deb http://a.example/debian bookworm main\ndeb http://a.example/security bookworm-security main\n");
    expect(hostDebianMirrors("bookworm", dir)).toEqual({ main: "http://a.example/debian", security: "http://a.example/security" });
  });
});
