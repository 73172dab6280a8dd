// A memory cgroup (v1) of its own for one process under test, limited as a container would
// be: the kernel then does to that process what it does to a Pod at its memory limit
// (reclaim, then the OOM killer), instead of the test machine's 24 GiB letting any growth
// through. The process joins the cgroup before it execs (a shell that writes its own pid to
// cgroup.procs, then `exec`s the command), so none of its allocations are charged elsewhere.
// Needs write access to the memory controller (root, cgroup v1); the caller skips otherwise.
import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const controller = "/sys/fs/cgroup/memory";

/** Why no memory cgroup can be made here, or undefined when one can. */
export function memoryCgroupUnavailable(): string | undefined {
  if (!existsSync(join(controller, "memory.limit_in_bytes"))) return `no cgroup v1 memory controller at ${controller}`;
  try {
    accessSync(controller, constants.W_OK);
  } catch {
    return `${controller} is not writable (run as root)`;
  }
  return undefined;
}

export interface MemoryCgroupUsage {
  /** memory.max_usage_in_bytes: the highest charge since the cgroup was made, page cache included. */
  peakBytes: number;
  /** memory.failcnt: how often the charge reached the limit (the kernel then reclaimed, e.g. page cache). */
  limitHits: number;
  /** oom_kill in memory.oom_control: processes the OOM killer ended in this cgroup. */
  oomKills: number;
  /** memory.stat's rss and cache now: anonymous memory, and page cache (files written, e.g. the log). */
  rssBytes: number;
  cacheBytes: number;
}

export interface MemoryCgroup {
  readonly path: string;
  readonly limitBytes: number;
  /** `command args…` as a command that first joins this cgroup, then execs (same pid). */
  wrap(command: string, args: readonly string[]): { command: string; args: string[] };
  usage(): MemoryCgroupUsage;
  /** Removes the cgroup; its processes must have exited (retries while the kernel lets go of them). */
  remove(): Promise<void>;
}

function readNumber(file: string): number {
  return Number(readFileSync(file, "utf8").trim());
}

function statField(text: string, name: string): number {
  const m = new RegExp(`^${name} (\\d+)$`, "m").exec(text);
  return m ? Number(m[1]) : 0;
}

export function createMemoryCgroup(limitBytes: number, name = `stateward-test-${randomBytes(4).toString("hex")}`): MemoryCgroup {
  const path = join(controller, name);
  mkdirSync(path);
  try {
    writeFileSync(join(path, "memory.limit_in_bytes"), String(limitBytes));
  } catch (err) {
    rmdirSync(path);
    throw err;
  }
  return {
    path,
    limitBytes,
    wrap: (command, args) => ({
      command: "/bin/sh",
      // $0 is the cgroup folder; the rest is the command, passed as arguments, never parsed by the shell.
      args: ["-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', path, command, ...args],
    }),
    usage: () => {
      const stat = readFileSync(join(path, "memory.stat"), "utf8");
      return {
        peakBytes: readNumber(join(path, "memory.max_usage_in_bytes")),
        limitHits: readNumber(join(path, "memory.failcnt")),
        oomKills: statField(readFileSync(join(path, "memory.oom_control"), "utf8"), "oom_kill"),
        rssBytes: statField(stat, "rss"),
        cacheBytes: statField(stat, "cache"),
      };
    },
    remove: async () => {
      for (let attempt = 0; ; attempt++) {
        try {
          rmdirSync(path);
          return;
        } catch (err) {
          // EBUSY while an exited process is still being torn down.
          if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
          if (attempt >= 50) throw err;
          await sleep(100);
        }
      }
    },
  };
}
