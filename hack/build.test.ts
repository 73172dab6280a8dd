import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

// The image's build stage runs hack/build.ts from a context that holds only what .dockerignore lets
// through and the Dockerfile copies: a module the build imports must be in both, or `docker build`
// fails where `make build` works.
const root = join(import.meta.dirname, "..");
const read = (file: string) => readFileSync(join(root, file), "utf8");

describe("the image's build stage", () => {
  const modules = [...read("hack/build.ts").matchAll(/^import [^;]* from "\.\/([^"]+)";$/gm)].map((m) => `hack/${m[1]}`);

  it("has every module hack/build.ts imports", () => {
    expect(modules).toContain("hack/bundle-plugins.ts");
    const copied = [...read("Dockerfile").matchAll(/^COPY (hack\/.*) hack\/$/gm)].flatMap((m) => m[1]!.split(/\s+/));
    const allowed = read(".dockerignore").split("\n").filter((line) => line.startsWith("!hack/")).map((line) => line.slice(1));
    for (const file of ["hack/build.ts", ...modules]) {
      expect(copied, `the Dockerfile copies ${file}`).toContain(file);
      expect(allowed, `.dockerignore lets ${file} through`).toContain(file);
    }
  });
});
