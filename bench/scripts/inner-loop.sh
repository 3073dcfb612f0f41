#!/usr/bin/env bash
# `make bench-inner-loop`: edit → spec green, both ways, in one run, on
# CAPI_SOURCE_DIR (a cluster-api tree; copied, so the original is never
# touched):
#   full     the edit, then `make test-e2e` from scratch (images, kind,
#            clusterctl init, the spec creating its own cluster, teardown),
#            with nothing else running;
#   inner    `make up` once (not timed: the loop's fixed cost, reported),
#            then the edit, then `make iterate` (rebuild what changed, load,
#            roll out, the same spec against the kept clusters).
# Each round's edit is a new line in the core manager's main.go, so that
# both sides rebuild the core image. ROUNDS (default 1): every full round
# first, then `make up`, then every inner round. GINKGO_LABEL_FILTER names
# the spec both sides run (default md-rollout, which make iterate runs on
# the kept workload cluster; PR-Blocking: the quick-start, which creates a
# cluster on both sides). Results: ARTIFACTS/bench-inner-loop/results.md.
set -o errexit -o nounset -o pipefail
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO_ROOT"
[[ -n ${CAPI_SOURCE_DIR:-} ]] || { echo "bench-inner-loop: set CAPI_SOURCE_DIR to a cluster-api tree" >&2; exit 2; }
ROUNDS=${ROUNDS:-1}
OUT=${ARTIFACTS:-$REPO_ROOT/_artifacts}/bench-inner-loop
rm -rf "$OUT"; mkdir -p "$OUT"
tree=$(mktemp -d)/cluster-api
cp -a "$(realpath "$CAPI_SOURCE_DIR")" "$tree"
export CAPI_SOURCE_DIR=$tree NAME=bench-inner-loop
# The core manager's main package: core/ from v1.14, the root before.
CORE_MAIN=core/main.go
[[ -f $tree/$CORE_MAIN ]] || CORE_MAIN=main.go
[[ -f $tree/$CORE_MAIN ]] || { echo "bench-inner-loop: no core main.go in $tree" >&2; exit 2; }
log() { printf '[bench-inner-loop %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
edit() { printf '\n// bench-inner-loop edit %s\n' "$(date +%s%N)" >>"$tree/$CORE_MAIN"; }

export GINKGO_LABEL_FILTER=${GINKGO_LABEL_FILTER:-md-rollout}
trap 'scripts/capd-e2e.sh down >/dev/null 2>&1 || true; rm -rf "$(dirname "$tree")"' EXIT
declare -a full inner
for i in $(seq "$ROUNDS"); do
  edit
  t=$(date +%s)
  ARTIFACTS=$OUT/full-$i scripts/ci-e2e.sh >"$OUT/full-$i.log" 2>&1
  full[i]=$(($(date +%s) - t))
  log "round $i: full make test-e2e ${full[i]}s"
done

t=$(date +%s)
scripts/ci-e2e.sh up >"$OUT/up.log" 2>&1
up=$(($(date +%s) - t))
log "make up: ${up}s (once)"

rows=()
for i in $(seq "$ROUNDS"); do
  edit
  t=$(date +%s)
  scripts/ci-e2e.sh iterate >"$OUT/inner-$i.log" 2>&1
  inner[i]=$(($(date +%s) - t))
  pct=$((100 * inner[i] / full[i]))
  log "round $i: full ${full[i]}s, inner loop ${inner[i]}s (${pct}%)"
  rows+=("| $i | ${full[i]}s | ${inner[i]}s | ${pct}% |")
done
{
  echo "spec: $GINKGO_LABEL_FILTER; make up (once): ${up}s"
  echo
  echo "| round | edit → green, full make test-e2e | edit → green, make iterate | inner / full |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} | tee "$OUT/results.md"
