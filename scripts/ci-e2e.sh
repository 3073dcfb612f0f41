#!/usr/bin/env bash
# Prow entry point, and what `make test-e2e` runs.
#
# Honours ARTIFACTS (default: _artifacts), GINKGO_FOCUS, GINKGO_SKIP (space
# separated), GINKGO_LABEL_FILTER (default: "PR-Blocking && !comparison"), GINKGO_NODES
# (default 1), GINKGO_TIMEOUT (default 3h), E2E_CONFIG, SKIP_RESOURCE_CLEANUP,
# USE_EXISTING_CLUSTER. Builds the images that are missing or stale, runs the
# suite with a JUnit report in ARTIFACTS, saves the host's container state
# into ARTIFACTS/localhost, and fails if the run left containers behind.
set -o errexit -o nounset -o pipefail

REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
export ARTIFACTS=${ARTIFACTS:-$REPO_ROOT/_artifacts}
GINKGO_FOCUS=${GINKGO_FOCUS:-}
GINKGO_SKIP=${GINKGO_SKIP:-}
GINKGO_LABEL_FILTER=${GINKGO_LABEL_FILTER:-PR-Blocking && !comparison}
GINKGO_NODES=${GINKGO_NODES:-1}
GINKGO_TIMEOUT=${GINKGO_TIMEOUT:-3h}
E2E_CONFIG=${E2E_CONFIG:-$REPO_ROOT/config/e2e.yaml}
SKIP_RESOURCE_CLEANUP=${SKIP_RESOURCE_CLEANUP:-false}
USE_EXISTING_CLUSTER=${USE_EXISTING_CLUSTER:-false}
mkdir -p "$ARTIFACTS/localhost"

log() { printf '[ci-e2e %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }

scripts/install-deps.sh
scripts/ensure-engine.sh --privileged-nesting

start=$(date +%s)
log "building or reusing images"
scripts/images.sh 2>&1 | tee "$ARTIFACTS/localhost/images.log"
log "images ready after $(( $(date +%s) - start ))s"

# The host's container state: what was there before, for the leak check.
docker ps -aq --no-trunc | sort >"$ARTIFACTS/localhost/containers-before.txt"
events_since=$(date -u +%s)

save_host_state() {
  docker info >"$ARTIFACTS/localhost/docker-info.txt" 2>&1 || true
  docker ps -a >"$ARTIFACTS/localhost/docker-ps.txt" 2>&1 || true
  docker images >"$ARTIFACTS/localhost/docker-images.txt" 2>&1 || true
  docker events --since "$events_since" --until "$(date -u +%s)" >"$ARTIFACTS/localhost/docker-events.log" 2>&1 || true
  cp /var/log/capd-e2e-dockerd.log "$ARTIFACTS/localhost/" 2>/dev/null || true
}
trap save_host_state EXIT

GINKGO=$REPO_ROOT/hack/tools/bin/ginkgo
if [[ ! -x $GINKGO ]]; then
  log "building the ginkgo CLI at the version go.mod requires"
  GOBIN=$REPO_ROOT/hack/tools/bin go install github.com/onsi/ginkgo/v2/ginkgo
fi

args=(-v --trace --tags=e2e --timeout="$GINKGO_TIMEOUT" --nodes="$GINKGO_NODES"
  --poll-progress-after=60m --poll-progress-interval=5m --fail-on-pending --fail-on-empty
  --junit-report=junit.e2e_suite.1.xml --output-dir="$ARTIFACTS")
[[ -n $GINKGO_LABEL_FILTER ]] && args+=(--label-filter="$GINKGO_LABEL_FILTER")
[[ -n $GINKGO_FOCUS ]] && args+=(--focus="$GINKGO_FOCUS")
for s in $GINKGO_SKIP; do args+=(--skip="$s"); done

log "running the suite (label filter: ${GINKGO_LABEL_FILTER:-none})"
rc=0
"$GINKGO" "${args[@]}" ./e2e -- \
  -e2e.config="$E2E_CONFIG" -e2e.artifacts-folder="$ARTIFACTS" \
  -e2e.skip-resource-cleanup="$SKIP_RESOURCE_CLEANUP" -e2e.use-existing-cluster="$USE_EXISTING_CLUSTER" || rc=$?
log "suite finished with exit code $rc after $(( $(date +%s) - start ))s in all"

if [[ $SKIP_RESOURCE_CLEANUP != true ]]; then
  docker ps -aq --no-trunc | sort >"$ARTIFACTS/localhost/containers-after.txt"
  leaked=$(comm -13 "$ARTIFACTS/localhost/containers-before.txt" "$ARTIFACTS/localhost/containers-after.txt")
  if [[ -n $leaked ]]; then
    log "containers left behind by this run:"
    filters=(); for id in $leaked; do filters+=(--filter "id=$id"); done
    docker ps -a "${filters[@]}" | tee "$ARTIFACTS/localhost/leaked-containers.txt"
    [[ $rc -eq 0 ]] && rc=1
  else
    log "no containers left behind"
  fi
fi
exit "$rc"
