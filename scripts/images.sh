#!/usr/bin/env bash
# `make images`: builds the images the specs GINKGO_LABEL_FILTER,
# GINKGO_FOCUS and GINKGO_SKIP select need (capd-e2e-images asks the suite,
# E2E_SUITE_DIR), every image config/e2e.yaml names without them, or, with
# IMAGES_ONLY=id,..., those steps and their dependencies, from the Go module
# proxy and Debian's archive, reusing every image whose inputs-hash label is
# current. Extra arguments go to factory/cmd/capd-e2e-images (-list,
# -rebuild id,...).
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/ensure-engine.sh --privileged-nesting
args=(-config "${E2E_CONFIG:-config/e2e.yaml}")
[[ -n ${IMAGES_ONLY:-} ]] && args+=(-only "$IMAGES_ONLY")
# Compiled as the suite and the substitute are (gobuild.HarnessEnv and
# HarnessFlags): they share most packages, compiled once.
GOGC=${GOGC:-400} CGO_ENABLED=0 go build -gcflags=all=-dwarf=false -o hack/tools/bin/capd-e2e-images ./factory/cmd/capd-e2e-images
exec hack/tools/bin/capd-e2e-images "${args[@]}" "$@"
