#!/usr/bin/env bash
# The real node's parts, once per machine, where the machine can run it (root,
# cgroups): the Debian packages, the kubelet and CoreDNS (built from their Go
# modules into the machine cache like the other tools) and the node images.
# Elsewhere it says why not and exits 0: the environment then has KWOK nodes only.
#
# Usage: hack/realnode.sh        (STATEWARD_REAL_NODE=0 skips it; make realnode)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ "${STATEWARD_REAL_NODE:-1}" == 0 ]]; then echo "realnode: turned off (STATEWARD_REAL_NODE=0)"; exit 0; fi
if [[ "$(id -u)" != 0 ]]; then echo "realnode: not root; the environment runs with KWOK nodes only"; exit 0; fi
if [[ ! -d /sys/fs/cgroup/memory && ! -f /sys/fs/cgroup/cgroup.controllers ]]; then
  echo "realnode: no cgroup file system; the environment runs with KWOK nodes only"; exit 0
fi
"$ROOT/hack/realnode-packages.sh"
for c in containerd runc ctr iptables mmdebstrap; do
  command -v "$c" >/dev/null || { echo "realnode: $c is missing (see above); the environment runs with KWOK nodes only"; exit 0; }
done
"$ROOT/hack/build-tools.sh" kubelet coredns
# Node 24 (type stripping) for the image builder, also when run outside make.
PATH="$("$ROOT/hack/ensure-node.sh"):$PATH" node "$ROOT/hack/build-node-images.ts"
