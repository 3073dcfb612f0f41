#!/usr/bin/env bash
# `make test-explore`: make up, every step of docs/explore.md
# (scripts/explore-guide.sh), make down; the environment is removed
# whatever happened. NAME defaults to "guide", so that a `make up` of
# one's own is left alone.
#
# With CAPI_SOURCE_DIR (a Cluster API tree), the environment runs that
# tree's controllers, and one `make iterate` runs before the guide: the
# inner loop on the kept cluster. EXPLORE_EDIT, a file of the tree, gets a
# comment line appended first, so that the loop rebuilds, loads and rolls
# out a controller for real (CI edits its own throwaway tree so).
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."
export NAME=${NAME:-guide}
trap 'scripts/capd-e2e.sh down' EXIT
scripts/install-deps.sh --kubectl
scripts/ci-e2e.sh up
if [[ -n ${CAPI_SOURCE_DIR:-} ]]; then
  if [[ -n ${EXPLORE_EDIT:-} ]]; then
    echo "// test-explore: an edit for make iterate, $(date -u +%FT%TZ)" >>"$CAPI_SOURCE_DIR/$EXPLORE_EDIT"
  fi
  scripts/ci-e2e.sh iterate
fi
scripts/explore-guide.sh
