# Thin targets: each calls a script under scripts/ (see README.md).
SHELL := /usr/bin/env bash

# E2E selection, as upstream's Makefile: GINKGO_FOCUS, GINKGO_SKIP (space
# separated), GINKGO_LABEL_FILTER, GINKGO_NODES.
GINKGO_FOCUS ?=
GINKGO_SKIP ?=
GINKGO_LABEL_FILTER ?= PR-Blocking && !comparison
GINKGO_NODES ?= 1
export GINKGO_FOCUS GINKGO_SKIP GINKGO_LABEL_FILTER GINKGO_NODES

.PHONY: test test-podman lint bench bench-boot bench-kind bench-e2e bench-lb bench-gobuild bench-images bench-scale images test-images test-e2e test-examples test-registry test-faults clean-e2e

test: ## Unit and integration tests (needs a Docker-API engine).
	scripts/test.sh

test-podman: ## The runtime's integration tests against Podman's Docker-API service.
	scripts/test-podman.sh

lint: ## gofmt and go vet.
	scripts/lint.sh

bench: ## Exec latency: our runtime vs the docker CLI, idle and loaded.
	scripts/bench-exec.sh

bench-boot: ## A machine from docker create to a running containerd, per node image (IMAGES, default KUBERNETES_VERSION's), rounds interleaved.
	scripts/bench-boot.sh

bench-kind: ## A one-node kind cluster (the management cluster) per node image (CAPD_E2E_BENCH_NODE_IMAGES, default KUBERNETES_VERSION's), rounds interleaved: create, node Ready (BENCH_N rounds, default 5).
	go test -tags images -count=1 -run '^$$' -bench '^BenchmarkIntegrationKindNodeReady$$' -benchtime $${BENCH_N:-5}x ./factory/nodeimage/

bench-images: ## Cold `make images` measured both ways in one run: one step at a time, then in parallel (38 minutes on 2 cores).
	scripts/bench-images.sh

bench-gobuild: ## Cold Go builds side by side (SIDES: sequential at-once gogc dwarf nodwarf tags notags): wall and CPU of each (after make images).
	scripts/bench-gobuild.sh

bench-e2e: ## The PR job's suite time and setup phases (BEFORE_REF=<commit>: also from that commit, same images), and our quick-start vs upstream's.
	scripts/bench-e2e.sh

bench-lb: ## A node that starts serving: time to traffic through the cloud provider's load balancer, its check timing vs haproxy's defaults (ten rounds, about 2 minutes).
	IMAGES_ONLY=haproxy scripts/images.sh
	cd cloudprovider && go test -count=1 -run '^$$' -bench '^BenchmarkIntegrationLoadBalancerNodeUp$$' -benchtime $${BENCH_N:-10}x ./docker/

bench-scale: ## One quick-start alone, then three at once (GINKGO_NODES=3): wall times, memory per machine (about 10 minutes); BENCH_SCALE_BEYOND="5 7": more at once until a run fails.
	scripts/bench-scale.sh

images: ## Provide every image the E2E needs: built from the Go module proxy and Debian, or pulled (build.registry). ARGS=-list shows the plan.
	scripts/images.sh $(ARGS)

test-images: images ## Boot a 2-node kind cluster from the built images (slow).
	scripts/test-images.sh

test-e2e: ## The E2E suite (PR-Blocking quick-start by default).
	scripts/ci-e2e.sh

test-examples: ## A provider's suite (examples/) for real: CAPD built from a directory outside the repo.
	scripts/test-examples.sh

test-registry: ## Publish to a local registry, remove, pull back through the policy (E2E=true: then the quick-start).
	scripts/test-registry.sh

test-faults: ## Inject faults into real E2E runs (FAULTS=... to choose) and check nothing is left.
	scripts/test-faults.sh

clean-e2e: ## Remove what killed E2E runs left in the engine (never a live run's).
	go run ./cmd/capd-e2e-clean $(ARGS)
