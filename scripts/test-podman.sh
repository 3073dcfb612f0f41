#!/usr/bin/env bash
# Runs the runtime's integration tests against Podman's Docker-compatible
# service, to keep "any Docker-API endpoint" true. Installs Debian's podman if
# missing, serves it on a private socket for the duration of the run, and
# stops it afterwards.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."

if ! command -v podman >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman >/dev/null
fi
sockdir=$(mktemp -d)
podman system service --time=0 "unix://$sockdir/podman.sock" >"$sockdir/service.log" 2>&1 &
svc=$!
trap 'kill $svc 2>/dev/null || true; wait $svc 2>/dev/null || true; rm -rf "$sockdir"' EXIT
for _ in $(seq 30); do [[ -S $sockdir/podman.sock ]] && break; sleep 1; done
echo "podman $(podman --version | awk '{print $3}') at unix://$sockdir/podman.sock"
export DOCKER_HOST="unix://$sockdir/podman.sock"
(cd framework/runtime && go test -count=1 -run '^TestIntegration' ./...)
go test -count=1 -run '^TestIntegration' ./framework/leak/... ./factory/oci/... ./framework/logs/... ./framework/snapshot/...
