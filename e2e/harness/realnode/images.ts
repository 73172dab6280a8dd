// The real node's images, built on this machine without a registry or Docker:
// one-layer docker-archive tarballs (what `docker save` writes) that the node's
// containerd imports. Each is cached in $STATEWARD_CACHE/node-images/ under a
// key made of its inputs (the files below and RECIPE_REVISION), so an image is
// built once per machine and again only when what makes it changes.
//
//   localhost/pause:3.10         the sandbox of every pod (images/pause, a Go program)
//   localhost/busybox:1.35       a shell image (Debian's busybox-static)
//   localhost/mariadb:10.11      Debian bookworm's mariadb-server with the project's entrypoint
//   localhost/mariadb:10.11-rev2 the same server in a second image (another image id), so that
//                                changing a MySQLCluster's image is a real rolling change
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { cacheDir } from "../tools.ts";
import { EnvironmentError } from "../process.ts";

const run = promisify(execFile);
const here = import.meta.dirname;
const imagesSrc = join(here, "images");

export const imageRefs = {
  pause: "localhost/pause:3.10",
  shell: "localhost/busybox:1.35",
  mariadb: "localhost/mariadb:10.11",
  mariadbRev2: "localhost/mariadb:10.11-rev2",
} as const;

/** Bump when the build steps in this file change: part of every image's key. */
const RECIPE_REVISION = "1";
/** The Debian release the images come from; part of every Debian image's key. */
const DEBIAN_SUITE = "bookworm";

interface ImageRecipe {
  name: string;
  /** Files whose content decides the image (besides this builder). */
  inputs: string[];
  /** Extra text in the key (suite, package list). */
  salt: string;
}

const recipes: ImageRecipe[] = [
  { name: "pause", inputs: [join(imagesSrc, "pause", "main.go"), join(imagesSrc, "pause", "go.mod")], salt: "" },
  { name: "busybox", inputs: ["/bin/busybox"], salt: "" },
  {
    name: "mariadb",
    inputs: ["docker-entrypoint.sh", "essential-hook.sh", "customize-hook.sh"].map((f) => join(imagesSrc, "mariadb", f)),
    salt: `${DEBIAN_SUITE} mariadb-server mariadb-client`,
  },
];

export const imageNames = recipes.map((r) => r.name);

function imageKey(recipe: ImageRecipe): string {
  const h = createHash("sha256");
  h.update(RECIPE_REVISION);
  h.update(recipe.salt);
  for (const f of recipe.inputs) h.update(existsSync(f) ? readFileSync(f) : `missing ${f}`);
  return h.digest("hex").slice(0, 16);
}

function imageDir(recipe: ImageRecipe): string {
  return join(cacheDir, "node-images", `${recipe.name}-${imageKey(recipe)}`);
}

/** The built tarballs to import, or a message naming what is missing. */
export function builtImages(): { tarballs: string[]; missing: string[] } {
  const tarballs: string[] = [];
  const missing: string[] = [];
  for (const r of recipes) {
    const dir = imageDir(r);
    if (!existsSync(join(dir, ".complete"))) {
      missing.push(r.name);
      continue;
    }
    tarballs.push(...readdirSync(dir).filter((f) => f.endsWith(".tar")).sort().map((f) => join(dir, f)));
  }
  return { tarballs, missing };
}

async function sh(command: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<void> {
  try {
    await run(command, args, { ...opts, maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string };
    const tail = `${e.stdout ?? ""}\n${e.stderr ?? ""}`.trim().split("\n").slice(-30).join("\n");
    throw new EnvironmentError(`${command} ${args.slice(0, 3).join(" ")} … failed:\n${tail}`);
  }
}

async function sha256File(path: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest("hex");
}

/**
 * Writes one docker-archive tarball holding an image for each of `refs`, all
 * on the one layer `layerTar` (stored once); each ref has its own config, so
 * two refs are two image ids.
 */
async function writeArchive(work: string, layerTar: string, refs: { ref: string; config: Record<string, unknown> }[], out: string): Promise<void> {
  const layer = await sha256File(layerTar);
  const dir = join(work, "archive");
  mkdirSync(join(dir, layer), { recursive: true });
  await sh("ln", [layerTar, join(dir, layer, "layer.tar")]);
  const manifest = refs.map(({ ref, config }) => {
    const image = {
      architecture: "amd64",
      os: "linux",
      created: "1970-01-01T00:00:00Z",
      config: { Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], ...config },
      rootfs: { type: "layers", diff_ids: [`sha256:${layer}`] },
      history: [{ created: "1970-01-01T00:00:00Z", created_by: "stateward e2e/harness/realnode/images.ts" }],
    };
    const data = Buffer.from(JSON.stringify(image));
    const configName = `${createHash("sha256").update(data).digest("hex")}.json`;
    writeFileSync(join(dir, configName), data);
    return { Config: configName, RepoTags: [ref], Layers: [`${layer}/layer.tar`] };
  });
  writeFileSync(join(dir, "manifest.json"), JSON.stringify(manifest));
  // Written beside, then renamed: an importer never sees a half-written tarball.
  await sh("tar", ["--hard-dereference", "-C", dir, "-cf", `${out}.partial`, "."]);
  renameSync(`${out}.partial`, out);
}

/** A layer from a folder: numeric owners, sorted, fixed times (the same folder gives the same digest). */
async function layerFromDir(root: string, out: string): Promise<void> {
  await sh("tar", ["--numeric-owner", "--sort=name", "--mtime=@0", "-C", root, "-cf", out, "."]);
}

async function buildOne(recipe: ImageRecipe, work: string, out: string): Promise<void> {
  const root = join(work, "rootfs");
  const layer = join(work, "layer.tar");
  switch (recipe.name) {
    case "pause": {
      mkdirSync(root, { recursive: true });
      await sh("go", ["build", "-trimpath", "-ldflags", "-s -w", "-o", join(root, "pause"), "."], {
        cwd: join(imagesSrc, "pause"),
        env: { ...process.env, CGO_ENABLED: "0", GOFLAGS: "", GOCACHE: process.env.GOCACHE ?? join(cacheDir, "go", "build") },
      });
      await layerFromDir(root, layer);
      await writeArchive(work, layer, [{ ref: imageRefs.pause, config: { Entrypoint: ["/pause"], User: "65535:65535" } }], join(out, "pause.tar"));
      return;
    }
    case "busybox": {
      for (const d of ["bin", "etc", "tmp", "root"]) mkdirSync(join(root, d), { recursive: true });
      await sh("cp", ["/bin/busybox", join(root, "bin", "busybox")]);
      const { stdout } = await run("/bin/busybox", ["--list"]);
      for (const applet of stdout.split("\n").filter((a) => a && a !== "busybox")) await sh("ln", ["-sf", "busybox", join(root, "bin", applet)]);
      writeFileSync(join(root, "etc", "passwd"), "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n");
      writeFileSync(join(root, "etc", "group"), "root:x:0:\nnogroup:x:65534:\n");
      await sh("chmod", ["1777", join(root, "tmp")]);
      await layerFromDir(root, layer);
      await writeArchive(work, layer, [{ ref: imageRefs.shell, config: { Cmd: ["sh"] } }], join(out, "busybox.tar"));
      return;
    }
    case "mariadb": {
      const host = hostDebianMirrors(DEBIAN_SUITE);
      const mirror = process.env.DEBIAN_MIRROR ?? host.main;
      const security = process.env.DEBIAN_SECURITY_MIRROR ?? host.security;
      if (!mirror || !security) {
        throw new EnvironmentError(
          `no Debian ${DEBIAN_SUITE} mirror found in this machine's apt sources (/etc/apt/sources.list{,.d/}): set DEBIAN_MIRROR and DEBIAN_SECURITY_MIRROR`,
        );
      }
      const hooks = join(imagesSrc, "mariadb");
      await sh("mmdebstrap", [
        "--variant=minbase",
        "--include=mariadb-server,mariadb-client",
        "--dpkgopt=path-exclude=/usr/share/man/*",
        "--dpkgopt=path-exclude=/usr/share/doc/*",
        "--dpkgopt=path-exclude=/usr/share/locale/*",
        "--dpkgopt=path-include=/usr/share/doc/*/copyright",
        `--essential-hook=${join(hooks, "essential-hook.sh")} "$1"`,
        // mmdebstrap's /run cleanup would remove /run/mysqld; the customize hook cleans /run itself.
        "--skip=cleanup/run",
        `--customize-hook=${join(hooks, "customize-hook.sh")} "$1"`,
        DEBIAN_SUITE,
        layer,
        `deb ${mirror} ${DEBIAN_SUITE} main`,
        `deb ${mirror} ${DEBIAN_SUITE}-updates main`,
        `deb ${security} ${DEBIAN_SUITE}-security main`,
      ]);
      const config = { Entrypoint: ["docker-entrypoint.sh"], Cmd: ["mariadbd"], ExposedPorts: { "3306/tcp": {} }, Volumes: { "/var/lib/mysql": {} } };
      await writeArchive(
        work,
        layer,
        [
          { ref: imageRefs.mariadb, config },
          { ref: imageRefs.mariadbRev2, config: { ...config, Labels: { "io.stateward.image-revision": "2" } } },
        ],
        join(out, "mariadb.tar"),
      );
      return;
    }
    default:
      throw new EnvironmentError(`unknown node image ${recipe.name}`);
  }
}

/**
 * The archive and security mirrors this machine's apt already uses for `suite`
 * (deb822 `.sources` files and one-line `sources.list` entries): the image is
 * built from the same place the machine's own packages come from.
 */
export function hostDebianMirrors(suite: string, aptDir = "/etc/apt"): { main?: string; security?: string } {
  const entries: { uri: string; suites: string[] }[] = [];
  const files = [join(aptDir, "sources.list")];
  const dir = join(aptDir, "sources.list.d");
  if (existsSync(dir)) for (const f of readdirSync(dir)) files.push(join(dir, f));
  for (const file of files) {
    if (!existsSync(file)) continue;
    const text = readFileSync(file, "utf8");
    if (file.endsWith(".sources")) {
      for (const block of text.split(/\n\s*\n/)) {
        const field = (name: string) => block.match(new RegExp(`^${name}:\\s*(.+)$`, "mi"))?.[1]?.trim().split(/\s+/) ?? [];
        if (!field("Types").includes("deb")) continue;
        for (const uri of field("URIs")) entries.push({ uri, suites: field("Suites") });
      }
    } else if (file.endsWith(".list")) {
      for (const line of text.split("\n")) {
        const m = line.match(/^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/);
        if (m?.[1] && m[2]) entries.push({ uri: m[1], suites: [m[2]] });
      }
    }
  }
  return {
    main: entries.find((e) => e.suites.includes(suite))?.uri,
    security: entries.find((e) => e.suites.includes(`${suite}-security`))?.uri,
  };
}

/** Builds the images not in the cache yet (all, or those named). Returns what was built, with seconds. */
export async function buildImages(names: string[] = imageNames, log: (line: string) => void = () => undefined): Promise<string[]> {
  const built: string[] = [];
  for (const recipe of recipes.filter((r) => names.includes(r.name))) {
    const out = imageDir(recipe);
    if (existsSync(join(out, ".complete"))) continue;
    const started = Date.now();
    log(`building node image ${recipe.name} (once per machine) -> ${out}`);
    const work = `${out}.work`;
    rmSync(work, { recursive: true, force: true });
    rmSync(out, { recursive: true, force: true });
    mkdirSync(work, { recursive: true });
    mkdirSync(out, { recursive: true });
    try {
      await buildOne(recipe, work, out);
      writeFileSync(join(out, ".complete"), "");
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    const seconds = Math.round((Date.now() - started) / 1000);
    log(`built node image ${recipe.name} in ${seconds} s`);
    built.push(`${recipe.name} (${seconds} s)`);
  }
  return built;
}
