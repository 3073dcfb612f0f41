#!/usr/bin/env bash
# `make images`: builds every image config/e2e.yaml names (or, with
# IMAGES_ONLY=id,..., those steps and their dependencies) from the Go module
# proxy and Debian's archive, reusing every image whose inputs-hash label is
# current, and renders the providers' components and the CNI manifest into
# out/. Extra arguments go to factory/cmd/capd-e2e-images (-list, -rebuild id,...).
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/ensure-engine.sh --privileged-nesting
# On Podman's service, take what a Docker engine on this machine already
# built (current inputs only) instead of building it again: see
# docs/podman.md. CAPD_E2E_IMAGES_FROM="" turns that off.
engine=hack/tools/bin/capd-e2e-engine
go build -o "$engine" ./cmd/capd-e2e-engine
if [[ -z ${CAPD_E2E_IMAGES_FROM+set} ]] && [[ $("$engine" version) == podman\ * ]] &&
  DOCKER_HOST=unix:///var/run/docker.sock timeout 10 "$engine" version 2>/dev/null | grep -q '^docker '; then
  export CAPD_E2E_IMAGES_FROM=unix:///var/run/docker.sock
fi
args=(-config "${E2E_CONFIG:-config/e2e.yaml}")
[[ -n ${IMAGES_ONLY:-} ]] && args+=(-only "$IMAGES_ONLY")
go build -o hack/tools/bin/capd-e2e-images ./factory/cmd/capd-e2e-images
exec hack/tools/bin/capd-e2e-images "${args[@]}" "$@"
