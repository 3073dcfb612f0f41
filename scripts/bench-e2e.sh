#!/usr/bin/env bash
# `make bench-e2e`: the suite's timings, both sides in one run of this script.
#
#   pr          the PR-Blocking job (default label filter): suite time (Ginkgo's
#               "Ran ... in"), setup phases, the quick-start's phase table;
#   comparison  our quick-start, upstream's QuickStartSpec and the two log
#               collectors on one management cluster (e2e/comparison_test.go).
#
# With BEFORE_REF (a commit), the PR job also runs from that commit, in a git
# worktree, on the same images (the suite checks images by name), so that
# before and after are measured in the same run. FILTER replaces the PR
# job's label filter (e.g. "remediation" for the before/after of another
# spec; its summary.txt files are reported too); COMPARISON=false skips the
# comparison run. Images must be there (make images). Results:
# $ARTIFACTS/bench-e2e/results.md. About 5 minutes a run.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."
repo=$PWD
out=${ARTIFACTS:-$PWD/_artifacts}/bench-e2e
rm -rf "$out"
mkdir -p "$out"
scripts/install-deps.sh
scripts/ensure-engine.sh --privileged-nesting
GOBIN=$repo/hack/tools/bin go install github.com/onsi/ginkgo/v2/ginkgo
ginkgo=$repo/hack/tools/bin/ginkgo

# suite NAME DIR FILTER: the suite of checkout DIR, as ci-e2e.sh runs it.
suite() {
  local name=$1 dir=$2 filter=$3 rc=0
  echo "bench-e2e: $name (label filter: $filter)" >&2
  (cd "$dir/e2e" && ARTIFACTS=$out/$name "$ginkgo" -v --tags=e2e --timeout=1h --label-filter="$filter" \
    --junit-report=junit.e2e_suite.1.xml --output-dir="$out/$name" . -- \
    -e2e.config="$dir/config/e2e.yaml" -e2e.artifacts-folder="$out/$name") >"$out/$name.log" 2>&1 || rc=$?
  if ((rc != 0)); then
    echo "bench-e2e: $name failed (rc $rc); see $out/$name.log" >&2
    return "$rc"
  fi
}

# report NAME: the suite time, setup phases and test cases of a run.
report() {
  local name=$1
  echo "## $name"
  echo
  grep -Eo 'Ran [0-9]+ of [0-9]+ Specs in [0-9.]+ seconds' "$out/$name.log" | tail -1 | sed 's/^/suite: /'
  echo
  echo '| setup phase | time |'
  echo '|---|---|'
  sed -nE 's/.*setup: (.*) done in ([0-9.hmsµ]+)$/| \1 | \2 |/p' "$out/$name.log"
  echo
  echo '| spec (JUnit) | time s |'
  echo '|---|---|'
  sed -nE 's/.*<testcase name="([^"]*)".* time="([0-9.]+)".*/| \1 | \2 |/p' "$out/$name/junit.e2e_suite.1.xml" |
    grep -v '\[SynchronizedBeforeSuite\]\|\[SynchronizedAfterSuite\]\|\[ReportAfterSuite\]\| | 0 |$' || true
  for f in "$out/$name"/clusters/*/summary.txt; do
    [[ -f $f ]] || continue
    echo
    echo '```'
    cat "$f"
    echo '```'
  done
  for f in "$out/$name"/comparison/log-collectors/*/comparison.txt; do
    [[ -f $f ]] || continue
    echo
    echo '```'
    sed -n '1,4p' "$f"
    echo '```'
  done
  echo
}

filter=${FILTER:-PR-Blocking && !comparison}
runs=()
if [[ -n ${BEFORE_REF:-} ]]; then
  before=$(mktemp -d)/before
  git worktree add --detach "$before" "$BEFORE_REF" >&2
  trap 'git worktree remove --force "$before" >/dev/null 2>&1 || true' EXIT
  suite pr-before "$before" "$filter"
  runs+=(pr-before)
fi
suite pr "$repo" "$filter"
runs+=(pr)
if [[ ${COMPARISON:-true} == true ]]; then
  suite comparison "$repo" '(comparison && !scale) || (PR-Blocking && !comparison)'
  runs+=(comparison)
fi
{
  echo "# bench-e2e $(date -u +%FT%TZ) at $(git rev-parse --short HEAD)${BEFORE_REF:+, before = $BEFORE_REF}, $(nproc) CPUs"
  echo
  for r in "${runs[@]}"; do report "$r"; done
} >"$out/results.md"
cat "$out/results.md"
