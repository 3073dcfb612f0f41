#!/usr/bin/env bash
# Prow entry point, and what `make test-e2e` runs: the machine's packages
# and engine, then the supervised run (`capd-e2e run`: the images the
# selected specs need, the suite, and the leak check, reports and secrets
# scan after it, whatever happened; see internal/cli/run.go). `make up`
# and `make iterate` run it with the subcommand `up` or `iterate`
# (internal/cli/up.go, iterate.go), supervised runs too.
#
#   scripts/ci-e2e.sh [run|up|iterate] [FLAGS]
#
# Honours upstream's variables, which are capd-e2e run's defaults: ARTIFACTS
# (default: _artifacts), GINKGO_FOCUS, GINKGO_SKIP (space separated),
# GINKGO_LABEL_FILTER (default: PR-Blocking), GINKGO_NODES (default 1),
# GINKGO_TIMEOUT (default 3h), E2E_CONFIG, E2E_SUITE_DIR (a provider's suite
# in its own module works too), SKIP_RESOURCE_CLEANUP and
# USE_EXISTING_CLUSTER (true or false), GRACE_PERIOD (default 10m: how long
# the suite gets to clean up after SIGTERM before it is killed).
set -o errexit -o nounset -o pipefail

REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
export ARTIFACTS=${ARTIFACTS:-$REPO_ROOT/_artifacts}
mkdir -p "$ARTIFACTS/localhost"

# The ginkgo CLI, at the version go.mod requires, compiles while packages
# install and the engine is checked (which compiles the command line), in
# a process group of its own so that an early exit stops it too.
TOOLS_LOG=$ARTIFACTS/localhost/tools-build.log
GOBIN=$REPO_ROOT/hack/tools/bin CGO_ENABLED=0 setsid go install github.com/onsi/ginkgo/v2/ginkgo >"$TOOLS_LOG" 2>&1 </dev/null &
tools=$!
trap 'kill -- -"$tools" 2>/dev/null || true' EXIT
scripts/install-deps.sh
scripts/capd-e2e.sh engine ensure --privileged-nesting
if ! wait "$tools"; then
  echo "ci-e2e: compiling the tools failed (log: $TOOLS_LOG):" >&2
  tail -20 "$TOOLS_LOG" >&2
  exit 1
fi
trap - EXIT

# exec: Prow's signals reach the supervisor, which passes them on.
exec scripts/capd-e2e.sh "${1:-run}" --ginkgo "$REPO_ROOT/hack/tools/bin/ginkgo" "${@:2}"
