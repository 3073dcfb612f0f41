#!/usr/bin/env bash
# `make test-images`: checks the images `make images` built. Slow, and needs
# the images, so these tests carry the build tag "images" and are not part of
# `make test`:
#   - every Go-built image runs and reports its configured version;
#   - a 2-node kind cluster boots from the node image: nodes Ready, CoreDNS
#     running, pod-to-pod across nodes, a Service by DNS name; nothing left;
#   - CAPD's load balancer image behaves as CAPD drives it;
#   - the cert-manager substitute against a real API server (envtest), with
#     kube-apiserver and etcd taken from the built images;
#   - the webhook call check (webhookcheck.CheckCalls) against the same, and
#     a webhook server on this host that answers, then is gone.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."

scripts/capd-e2e.sh engine ensure --privileged-nesting
plan=$(scripts/capd-e2e.sh images --config "${E2E_CONFIG:-config/e2e.yaml}" --list)
image_of() { awk -v id="$1" '$1 == id {print $3; exit}' <<<"$plan"; }
apiserver=$(image_of "$(awk '$1 ~ /^kube-apiserver\// {print $1; exit}' <<<"$plan")")
etcd=$(image_of "$(awk '$1 ~ /^etcd\// {print $1; exit}' <<<"$plan")")

assets=$(mktemp -d)
trap 'rm -rf "$assets"' EXIT
for pair in "$apiserver:/usr/local/bin/kube-apiserver" "$etcd:/usr/local/bin/etcd"; do
  img=${pair%:/*}; path=/${pair#*:/}
  cid=$(docker create "$img")
  docker cp "$cid:$path" "$assets/" >/dev/null
  docker rm "$cid" >/dev/null
done
echo "envtest assets from $apiserver and $etcd"

KUBEBUILDER_ASSETS=$assets go test -tags images -count=1 -timeout 40m -v -run '^TestIntegration' \
  ./factory/goimages/ ./factory/nodeimage/ ./framework/certmanager/ ./framework/certmanager/webhookcheck/
