#!/usr/bin/env bash
# `make test-explore`: make up, every step of docs/explore.md
# (scripts/explore-guide.sh), make down; the environment is removed
# whatever happened. NAME defaults to "guide", so that a `make up` of
# one's own is left alone.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."
export NAME=${NAME:-guide}
trap 'scripts/down.sh' EXIT
scripts/up.sh
scripts/explore-guide.sh
