#!/usr/bin/env bash
# Builds the Go binaries of the real test environment (and helm), once per machine.
#
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl  (e2e/tools/kubernetes)
#   etcd                                                              (e2e/tools/etcd)
#   kwok                                                              (e2e/tools/kwok)
#   versitygw (S3 server)                                             (e2e/tools/versitygw)
#   helm (chart lint/template/install, make deploy)                    (e2e/tools/helm)
#   promtool (alerting rules: check and unit tests, make monitoring-check) (e2e/tools/promtool)
#   kind (only `make e2e-kind`; not built by default)                   go install sigs.k8s.io/kind@$KIND_VERSION
#   kubelet, coredns (only for the real node, `make realnode`)          (e2e/tools/kubernetes, e2e/tools/coredns)
#   bundle-validate (the OLM bundle's validators, `make bundle-check`)   (hack/bundle-validate, our own code)
#
# Each tool is pinned by the go.mod/go.sum of its wrapper module under
# e2e/tools/. Binaries land in $STATEWARD_CACHE/bin/<tool>-<version>/, outside
# the repository, and a tool already there is not rebuilt. GOMODCACHE and
# GOCACHE live in the same cache folder so that a rebuild after a version bump
# is incremental. A failed build names the tool, prints the tail of its log and
# exits non-zero.
#
# Usage: hack/build-tools.sh [tool...]   (default: all but kind and the real node's)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${STATEWARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stateward}"
export GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/build" GOFLAGS="-mod=mod" CGO_ENABLED=0
# A build of kube-apiserver peaks around 2 GiB per compile job; two jobs fit
# the 2-core machines comfortably.
export GOMAXPROCS="${GOMAXPROCS:-2}"

# The single source of the pinned versions; e2e/harness/tools.ts reads them too.
source "$ROOT/e2e/tools/versions.env"

command -v go >/dev/null || { echo "build-tools: Go is required (go 1.26+) to build the test environment" >&2; exit 1; }

build() { # name version module-dir ldflags packages...
  local name="$1" version="$2" dir="$3" ldflags="$4"; shift 4
  local out="$CACHE/bin/$name-$version"
  if [[ -f "$out/.complete" ]]; then return 0; fi
  local log="$CACHE/logs/build-$name-$version.log"
  mkdir -p "$out" "$(dirname "$log")"
  echo "build-tools: building $name $version (first time on this machine; log: $log)" >&2
  local start=$SECONDS
  # A relative module dir is a wrapper module under e2e/tools/; an absolute one is our own code.
  [[ "$dir" == /* ]] || dir="$ROOT/e2e/tools/$dir"
  if ! (cd "$dir" && go build -trimpath -ldflags "-s -w $ldflags" -o "$out/" "$@") >"$log" 2>&1; then
    echo "build-tools: FAILED to build $name $version — last lines of $log:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  touch "$out/.complete"
  echo "build-tools: built $name $version in $((SECONDS - start)) s" >&2
}

# For tools that are a plain `go install module@version` (their own go.mod and
# go.sum pin the dependencies, checked against the Go checksum database), so no
# wrapper module is needed. -mod=mod is not allowed with module@version.
go_install() { # name version package@version
  local name="$1" version="$2" pkg="$3"
  local out="$CACHE/bin/$name-$version"
  if [[ -f "$out/.complete" ]]; then return 0; fi
  local log="$CACHE/logs/build-$name-$version.log"
  mkdir -p "$out" "$(dirname "$log")"
  echo "build-tools: building $name $version (first time on this machine; log: $log)" >&2
  local start=$SECONDS
  if ! GOFLAGS= GOBIN="$out" go install -trimpath -ldflags "-s -w" "$pkg" >"$log" 2>&1; then
    echo "build-tools: FAILED to build $name $version — last lines of $log:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  touch "$out/.complete"
  echo "build-tools: built $name $version in $((SECONDS - start)) s" >&2
}

# User-facing tools are also linked into .stateward/bin/ (first on PATH in
# .stateward/dev/env), so that `make deploy` and scripts find the pinned one
# without the environment running; the test harness links the same targets.
link_bin() { # name target
  mkdir -p "$ROOT/.stateward/bin"
  ln -sfn "$2" "$ROOT/.stateward/bin/$1"
}

k8s_ldflags() {
  local v="${KUBERNETES_VERSION#v}" flags=""
  local major="${v%%.*}" rest="${v#*.}"; local minor="${rest%%.*}"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$flags"
}

# helm stamps its own version and the Kubernetes version it assumes for
# `helm template`/`helm lint` (.Capabilities.KubeVersion) at link time, as its
# Makefile does; unstamped it reports "v3.22" and Kubernetes 1.20. The assumed
# Kubernetes version is one above the major of its client-go (v0.37 -> 1.37).
helm_ldflags() {
  local client_go major minor
  client_go="$(cd "$ROOT/e2e/tools/helm" && go list -m -f '{{.Version}}' k8s.io/client-go)"
  client_go="${client_go#v}"; major=$(( ${client_go%%.*} + 1 )); minor="${client_go#*.}"; minor="${minor%%.*}"
  local flags="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    flags+=" -X $pkg.k8sVersionMajor=$major -X $pkg.k8sVersionMinor=$minor"
  done
  echo "$flags"
}

want=("$@")
[[ ${#want[@]} -eq 0 ]] && want=(kubernetes etcd kwok versitygw helm bundle-validate promtool)
for tool in "${want[@]}"; do
  case "$tool" in
    kubernetes)
      build kubernetes "$KUBERNETES_VERSION" kubernetes "$(k8s_ldflags)" \
        k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl ;;
    etcd)
      # The etcd main package is go.etcd.io/etcd/server/v3, which Go names "server".
      build etcd "$ETCD_VERSION" etcd "" go.etcd.io/etcd/server/v3
      if [[ -f "$CACHE/bin/etcd-$ETCD_VERSION/server" ]]; then
        mv "$CACHE/bin/etcd-$ETCD_VERSION/server" "$CACHE/bin/etcd-$ETCD_VERSION/etcd"
      fi ;;
    kwok)
      build kwok "$KWOK_VERSION" kwok "" sigs.k8s.io/kwok/cmd/kwok
      # KWOK's own default Stages (node initialize + lease heartbeat, pod
      # ready/complete/delete) ship in its module; take them from the module
      # cache next to the binary rather than keeping copies in the repository.
      stages="$CACHE/bin/kwok-$KWOK_VERSION/stages"
      if [[ ! -f "$stages/.complete" ]]; then
        src="$(cd "$ROOT/e2e/tools/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage"
        mkdir -p "$stages"
        cp "$src/node/fast/node-initialize.yaml" "$src/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
          "$src/pod/fast/pod-ready.yaml" "$src/pod/fast/pod-complete.yaml" "$src/pod/fast/pod-delete.yaml" "$stages/"
        chmod u+w "$stages"/*.yaml
        touch "$stages/.complete"
      fi ;;
    kubelet)
      # The real node's kubelet: same wrapper module, cache and ldflags as the control plane,
      # its own output folder (so the control plane's is not rebuilt for it).
      build kubelet "$KUBERNETES_VERSION" kubernetes "$(k8s_ldflags)" k8s.io/kubernetes/cmd/kubelet ;;
    coredns)
      # The go.mod pins CoreDNS; its dependencies are resolved into go.sum on the first build.
      build coredns "$COREDNS_VERSION" coredns "" . ;;
    versitygw) build versitygw "$VERSITYGW_VERSION" versitygw "" github.com/versity/versitygw/cmd/versitygw ;;
    helm)
      build helm "$HELM_VERSION" helm "$(helm_ldflags)" helm.sh/helm/v3/cmd/helm
      link_bin helm "$CACHE/bin/helm-$HELM_VERSION/helm" ;;
    bundle-validate)
      # Our own program around github.com/operator-framework/api's validators (pinned by its
      # go.mod/go.sum). The cache key is the api version plus a hash of the program, so an
      # edit of main.go or a bump in go.sum rebuilds it.
      src="$ROOT/hack/bundle-validate"
      key="$OPERATOR_FRAMEWORK_API_VERSION-$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-12)"
      build bundle-validate "$key" "$src" "" .
      link_bin bundle-validate "$CACHE/bin/bundle-validate-$key/bundle-validate" ;;
    promtool)
      build promtool "$PROMETHEUS_VERSION" promtool "" github.com/prometheus/prometheus/cmd/promtool
      link_bin promtool "$CACHE/bin/promtool-$PROMETHEUS_VERSION/promtool" ;;
    kind)
      go_install kind "$KIND_VERSION" "sigs.k8s.io/kind@$KIND_VERSION"
      link_bin kind "$CACHE/bin/kind-$KIND_VERSION/kind" ;;
    *) echo "build-tools: unknown tool $tool" >&2; exit 2 ;;
  esac
done
