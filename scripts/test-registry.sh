#!/usr/bin/env bash
# `make test-registry`: the registry round trip, for real, against a
# registry run here (Debian's docker-registry, on 127.0.0.1:REGISTRY_PORT,
# default 5001, storage in a temporary folder):
#   1. `make images` with IMAGE_PUBLISH: every image the plan provides is
#      pushed to the registry;
#   2. the targets (node images, load balancer, controllers, substitute)
#      are removed from the engine;
#   3. `make images` with IMAGE_MIRROR: they come back through the pull
#      policy, from the registry, and nothing is built;
#   4. with E2E=true, the quick-start runs on the pulled images.
# The build log of each step goes to ARTIFACTS/registry (default
# _artifacts/registry). Nothing of the registry is left afterwards.
set -o errexit -o nounset -o pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
PORT=${REGISTRY_PORT:-5001}
REG=127.0.0.1:$PORT
OUT=${ARTIFACTS:-$REPO_ROOT/_artifacts}/registry
mkdir -p "$OUT"
log() { printf '[test-registry %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }

command -v docker-registry >/dev/null || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-registry >/dev/null; }
store=$(mktemp -d)
cat >"$store/config.yml" <<CFG
version: 0.1
storage:
  filesystem: {rootdirectory: $store/data}
  delete: {enabled: true}
http:
  addr: $REG
CFG
docker-registry serve "$store/config.yml" >"$OUT/registry.log" 2>&1 &
registry=$!
trap 'kill $registry 2>/dev/null || true; wait $registry 2>/dev/null || true; rm -rf "$store"' EXIT
for _ in $(seq 30); do curl -fsS "http://$REG/v2/" >/dev/null 2>&1 && break; sleep 1; done
curl -fsS "http://$REG/v2/" >/dev/null || { log "the registry did not answer at $REG"; exit 1; }
log "registry $(docker-registry --version 2>/dev/null | head -1) at $REG"

t0=$(date +%s)
IMAGE_PUBLISH=$REG scripts/images.sh >"$OUT/1-publish.log" 2>&1
log "1. published in $(( $(date +%s) - t0 ))s: $(grep -c 'published as' "$OUT/1-publish.log") images, $(du -sh "$store/data" | cut -f1) in the registry"

targets=$(scripts/capd-e2e.sh images --config "${E2E_CONFIG:-config/e2e.yaml}" --list | awk '$4 == "target" {print $3}')
for img in $targets; do docker rmi "$img" >/dev/null; done
missing=0
for img in $targets; do docker image inspect "$img" >/dev/null 2>&1 || missing=$((missing + 1)); done
log "2. removed the $missing targets from the engine: $(echo $targets)"

t0=$(date +%s)
IMAGE_MIRROR=$REG scripts/images.sh >"$OUT/3-pull.log" 2>&1
pulled=$(grep -c ': pulled ' "$OUT/3-pull.log" || true)
built=$(grep -c ': building ' "$OUT/3-pull.log" || true)
log "3. provided again in $(( $(date +%s) - t0 ))s: $pulled pulled, $built built"
grep ': pulled ' "$OUT/3-pull.log" | sed 's/^/   /'
for img in $targets; do docker image inspect "$img" >/dev/null || { log "$img is missing after the pull"; exit 1; }; done
[[ $built -eq 0 ]] || { log "images were built although the registry had them"; exit 1; }

if [[ ${E2E:-false} == true ]]; then
  log "4. the quick-start on the pulled images"
  IMAGE_MIRROR=$REG scripts/ci-e2e.sh
fi
