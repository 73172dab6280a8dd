// What the real node changes on the machine, and how it is put back. The
// kubelet sets sysctls (kernel.panic_on_oops 0 -> 1 means any kernel oops
// reboots the machine), adds iptables chains, creates folders; containerd and
// the CNI plugins add mounts, network namespaces and the bridge. A snapshot
// is written BEFORE anything changes, and restoreHost() undoes everything
// relative to it, on every exit path: a normal stop, a failed start, and the
// next run's cleanup of a run that was killed.
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Sysctls the kubelet sets at start (its "protect kernel defaults" list, and what it tunes). */
export const KUBELET_SYSCTLS = [
  "vm.overcommit_memory",
  "vm.panic_on_oom",
  "kernel.panic",
  "kernel.panic_on_oops",
  "kernel.keys.root_maxkeys",
  "kernel.keys.root_maxbytes",
] as const;

/** Folders the node's components create when missing; removed again only if they were missing. */
export const CREATED_PATHS = ["/var/log/containers", "/var/log/pods", "/run/containerd", "/var/run/netns", "/var/lib/kubelet", "/var/lib/cni", "/etc/cni"] as const;

/** The tag of the /etc/hosts line that maps the node name to 127.0.0.1. */
export const HOSTS_TAG = "# stateward-realnode";

export interface HostSnapshot {
  sysctls: Record<string, string>;
  /** iptables / ip6tables: the chains whose names start with KUBE-, per table, before the node started. */
  kubeChains: Record<"iptables" | "ip6tables", string[]>;
  netns: string[];
  absentPaths: string[];
  bridgeExisted: boolean;
}

export interface HostFacts {
  sysctls: Record<string, string>;
  kubeChains: Record<"iptables" | "ip6tables", string[]>;
  netns: string[];
  links: string[];
  hostsLines: string[];
  presentPaths: string[];
}

/** The words of an `iptables -S` line (arguments with spaces are double-quoted there). */
export function iptablesWords(line: string): string[] {
  const words: string[] = [];
  for (const m of line.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)) words.push(m[1] !== undefined ? m[1].replaceAll('\\"', '"') : (m[2] ?? ""));
  return words;
}

async function quiet(command: string, args: string[]): Promise<string> {
  try {
    return (await run(command, args, { maxBuffer: 16 * 1024 * 1024 })).stdout;
  } catch {
    return "";
  }
}

function readSysctl(name: string): string | undefined {
  try {
    return readFileSync(`/proc/sys/${name.replaceAll(".", "/")}`, "utf8").trim();
  } catch {
    return undefined;
  }
}

async function kubeChains(cmd: "iptables" | "ip6tables"): Promise<string[]> {
  const chains: string[] = [];
  for (const table of ["filter", "nat", "mangle"]) {
    for (const line of (await quiet(cmd, ["-w", "-t", table, "-S"])).split("\n")) {
      const m = /^-N (KUBE-\S+)/.exec(line);
      if (m?.[1]) chains.push(`${table}/${m[1]}`);
    }
  }
  return chains.sort();
}

function netnsNames(): string[] {
  return existsSync("/var/run/netns") ? readdirSync("/var/run/netns").sort() : [];
}

/** The facts a host check compares before and after (also what the snapshot keeps). */
export async function hostFacts(): Promise<HostFacts> {
  const sysctls: Record<string, string> = {};
  for (const s of KUBELET_SYSCTLS) {
    const v = readSysctl(s);
    if (v !== undefined) sysctls[s] = v;
  }
  const links = (await quiet("ip", ["-o", "link", "show"]))
    .split("\n")
    .map((l) => /^\d+: ([^:@]+)/.exec(l)?.[1] ?? "")
    .filter((l) => l && !l.startsWith("veth"))
    .sort();
  return {
    sysctls,
    kubeChains: { iptables: await kubeChains("iptables"), ip6tables: await kubeChains("ip6tables") },
    netns: netnsNames(),
    links,
    hostsLines: readFileSync("/etc/hosts", "utf8").split("\n").filter((l) => l.includes(HOSTS_TAG)),
    presentPaths: CREATED_PATHS.filter((p) => existsSync(p)),
  };
}

export async function takeSnapshot(file: string, bridge: string): Promise<HostSnapshot> {
  const facts = await hostFacts();
  const snapshot: HostSnapshot = {
    sysctls: facts.sysctls,
    kubeChains: facts.kubeChains,
    netns: facts.netns,
    absentPaths: CREATED_PATHS.filter((p) => !existsSync(p)),
    bridgeExisted: facts.links.includes(bridge),
  };
  writeFileSync(file, JSON.stringify(snapshot, null, 2));
  return snapshot;
}

export function readSnapshot(file: string): HostSnapshot | undefined {
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as HostSnapshot) : undefined;
}

/** Mount points under any of `prefixes`, deepest first. */
function mountsUnder(prefixes: string[]): string[] {
  const mounts = readFileSync("/proc/self/mounts", "utf8")
    .split("\n")
    .map((l) => (l.split(" ")[1] ?? "").replaceAll("\\040", " "))
    .filter((m) => prefixes.some((p) => m === p || m.startsWith(`${p}/`)));
  return [...new Set(mounts)].sort((a, b) => b.length - a.length);
}

export async function unmountUnder(prefixes: string[]): Promise<void> {
  // Nested mounts (a volume inside a rootfs) need several passes.
  for (let pass = 0; pass < 5; pass++) {
    const mounts = mountsUnder(prefixes);
    if (mounts.length === 0) return;
    for (const m of mounts) await quiet("umount", ["-l", m]);
  }
}

/** Removes `dir` and the folders below it, deepest first (cgroup folders cannot be rm -rf'ed). */
export function removeCgroupTree(dir: string): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) removeCgroupTree(join(dir, entry.name));
  try {
    rmdirSync(dir);
  } catch {
    // processes still inside: reported by the caller's host check
  }
}

/**
 * Puts the host back as `snapshot` found it: network namespaces, the bridge,
 * KUBE- iptables chains, sysctls, the /etc/hosts line, folders that were
 * absent. Processes must be stopped and mounts removed before (RealNode.stop).
 */
export async function restoreHost(snapshot: HostSnapshot, opts: { bridge: string }): Promise<void> {
  for (const ns of netnsNames()) {
    if (snapshot.netns.includes(ns) || !ns.startsWith("cni-")) continue;
    const path = join("/var/run/netns", ns);
    await quiet("umount", ["-l", path]);
    rmSync(path, { force: true });
  }
  if (!snapshot.bridgeExisted) await quiet("ip", ["link", "del", opts.bridge]);

  for (const cmd of ["iptables", "ip6tables"] as const) {
    const before = new Set(snapshot.kubeChains[cmd]);
    const added = (await kubeChains(cmd)).filter((c) => !before.has(c));
    // Jumps into an added chain first (a referenced chain cannot be deleted).
    for (const table of ["filter", "nat", "mangle"]) {
      const addedHere = new Set(added.filter((c) => c.startsWith(`${table}/`)).map((c) => c.slice(table.length + 1)));
      if (addedHere.size === 0) continue;
      for (const line of (await quiet(cmd, ["-w", "-t", table, "-S"])).split("\n")) {
        const words = iptablesWords(line);
        const [op, chain] = words;
        const target = words[words.indexOf("-j") + 1];
        if (op === "-A" && chain && !addedHere.has(chain) && words.includes("-j") && target && addedHere.has(target)) {
          await quiet(cmd, ["-w", "-t", table, "-D", chain, ...words.slice(2)]);
        }
      }
      for (const chain of addedHere) await quiet(cmd, ["-w", "-t", table, "-F", chain]);
      for (const chain of addedHere) await quiet(cmd, ["-w", "-t", table, "-X", chain]);
    }
  }

  for (const [name, value] of Object.entries(snapshot.sysctls)) {
    if (readSysctl(name) !== value) writeFileSync(`/proc/sys/${name.replaceAll(".", "/")}`, value);
  }

  const hosts = readFileSync("/etc/hosts", "utf8");
  if (hosts.includes(HOSTS_TAG)) {
    writeFileSync("/etc/hosts", hosts.split("\n").filter((l) => !l.includes(HOSTS_TAG)).join("\n"));
  }
  for (const p of snapshot.absentPaths) rmSync(p, { recursive: true, force: true });
}
