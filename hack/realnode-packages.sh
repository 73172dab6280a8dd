#!/usr/bin/env bash
# Installs what the real node needs from Debian, when it is missing and the
# machine allows it (root with apt-get): containerd (1.6, with its runc shim),
# runc, the CNI plugins (bridge, host-local, loopback), iptables, and for the
# node images mmdebstrap and busybox-static. Elsewhere it says why it does
# nothing and exits 0: the environment then runs with KWOK only.
#
# Usage: hack/realnode-packages.sh      (STATEWARD_REAL_NODE=0 skips it)
set -euo pipefail
packages=(containerd runc containernetworking-plugins iptables mmdebstrap busybox-static)
if [[ "${STATEWARD_REAL_NODE:-1}" == 0 ]]; then echo "realnode: turned off (STATEWARD_REAL_NODE=0)"; exit 0; fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
  echo "realnode: not installing ${missing[*]} (needs root and apt-get); the environment runs with KWOK only" >&2
  exit 0
fi
echo "realnode: installing ${missing[*]} (once per machine)" >&2
start=$SECONDS
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "realnode: installed in $((SECONDS - start)) s" >&2
