# Thin targets: each calls a script under scripts/ (see README.md).
SHELL := /usr/bin/env bash

# E2E selection, as upstream's Makefile: GINKGO_FOCUS, GINKGO_SKIP (space
# separated), GINKGO_LABEL_FILTER, GINKGO_NODES.
GINKGO_FOCUS ?=
GINKGO_SKIP ?=
GINKGO_LABEL_FILTER ?= PR-Blocking && !comparison
GINKGO_NODES ?= 1
export GINKGO_FOCUS GINKGO_SKIP GINKGO_LABEL_FILTER GINKGO_NODES

.PHONY: test test-podman lint bench images test-images test-e2e

test: ## Unit and integration tests (needs a Docker-API engine).
	scripts/test.sh

test-podman: ## The runtime's integration tests against Podman's Docker-API service.
	scripts/test-podman.sh

lint: ## gofmt and go vet.
	scripts/lint.sh

bench: ## Exec latency: our runtime vs the docker CLI, idle and loaded.
	scripts/bench-exec.sh

images: ## Build every image the E2E needs, from the Go module proxy and Debian.
	scripts/images.sh

test-images: images ## Boot a 2-node kind cluster from the built images (slow).
	scripts/test-images.sh

test-e2e: ## The E2E suite (PR-Blocking quick-start by default).
	scripts/ci-e2e.sh
