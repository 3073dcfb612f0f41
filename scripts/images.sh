#!/usr/bin/env bash
# `make images`: `capd-e2e images` on a machine with its packages and
# engine: the images the specs GINKGO_LABEL_FILTER, GINKGO_FOCUS and
# GINKGO_SKIP select need (the suite of E2E_SUITE_DIR is asked), every image
# config/e2e.yaml names without them, or, with IMAGES_ONLY=id,..., those
# steps and their dependencies, reusing every image whose inputs-hash label
# is current. Extra arguments go to it (--list, --rebuild id,...).
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/capd-e2e.sh engine ensure --privileged-nesting
args=(--config "${E2E_CONFIG:-config/e2e.yaml}")
[[ -n ${IMAGES_ONLY:-} ]] && args+=(--only "$IMAGES_ONLY")
exec scripts/capd-e2e.sh images "${args[@]}" "$@"
