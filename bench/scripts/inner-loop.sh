#!/usr/bin/env bash
# `make bench-inner-loop`: edit → spec green, both ways, in one run, on
# CAPI_SOURCE_DIR (a cluster-api tree; copied, so the original is never
# touched):
#   full     the edit, then `make test-e2e` from scratch (images, kind,
#            clusterctl init, the spec, teardown);
#   inner    `make up` once (not timed: the loop's fixed cost, reported),
#            then the edit, then `make iterate` (rebuild what changed, load,
#            roll out, the same spec against the kept cluster).
# Each round's edit is a new line in the core manager's main.go, so that
# both sides rebuild the core image. ROUNDS (default 1) rounds; GINKGO_LABEL_FILTER
# as make test-e2e (default PR-Blocking). Results: ARTIFACTS/bench-inner-loop/results.md.
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

trap 'scripts/down.sh >/dev/null 2>&1 || true; rm -rf "$(dirname "$tree")"' EXIT
t=$(date +%s)
scripts/up.sh >"$OUT/up.log" 2>&1
up=$(($(date +%s) - t))
log "make up: ${up}s (once)"

rows=()
for i in $(seq "$ROUNDS"); do
  edit
  t=$(date +%s)
  ARTIFACTS=$OUT/full-$i scripts/ci-e2e.sh >"$OUT/full-$i.log" 2>&1
  full=$(($(date +%s) - t))
  edit
  t=$(date +%s)
  scripts/iterate.sh >"$OUT/inner-$i.log" 2>&1
  inner=$(($(date +%s) - t))
  pct=$((100 * inner / full))
  log "round $i: full ${full}s, inner loop ${inner}s (${pct}%)"
  rows+=("| $i | ${full}s | ${inner}s | ${pct}% |")
done
{
  echo "make up (once): ${up}s"
  echo
  echo "| round | edit → green, full make test-e2e | edit → green, make iterate | inner / full |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} | tee "$OUT/results.md"
