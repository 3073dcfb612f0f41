#!/usr/bin/env bash
# `make test-e2e-podman`: the E2E (GINKGO_LABEL_FILTER, default the
# PR-Blocking quick-start) on rootful Podman's Docker-API service: the
# management cluster (kind's Podman provider), CAPD's machines and load
# balancers, the cloud-controller-manager's load balancers, all in Podman.
# capd-e2e engine podman installs Podman, checks its host settings
# (applies them under CAPD_E2E_FIX_ENGINE; docs/podman.md) and starts the
# service; it is stopped afterwards if this run started it. Images: those a
# Docker engine on this machine holds with current inputs are copied from
# it (capd-e2e images does that on Podman unless CAPD_E2E_IMAGES_FROM says
# otherwise); the others are built into Podman. Everything else is scripts/ci-e2e.sh, unchanged: the same
# artifacts, JUnit, leak check.
set -o errexit -o nounset -o pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
log() { printf '[test-e2e-podman %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }

scripts/install-deps.sh
started=false
[[ -f /run/capd-e2e-podman.pid ]] && kill -0 "$(cat /run/capd-e2e-podman.pid)" 2>/dev/null || started=true
host=$(scripts/capd-e2e.sh engine podman)
$started && trap 'scripts/capd-e2e.sh engine podman --stop' EXIT
export DOCKER_HOST=$host
log "DOCKER_HOST=$DOCKER_HOST"
rc=0
scripts/ci-e2e.sh || rc=$?
log "done: exit $rc"
exit "$rc"
