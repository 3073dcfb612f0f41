#!/usr/bin/env bash
# `make up`: a management cluster and a workload cluster, left running to
# explore (docs/explore.md). NAME (default "explore") names the
# environment; FLAVOR (default "topology": a Cluster of the ClusterClass
# quick-start with a MachineDeployment and a MachinePool; "" the classic
# template), CONTROL_PLANE_MACHINE_COUNT and WORKER_MACHINE_COUNT (default
# 1) shape the workload cluster; CCM=false leaves out the docker
# cloud-controller-manager. It runs scripts/ci-e2e.sh (images, setup, the
# quick-start's checks) with the cluster kept, then prints how to reach
# both clusters: kubeconfigs in _explore/NAME/. `make down` removes
# exactly that environment. Later runs and `make clean-e2e` leave it alone.
set -o errexit -o nounset -o pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
scripts/install-deps.sh --kubectl
NAME=${NAME:-explore}
[[ $NAME =~ ^[a-zA-Z0-9][a-zA-Z0-9_.-]*$ ]] || { echo "make up: NAME=$NAME: want letters, digits, '_', '.' or '-'" >&2; exit 2; }
DIR=$REPO_ROOT/_explore/$NAME

if scripts/capd-e2e.sh clean --list | grep -q "kept as $NAME)"; then
  echo "make up: environment \"$NAME\" is already up (kubeconfigs in $DIR):" >&2
  scripts/capd-e2e.sh clean --list | grep "kept as $NAME)" >&2
  echo "make up: use it, remove it with \`make down NAME=$NAME\`, or bring up another with NAME=<name>" >&2
  exit 1
fi

export CAPD_E2E_RUN_ID=${CAPD_E2E_RUN_ID:-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')}
export CAPD_E2E_KEEP=$NAME CAPD_E2E_ENV_DIR=$DIR SKIP_RESOURCE_CLEANUP=true GINKGO_LABEL_FILTER=explore
export ARTIFACTS=$DIR/artifacts
export EXPLORE_FLAVOR=${FLAVOR-topology}
[[ -n ${CONTROL_PLANE_MACHINE_COUNT:-} ]] && export EXPLORE_CONTROL_PLANE_MACHINE_COUNT=$CONTROL_PLANE_MACHINE_COUNT
[[ -n ${WORKER_MACHINE_COUNT:-} ]] && export EXPLORE_WORKER_MACHINE_COUNT=$WORKER_MACHINE_COUNT
# Booleans as Go's strconv.ParseBool spells them, as everywhere.
case ${CCM:-true} in
1 | t | T | true | TRUE | True) ;;
0 | f | F | false | FALSE | False) export DOCKER_CLOUD_PROVIDER= ;;
*) echo "make up: CCM=$CCM: want true or false" >&2; exit 2 ;;
esac
rm -rf "$DIR"
mkdir -p "$DIR"

if ! scripts/ci-e2e.sh; then
  echo "make up: bringing up \"$NAME\" failed (artifacts: $ARTIFACTS, report: $ARTIFACTS/report.html); removing what it made" >&2
  scripts/capd-e2e.sh clean --run "$NAME,$CAPD_E2E_RUN_ID" >&2 || true
  exit 1
fi

# shellcheck disable=SC1091
source "$DIR/env.txt"
cat <<EOF_
make up: "$NAME" is up (run $run_id).
  management cluster  kind cluster $management_cluster
                      export KUBECONFIG=$DIR/management.kubeconfig
  workload cluster    $workload_clusters
                      kubectl --kubeconfig $DIR/workload.kubeconfig get nodes -o wide
  clusterctl config   $clusterctl_config
Try:
  kubectl --kubeconfig $DIR/management.kubeconfig get clusters,machinedeployments,machinepools,machines -A
  kubectl --kubeconfig $DIR/workload.kubeconfig get pods -A
  docker ps --filter label=io.x-k8s.kind.cluster
The guide: docs/explore.md. Remove it all: make down$( [[ $NAME == explore ]] || echo " NAME=$NAME" )
EOF_
