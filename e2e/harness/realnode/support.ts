// Can this machine run the real node? It needs root (the kubelet and
// containerd mount, make network namespaces, write cgroups and sysctls), a
// cgroup file system, Debian's containerd + runc + CNI plugins + iptables
// (hack/realnode-packages.sh installs them), the kubelet built from the
// pinned Kubernetes modules and the node images in the machine cache.
import { accessSync, constants, existsSync } from "node:fs";
import { join } from "node:path";
import { cacheDir, versions } from "../tools.ts";
import { builtImages } from "./images.ts";

/** Debian's plugin folder (containernetworking-plugins). */
export const CNI_BIN_DIR = process.env.CNI_BIN_DIR ?? "/usr/lib/cni";

export type RealNodeSupport = { ok: true } | { ok: false; reason: string };

function onPath(command: string): boolean {
  for (const dir of (process.env.PATH ?? "").split(":").concat(["/usr/sbin", "/sbin"])) {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      // next
    }
  }
  return false;
}

export function kubeletPath(): string {
  return join(cacheDir, "bin", `kubelet-${versions.KUBERNETES_VERSION ?? ""}`, "kubelet");
}

export function corednsPath(): string {
  return join(cacheDir, "bin", `coredns-${versions.COREDNS_VERSION ?? ""}`, "coredns");
}

/** True when the CoreDNS of the pinned version is built (the node then serves cluster DNS to its pods). */
export function corednsBuilt(): boolean {
  return existsSync(join(corednsPath(), "..", ".complete"));
}

/** The machine's part: root, cgroups, packages. Say what is missing. */
export function machineSupport(): RealNodeSupport {
  if (process.platform !== "linux") return { ok: false, reason: "not Linux" };
  if (process.getuid?.() !== 0) return { ok: false, reason: "not root (the kubelet and containerd need root)" };
  if (!existsSync("/sys/fs/cgroup/memory") && !existsSync("/sys/fs/cgroup/cgroup.controllers")) {
    return { ok: false, reason: "no cgroup file system at /sys/fs/cgroup" };
  }
  const commands = ["containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "ip6tables", "ip", "mmdebstrap"];
  const missing = commands.filter((c) => !onPath(c));
  const plugins = ["bridge", "host-local", "loopback"].filter((p) => !existsSync(join(CNI_BIN_DIR, p)));
  if (missing.length || plugins.length) {
    const what = [...missing, ...plugins.map((p) => `${CNI_BIN_DIR}/${p}`)].join(", ");
    return { ok: false, reason: `missing ${what} (hack/realnode-packages.sh installs containerd, runc, containernetworking-plugins, iptables, mmdebstrap)` };
  }
  return { ok: true };
}

/** The machine and the built parts (kubelet, images). STATEWARD_REAL_NODE=0 turns the node off. */
export function realNodeSupport(): RealNodeSupport {
  if (process.env.STATEWARD_REAL_NODE === "0") return { ok: false, reason: "turned off (STATEWARD_REAL_NODE=0)" };
  const machine = machineSupport();
  if (!machine.ok) return machine;
  if (!existsSync(join(kubeletPath(), "..", ".complete"))) {
    return { ok: false, reason: `the kubelet is not built (hack/build-tools.sh kubelet, or make realnode)` };
  }
  const { missing } = builtImages();
  if (missing.length) return { ok: false, reason: `node images not built: ${missing.join(", ")} (node hack/build-node-images.ts, or make realnode)` };
  return { ok: true };
}
