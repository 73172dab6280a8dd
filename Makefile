# Stateward — the front door. Every target installs what it needs on a fresh
# clone (Node 24, npm dependencies, the test environment's binaries) and does
# nothing more when it is already there.
#
#   make test      lint + type-check + unit + integration tests (real control plane, MariaDB, S3)
#   make demo      start the local environment and show how to reach it
#   make dev-up    start the local environment (.stateward/dev); make dev-down stops it
#   make help      everything else

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Node 24 first on PATH (fetched once from the npm registry when the machine's node is older).
NODE_BIN := $(shell hack/ensure-node.sh)
ifeq ($(NODE_BIN),)
$(error could not find or fetch Node 24; see hack/ensure-node.sh)
endif
export PATH := $(NODE_BIN):$(CURDIR)/node_modules/.bin:$(PATH)
# Nx runs without its background daemon: nothing to clean up after a run.
export NX_DAEMON := false
export NX_NO_CLOUD := true

DEPS_STAMP := node_modules/.stateward-deps
WORKSPACE_MANIFESTS := package.json package-lock.json $(wildcard core/package.json operators/*/package.json cli/package.json e2e/package.json)

.PHONY: help
help: ## this list
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  make %-14s %s\n", $$1, $$2}'

$(DEPS_STAMP): $(WORKSPACE_MANIFESTS)
	npm ci --no-audit --no-fund
	@touch $@

.PHONY: deps
deps: $(DEPS_STAMP) ## install npm dependencies (npm ci from the lockfile)

.PHONY: tools
tools: ## build the test environment's binaries once per machine (Kubernetes, etcd, KWOK, versitygw)
	hack/build-tools.sh

.PHONY: realnode
realnode: $(DEPS_STAMP) ## the real node's parts where the machine allows it (root): Debian packages, kubelet, CoreDNS, node images
	hack/realnode.sh

.PHONY: lint
lint: $(DEPS_STAMP) ## ESLint with typescript-eslint and Nx module boundaries
	@# The module-boundary rule needs the Nx project graph; without it the rule is silently skipped.
	nx show projects >/dev/null
	eslint --max-warnings=0 .

.PHONY: typecheck
typecheck: $(DEPS_STAMP) ## TypeScript, strict, whole workspace
	tsc -p tsconfig.json

REPORTS := .stateward/reports
VITEST_REPORT = --reporter=default --reporter=json --outputFile.json=$(REPORTS)/$@.json

.PHONY: unit
unit: $(DEPS_STAMP) ## unit tests (pure logic, no servers)
	vitest run --project unit $(VITEST_REPORT)

.PHONY: integration
integration: $(DEPS_STAMP) tools realnode ## integration tests against a real control plane, MariaDB, S3 and (where possible) a real node
	vitest run --project integration $(VITEST_REPORT)

.PHONY: crds
crds: $(DEPS_STAMP) ## regenerate crds/*.yaml from the schemas in code (and the chart's copy)
	node hack/generate-crds.ts
	rm -f charts/stateward/crds/*.yaml; if ls crds/*.yaml >/dev/null 2>&1; then cp crds/*.yaml charts/stateward/crds/; fi

.PHONY: crds-check
crds-check: $(DEPS_STAMP) ## fail when crds/*.yaml is stale
	node hack/generate-crds.ts --check

# The Kubernetes minor the bundle's deprecated-API checks assume: the test environment's.
BUNDLE_K8S_VERSION := $(shell sed -n 's/^KUBERNETES_VERSION=v\([0-9]*\.[0-9]*\).*/\1/p' e2e/tools/versions.env)

.PHONY: bundle
bundle: $(DEPS_STAMP) ## regenerate bundle/ (the OLM bundle) from the Helm chart and the schemas in code
	hack/build-tools.sh helm
	node hack/generate-bundle.ts

.PHONY: bundle-check
bundle-check: $(DEPS_STAMP) ## fail when bundle/ is stale or the Operator Framework validators (OperatorHub suite) refuse it
	hack/build-tools.sh helm bundle-validate
	node hack/generate-bundle.ts --check
	.stateward/bin/bundle-validate -k8s-version $(BUNDLE_K8S_VERSION) bundle

.PHONY: monitoring-check
monitoring-check: $(DEPS_STAMP) ## the chart's alerting rules (promtool check + test rules) and dashboard (valid, reads only exported metrics)
	hack/build-tools.sh promtool
	node hack/monitoring-check.ts

.PHONY: test
test: lint typecheck crds-check bundle-check monitoring-check unit integration ## lint, type-check, CRD and OLM bundle freshness, alerting rules and dashboard, unit and integration tests
	@node hack/test-summary.ts $(REPORTS)/unit.json $(REPORTS)/integration.json

.PHONY: dev-up
dev-up: $(DEPS_STAMP) tools realnode ## start the local environment (a real node where possible); writes .stateward/dev/{kubeconfig,env}
	node e2e/harness/dev.ts up

.PHONY: dev-down
dev-down: ## stop the local environment (every process it started, by pid)
	@if [ -d node_modules ]; then node e2e/harness/dev.ts down; else echo "Nothing was running."; fi

.PHONY: dev-status
dev-status: $(DEPS_STAMP) ## is the local environment up, and where
	node e2e/harness/dev.ts status

.PHONY: demo
demo: dev-up crds ## from a fresh clone: environment, CRDs, the manager with all operators, examples/ applied, status
	hack/demo.sh

.PHONY: build
build: $(DEPS_STAMP) ## build the `stateward` command as the image runs it: dist/stateward.js (git-ignored)
	node hack/build.ts

.PHONY: run-dist
run-dist: build ## the compiled manager, as the image runs it (its ENTRYPOINT's flags; stateward run $(ARGS))
	MALLOC_ARENA_MAX=1 node --max-semi-space-size=2 --heap-growing-percent=50 dist/stateward.js run $(ARGS)

.PHONY: run
run: $(DEPS_STAMP) ## the manager against the current kube context (stateward run $(ARGS))
	node cli/src/main.ts run $(ARGS)

.PHONY: install
install: crds ## install the CRDs into the current cluster (kubectl apply --server-side)
	@if ls crds/*.yaml >/dev/null 2>&1; then kubectl apply --server-side -f crds/; else echo "no CRDs to install yet"; fi

# Extra flags for `make deploy`, e.g. HELM_ARGS="--set image.repository=registry.example/stateward --set image.tag=dev"
HELM_ARGS ?=

.PHONY: deploy
deploy: ## install the Helm chart into the current cluster (release stateward, namespace stateward-system)
	hack/build-tools.sh helm
	.stateward/bin/helm upgrade --install stateward charts/stateward -n stateward-system --create-namespace $(HELM_ARGS)

# The image `make docker-build` builds and `make e2e-kind` loads into kind.
IMG ?= stateward:dev

.PHONY: docker-build
docker-build: ## build the manager's container image (IMG, default stateward:dev; needs Docker)
	docker build -t $(IMG) .

.PHONY: e2e-kind
e2e-kind: $(DEPS_STAMP) ## on a machine with Docker: kind cluster, image, helm install, end-to-end suites, teardown
	IMG=$(IMG) e2e/kind/run.sh

.PHONY: bench
bench: $(DEPS_STAMP) tools ## benchmarks (BENCH="core ..." picks some); prints tables, writes JSON to e2e/bench/results/
	node e2e/bench/run.ts $(BENCH)

.PHONY: clean
clean: dev-down ## remove local state (.stateward) and node_modules; the machine cache stays
	rm -rf .stateward node_modules .nx
