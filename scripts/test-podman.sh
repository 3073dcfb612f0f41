#!/usr/bin/env bash
# Runs the runtime's integration tests, and those of the packages built on
# it (leak checks, image assembly, logs, snapshots, the cloud provider's
# instances and load balancers), against Podman's Docker-compatible
# service, to keep "any Docker-API endpoint" true. These tests set every
# container's ulimits themselves, so they need none of the host settings
# of capd-e2e engine podman (the E2E on Podman does: make test-e2e-podman). Installs Debian's podman if
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
# The cloud provider's load balancer test runs the harness's haproxy image:
# copied through our runtime from the Docker engine when it holds it
# current (make test built it there), else built into Podman.
scripts/capd-e2e.sh images --only haproxy | grep -E 'haproxy|images:'
(cd cloudprovider && go test -count=1 -run '^TestIntegration' ./...)
