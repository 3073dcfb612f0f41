#!/usr/bin/env bash
# `make test-explore`: make up, every step of docs/explore.md
# (scripts/explore-guide.sh), make down; the environment is removed
# whatever happened. NAME defaults to "guide", so that a `make up` of
# one's own is left alone.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."
export NAME=${NAME:-guide}
trap 'scripts/capd-e2e.sh down' EXIT
scripts/install-deps.sh --kubectl
scripts/ci-e2e.sh up
scripts/explore-guide.sh
