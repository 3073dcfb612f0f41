#!/usr/bin/env bash
# `make test`: unit and integration tests. Integration tests (TestIntegration*)
# run against the Docker-API engine at DOCKER_HOST and fail if there is none.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh --browser
scripts/capd-e2e.sh engine ensure
start=$(date +%s)
go test -count=1 -timeout 30m "$@" ./...
echo "--- framework/runtime module (the container runtime)"
(cd framework/runtime && go test -count=1 -timeout 20m "$@" ./...)
echo "--- cloudprovider module (the docker cloud-controller-manager)"
# Its load balancer integration test runs the harness's haproxy image: build
# it (or reuse it: its inputs-hash label) first.
IMAGES_ONLY=haproxy scripts/images.sh
(cd cloudprovider && go test -count=1 -timeout 20m "$@" ./...)
if [[ -f examples/go.mod ]]; then
  echo "--- examples module (compile only)"
  (cd examples && go vet -tags e2e ./... && go test -tags e2e -count=1 -run '^$' ./...)
fi
echo "make test: done in $(( $(date +%s) - start ))s"
