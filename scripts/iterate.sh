#!/usr/bin/env bash
# `make iterate`: the inner loop on a kept environment. With `make up`
# running (NAME, default explore) from the same CAPI_SOURCE_DIR, it
# rebuilds the Cluster API controller images from the tree (only those
# whose inputs changed: make images caches by content), loads the changed
# ones into the kept management cluster's nodes, restarts the controllers
# that run them and waits for their rollout, then runs the chosen spec
# (GINKGO_LABEL_FILTER) against that management cluster with
# USE_EXISTING_CLUSTER. The default, md-rollout, rolls out the kept
# workload cluster's MachineDeployments (CAPD_E2E_WORKLOAD_CLUSTER): every
# controller at work on a cluster that is up already, which it leaves
# running; any other spec creates and deletes a cluster of its own
# (PR-Blocking: the quick-start). Artifacts: _explore/NAME/iterate/<time>.
set -o errexit -o nounset -o pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
scripts/install-deps.sh --kubectl
NAME=${NAME:-explore}
DIR=$REPO_ROOT/_explore/$NAME
log() { printf '[iterate %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { echo "make iterate: $*" >&2; exit 2; }

[[ -s $DIR/env.txt ]] || die "no environment \"$NAME\" is up: \`CAPI_SOURCE_DIR=... make up NAME=$NAME\` first"
[[ -n ${CAPI_SOURCE_DIR:-} ]] || die "CAPI_SOURCE_DIR is unset: the inner loop rebuilds Cluster API's controllers from your tree"
# shellcheck disable=SC1091
source "$DIR/env.txt"
tree=$(realpath "$CAPI_SOURCE_DIR")
[[ $capi_source == "$tree" ]] || die "\"$NAME\" runs Cluster API from ${capi_source:-its release (no CAPI_SOURCE_DIR)}, not $tree: bring it up with CAPI_SOURCE_DIR=$tree"
export KUBECONFIG=$DIR/management.kubeconfig
start=$(date +%s)

# The controllers' images, as the kept cluster runs them.
mapfile -t deployments < <(kubectl get deployments -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {.spec.template.spec.containers[*].image}{"\n"}{end}' | grep '/cluster-api/')
((${#deployments[@]})) || die "no Cluster API controller runs in \"$NAME\""
declare -A before
for d in "${deployments[@]}"; do
  for ref in ${d#* }; do before[$ref]=$(docker image inspect -f '{{.Id}}' "$ref" 2>/dev/null || echo none); done
done

log "rebuilding Cluster API's controllers from $tree (only what changed)"
IMAGES_ONLY=cluster-api/core,cluster-api/kubeadm-bootstrap,cluster-api/kubeadm-control-plane,cluster-api/docker \
  scripts/images.sh >"$DIR/iterate-images.log" 2>&1 || { tail -20 "$DIR/iterate-images.log" >&2; die "the image build failed (log: $DIR/iterate-images.log)"; }
grep -E 'built in|images:' "$DIR/iterate-images.log" | sed 's/^/  /' || true
changed=()
for ref in "${!before[@]}"; do
  [[ $(docker image inspect -f '{{.Id}}' "$ref") != "${before[$ref]}" ]] && changed+=("$ref")
done
log "rebuilt and changed: ${changed[*]:-none}"

# take_over_leases NS OLD_PODS...: a restarted controller leads only once
# its old pod's leader lease expires (15 s for Cluster API's managers,
# which do not release it when they stop). Once that old pod is gone, its
# lease is stale: deleted here, so that the new pod leads at its next try
# (2 s); then wait until a pod of the new ones holds it.
take_over_leases() {
  local ns=$1 lease holder pod i
  shift
  local old=" $* "
  while read -r lease holder; do
    pod=${holder%%_*}
    [[ -n $pod && $old == *" $pod "* ]] || continue
    kubectl wait --for=delete "pod/$pod" -n "$ns" --timeout=2m >/dev/null 2>&1 || true
    ! kubectl get pod -n "$ns" "$pod" >/dev/null 2>&1 || die "the old pod $ns/$pod is still there 2m after the restart"
    # Only if the old pod still holds it: the new one may have taken it.
    [[ $(kubectl get lease -n "$ns" "$lease" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null) == "$holder" ]] || continue
    kubectl delete lease -n "$ns" "$lease" >/dev/null
    for ((i = 0; i < 60; i++)); do
      holder=$(kubectl get lease -n "$ns" "$lease" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true)
      pod=${holder%%_*}
      [[ -n $pod && $old != *" $pod "* ]] && break
      sleep 1
    done
    [[ -n $pod && $old != *" $pod "* ]] || die "no new pod of $ns took the lease $lease within 60s"
    log "lease $ns/$lease: released by the old pod, held by $pod"
  done < <(kubectl get leases -n "$ns" -o jsonpath='{range .items[*]}{.metadata.name} {.spec.holderIdentity}{"\n"}{end}')
}

if ((${#changed[@]})); then
  scripts/capd-e2e.sh load --cluster "$management_cluster" "${changed[@]}"
  restarted=()
  declare -A old_pods
  for d in "${deployments[@]}"; do
    for ref in "${changed[@]}"; do
      if [[ " ${d#* } " == *" $ref "* ]]; then
        ns=${d%%/*} name=${d%% *}; name=${name#*/}
        old_pods[$ns]="${old_pods[$ns]:-} $(kubectl get pods -n "$ns" -o jsonpath='{.items[*].metadata.name}')"
        kubectl rollout restart deployment -n "$ns" "$name"
        restarted+=("$ns/$name")
        break
      fi
    done
  done
  # All at once: they restart side by side.
  for d in "${restarted[@]}"; do
    kubectl rollout status deployment -n "${d%%/*}" "${d#*/}" --timeout=5m
  done
  for ns in "${!old_pods[@]}"; do
    # shellcheck disable=SC2086 # a list of pod names
    take_over_leases "$ns" ${old_pods[$ns]}
  done
  log "controllers rolled out and leading after $(($(date +%s) - start))s"
fi

export USE_EXISTING_CLUSTER=true GINKGO_LABEL_FILTER=${GINKGO_LABEL_FILTER:-md-rollout}
# The kept workload cluster, for a spec that works on an existing one, and
# its cloud provider, so that the spec checks the manager where it runs.
read -ra clusters <<<"${workload_clusters:-}"
if ((${#clusters[@]} == 1)); then
  export CAPD_E2E_WORKLOAD_CLUSTER=${clusters[0]}
elif [[ $GINKGO_LABEL_FILTER == md-rollout ]]; then
  die "\"$NAME\" keeps ${#clusters[@]} workload clusters (${workload_clusters:-none}): md-rollout needs exactly one"
fi
export DOCKER_CLOUD_PROVIDER=${cloud_provider-external}
export ARTIFACTS=$DIR/iterate/$(date -u +%Y%m%dT%H%M%S)
log "running \"$GINKGO_LABEL_FILTER\" against \"$NAME\" (artifacts: $ARTIFACTS)"
rc=0
scripts/ci-e2e.sh || rc=$?
log "make iterate: $([[ $rc == 0 ]] && echo passed || echo failed) in $(($(date +%s) - start))s"
exit "$rc"
