#!/usr/bin/env bash
# `make down`: removes the environment `make up` kept under NAME (default
# "explore"): its kind management cluster, its workload clusters' machines
# and load balancers, everything labelled with its run id, its markers and
# its kubeconfigs. Its artifacts stay in _explore/NAME/artifacts.
set -o errexit -o nounset -o pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
NAME=${NAME:-explore}
DIR=$REPO_ROOT/_explore/$NAME

if ! scripts/capd-e2e.sh clean --list | grep -q "kept as $NAME)"; then
  kept=$(scripts/capd-e2e.sh clean --list | { grep -o 'kept as [^)]*' || true; } | sed 's/kept as //' | tr '\n' ' ')
  echo "make down: no environment \"$NAME\" is up; nothing removed.${kept:+ Kept environments: ${kept}(make down NAME=<name>).}"
  rm -f "$DIR"/*.kubeconfig "$DIR/env.txt"
  exit 0
fi
scripts/capd-e2e.sh clean --run "$NAME"
rm -f "$DIR"/*.kubeconfig "$DIR/env.txt"
echo "make down: \"$NAME\" removed; its artifacts stay in $DIR/artifacts"
