#!/usr/bin/env bash
# `make e2e-kind`: the end-to-end suites against the operator as users run it — the
# container image, installed by the Helm chart, in a real cluster (kind, on Docker).
#
#   1. checks Docker answers (`docker info`), else stops with a clear message;
#   2. builds the pinned helm and kind (hack/build-tools.sh) and the test environment's tools;
#   3. creates a kind cluster (or reuses one kept by KEEP_CLUSTER=1);
#   4. builds the image ($IMG) and loads it into the cluster's nodes (`kind load`);
#   5. `helm upgrade --install` the chart, waiting for the manager to be Ready;
#   6. runs the suites with STATEWARD_E2E_KUBECONFIG / STATEWARD_E2E_NAMESPACE set (the
#      contract is in e2e/README.md);
#   7. deletes the cluster, on success and on failure (unless KEEP_CLUSTER=1).
#
# Environment:
#   IMG              image to build and load (default stateward:dev)
#   KIND_CLUSTER     cluster name (default stateward-e2e)
#   KIND_NODE_IMAGE  node image (default: kind's own for its version)
#   E2E_SUITES       test files or folders for vitest (default: e2e/tests/chart e2e/tests/kind)
#   KEEP_CLUSTER=1   leave the cluster running afterwards (for debugging; reused next time)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
source e2e/tools/versions.env
CACHE="${STATEWARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stateward}"

IMG="${IMG:-stateward:dev}"
CLUSTER="${KIND_CLUSTER:-stateward-e2e}"
NAMESPACE=stateward-system
STATE="$ROOT/.stateward/kind"
KUBECONFIG_FILE="$STATE/kubeconfig"
read -r -a SUITES <<<"${E2E_SUITES:-e2e/tests/chart e2e/tests/kind}"

log() { echo "e2e-kind: $*" >&2; }

if ! docker info >/dev/null 2>&1; then
  log "Docker is not available: \`docker info\` failed."
  log "make e2e-kind needs a running Docker daemon that this user may use (kind runs the cluster's nodes as containers)."
  log "Without Docker, \`make test\` runs the same integration suites on the local environment (no containers needed)."
  exit 1
fi

hack/build-tools.sh helm kind
# The integration project's global setup also starts the local environment; it needs the rest.
hack/build-tools.sh
HELM="$ROOT/.stateward/bin/helm"
KIND="$ROOT/.stateward/bin/kind"
KUBECTL="$CACHE/bin/kubernetes-$KUBERNETES_VERSION/kubectl"

# "registry:5000/team/stateward:dev" -> repository + tag; no tag means "latest".
repository="$IMG" tag=latest
if [[ "${IMG##*/}" == *:* ]]; then repository="${IMG%:*}" tag="${IMG##*:}"; fi

teardown() {
  local code=$?
  if [[ -n "${KEEP_CLUSTER:-}" ]]; then
    log "KEEP_CLUSTER is set: cluster $CLUSTER stays (kubeconfig: $KUBECONFIG_FILE; delete with: $KIND delete cluster --name $CLUSTER)"
  else
    log "deleting kind cluster $CLUSTER"
    "$KIND" delete cluster --name "$CLUSTER" --kubeconfig "$KUBECONFIG_FILE" >/dev/null 2>&1 || log "could not delete cluster $CLUSTER (delete it with: $KIND delete cluster --name $CLUSTER)"
    rm -f "$KUBECONFIG_FILE"
  fi
  exit "$code"
}

diagnose() {
  log "the release did not become ready; what the cluster says:"
  "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" -n "$NAMESPACE" get deployment,pods -o wide >&2 || true
  "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" -n "$NAMESPACE" describe pods -l app.kubernetes.io/instance=stateward >&2 || true
  "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" -n "$NAMESPACE" logs deployment/stateward --all-containers --tail=50 >&2 || true
}

mkdir -p "$STATE"
if "$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  log "reusing kind cluster $CLUSTER"
  "$KIND" export kubeconfig --name "$CLUSTER" --kubeconfig "$KUBECONFIG_FILE"
  trap teardown EXIT
else
  trap teardown EXIT
  log "creating kind cluster $CLUSTER"
  "$KIND" create cluster --name "$CLUSTER" --kubeconfig "$KUBECONFIG_FILE" --wait 180s ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"}
fi

log "building image $IMG"
docker build -t "$IMG" "$ROOT"
log "loading $IMG into the cluster's nodes"
"$KIND" load docker-image "$IMG" --name "$CLUSTER"

log "installing the chart (release stateward, namespace $NAMESPACE)"
# pullPolicy Never: the pods must run the image just loaded, never a registry's.
if ! "$HELM" upgrade --install stateward charts/stateward --namespace "$NAMESPACE" --create-namespace \
  --kubeconfig "$KUBECONFIG_FILE" \
  --set image.repository="$repository" --set image.tag="$tag" --set image.pullPolicy=Never \
  --wait --timeout 5m; then
  diagnose
  exit 1
fi

log "running ${SUITES[*]} against the kind cluster"
STATEWARD_E2E_KUBECONFIG="$KUBECONFIG_FILE" STATEWARD_E2E_NAMESPACE="$NAMESPACE" \
  vitest run --project integration "${SUITES[@]}"
