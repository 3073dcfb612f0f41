# Thin targets: each calls a script under scripts/ (see README.md).
# Benchmarks are in bench/bench.mk.
SHELL := /usr/bin/env bash

# E2E selection, as upstream's Makefile: GINKGO_FOCUS, GINKGO_SKIP (space
# separated), GINKGO_LABEL_FILTER, GINKGO_NODES. An unset
# GINKGO_LABEL_FILTER is each target's default: PR-Blocking for make
# test-e2e, md-rollout on the kept cluster for make iterate.
GINKGO_FOCUS ?=
GINKGO_SKIP ?=
GINKGO_LABEL_FILTER ?=
GINKGO_NODES ?= 1
export GINKGO_FOCUS GINKGO_SKIP GINKGO_LABEL_FILTER GINKGO_NODES

# The specs CI runs on every change (make test-e2e-ci, docs/ci.md): those
# that fit its budget, two Ginkgo processes at a time. The rest runs in
# the periodic job (make test-e2e-periodic: every spec).
CI_LABEL_FILTER ?= (quick-start && !IPv6 && !ignition) || kcp-adoption || md-scale || in-place-update || md-rollout || machine-pool || (remediation && !kcp-remediation-bootstrap) || (self-hosted && !ClusterClass) || (K8s-Upgrade && !ClusterClass && !Conformance)
CI_SKIP ?= control-plane.machine.fails

.PHONY: test test-podman lint images test-images test-e2e test-e2e-ci test-e2e-periodic test-e2e-podman test-examples test-registry test-faults clean-e2e up down test-explore iterate

test: ## Unit and integration tests (needs a Docker-API engine).
	scripts/test.sh

test-podman: ## The runtime's integration tests against Podman's Docker-API service.
	scripts/test-podman.sh

lint: ## gofmt and go vet.
	scripts/lint.sh

images: ## Provide the images the specs GINKGO_LABEL_FILTER (FOCUS, SKIP) selects need, every image without one: built from the Go module proxy and Debian, or pulled (build.registry). ARGS=--list shows the plan and who needs each step.
	scripts/images.sh $(ARGS)

test-images: images ## Boot a 2-node kind cluster from the built images (slow).
	scripts/test-images.sh

test-e2e: ## The E2E suite (PR-Blocking quick-start by default).
	scripts/ci-e2e.sh

test-e2e-ci: ## The specs CI runs on every change (CI_LABEL_FILTER, CI_SKIP), two at a time (docs/ci.md).
	GINKGO_NODES=2 GINKGO_LABEL_FILTER='$(CI_LABEL_FILTER)' GINKGO_SKIP='$(CI_SKIP)' scripts/ci-e2e.sh

test-e2e-periodic: ## Every spec of the suite, two at a time, conformance last and alone: the periodic job (docs/ci.md; hours).
	GINKGO_NODES=2 GINKGO_LABEL_FILTER='!explore' GINKGO_TIMEOUT=$${GINKGO_TIMEOUT:-8h} scripts/ci-e2e.sh

test-e2e-podman: ## The E2E on rootful Podman's Docker-API service (docs/podman.md; host settings under CAPD_E2E_FIX_ENGINE).
	scripts/test-e2e-podman.sh

test-examples: ## A provider's suite (examples/) for real: CAPD built from a directory outside the repo.
	scripts/test-examples.sh

test-registry: ## Publish to a local registry, remove, pull back through the policy (E2E=true: then the quick-start).
	scripts/test-registry.sh

test-faults: ## Inject faults into real E2E runs (FAULTS=... to choose) and check nothing is left.
	scripts/test-faults.sh

clean-e2e: ## Remove what killed E2E runs and tests left in the engine (never a live run's; kept environments only by name: ARGS="--run NAME", or ARGS=--kept).
	scripts/capd-e2e.sh clean $(ARGS)

up: ## A management and a workload cluster left running to explore (NAME, FLAVOR, CONTROL_PLANE_MACHINE_COUNT, WORKER_MACHINE_COUNT, CCM=false); see docs/explore.md.
	scripts/install-deps.sh --kubectl
	scripts/ci-e2e.sh up

down: ## Remove what `make up` kept (NAME, default explore).
	scripts/capd-e2e.sh down

test-explore: ## make up, one make iterate (with CAPI_SOURCE_DIR), every step of docs/explore.md, make down (NAME, default guide).
	scripts/test-explore.sh

iterate: ## The inner loop: rebuild changed controllers from CAPI_SOURCE_DIR, load them into `make up`'s cluster, roll them out, run GINKGO_LABEL_FILTER against it.
	scripts/ci-e2e.sh iterate

include bench/bench.mk
