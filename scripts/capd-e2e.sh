#!/usr/bin/env bash
# Runs the harness's command line (cmd/capd-e2e), compiled into
# hack/tools/bin as the suite is (gobuild.HarnessEnv and HarnessFlags), so
# that they share their packages; a second call only checks it is current.
set -o errexit -o nounset -o pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
(cd "$REPO_ROOT" && GOGC=${GOGC:-400} CGO_ENABLED=0 go build -gcflags=all=-dwarf=false -o hack/tools/bin/capd-e2e ./cmd/capd-e2e)
exec "$REPO_ROOT/hack/tools/bin/capd-e2e" "$@"
