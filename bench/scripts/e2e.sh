#!/usr/bin/env bash
# `make bench-e2e`: the suite's timings, both sides in one run of this script.
#
#   pr          the PR-Blocking job (default label filter): suite time (Ginkgo's
#               "Ran ... in"), setup phases, the quick-start's phase table;
#   comparison  our quick-start, upstream's QuickStartSpec and the two log
#               collectors on one management cluster (bench/e2e, a suite of its own).
#
# For every workload cluster of a run, results.md also tells when KCP's
# cluster cache tried to connect to it against when its API server started
# (see connections): the step "control plane initialized" waits on; and,
# for every machine, when its kube-router peered with the others (see
# peerings): the step a worker's pods wait on to reach the other nodes'.
#
# With BEFORE_REF (a commit), the PR job also runs from that commit, in a git
# worktree, on the same images (the suite checks images by name), so that
# before and after are measured in the same run. BEFORE_DIR instead names a
# checkout prepared by hand (e.g. an old commit whose suite reads manifests
# that its own `make images` renders into out/). FILTER replaces the PR
# job's label filter (e.g. "remediation" for the before/after of another
# spec; its summary.txt files are reported too); SKIP is a regular expression
# of spec texts to leave out of the before and after runs (ginkgo --skip),
# e.g. a spec only the after side has; COMPARISON=false skips the
# comparison run. Images must be there (make images). Results:
# $ARTIFACTS/bench-e2e/results.md. About 5 minutes a run.
#
# A run that fails is marked failed in results.md and the others still run;
# the script then exits 1. Each run's artifacts and log are scanned for
# secrets with this checkout's `capd-e2e secrets` (bench-e2e runs ginkgo
# directly, without capd-e2e run's last scan, and an older checkout may redact
# less): anything found is redacted, and the run is marked failed.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
out=${ARTIFACTS:-$PWD/_artifacts}/bench-e2e
rm -rf "$out"
mkdir -p "$out"
scripts/install-deps.sh
scripts/capd-e2e.sh engine ensure --privileged-nesting
GOBIN=$repo/hack/tools/bin go install github.com/onsi/ginkgo/v2/ginkgo
ginkgo=$repo/hack/tools/bin/ginkgo
go build -o hack/tools/bin/capd-e2e ./cmd/capd-e2e
secrets() { "$repo/hack/tools/bin/capd-e2e" secrets "$@"; }
declare -A failed=()

# suite NAME DIR SUITE FILTER [SKIP_REGEXP]: the suite in folder SUITE of
# checkout DIR (e2e, the product's; bench/e2e, the measurements'), as
# ci-e2e.sh runs it.
suite() {
  local name=$1 dir=$2 sub=$3 filter=$4 skip=${5:-} rc=0
  echo "bench-e2e: $name (label filter: $filter)" >&2
  (cd "$dir/$sub" && ARTIFACTS=$out/$name "$ginkgo" -v --tags=e2e --timeout=1h --label-filter="$filter" ${skip:+--skip="$skip"} \
    --junit-report=junit.e2e_suite.1.xml --output-dir="$out/$name" . -- \
    -e2e.config="$dir/config/e2e.yaml" -e2e.artifacts-folder="$out/$name") >"$out/$name.log" 2>&1 || rc=$?
  if ((rc != 0)); then
    echo "bench-e2e: $name failed (rc $rc); see $out/$name.log" >&2
    failed[$name]="the suite exited with code $rc ($name.log)"
  fi
  if ! secrets scan "$out/$name" "$out/$name.log" >"$out/$name.secrets-scan.txt" 2>&1; then
    secrets redact "$out/$name" "$out/$name.log" >>"$out/$name.secrets-scan.txt" 2>&1 || true
    echo "bench-e2e: $name left secrets, now redacted; see $out/$name.secrets-scan.txt" >&2
    failed[$name]="${failed[$name]:+${failed[$name]}; }secrets found and redacted ($name.secrets-scan.txt)"
  fi
}

# workload_clusters DIR: "<folder>|<name for the tables>" for each workload
# cluster whose logs a run collected: ours under clusters/, upstream's
# spec's under comparison/upstream-quick-start/clusters/.
workload_clusters() {
  local cl base
  for cl in "$1"/clusters/*/ "$1"/comparison/upstream-quick-start/clusters/*/; do
    base=$(basename "$cl")
    [[ $base != bootstrap && -d $cl/machines ]] || continue
    if [[ $cl == */upstream-quick-start/* ]]; then
      echo "$cl|$base (upstream's spec)"
    else
      echo "$cl|$base"
    fi
  done
}

# connections DIR: for each workload cluster of a run, when KCP's cluster
# cache tried to connect to it and with what result, against when its first
# kube-apiserver logged "Serving securely". CAPI's cluster cache retries a
# failed connection only after 30 s (ConnectionCreationRetryInterval, no
# flag), so "wait for control plane initialized" moves in steps of 30 s
# with the control plane's start, whatever the spec does; this table shows
# which step each cluster took. Times are UTC, as the logs give them.
# Where the first control plane's start went: when CAPD ran kubeadm init
# (after its ~40 file-writing execs), when etcd logged its first line, and
# the kubelet's "cgroups exist and are correctly applied" errors, after
# each of which the kubelet retries that pod about 10 s later (on cgroup v1
# a pod slice's mkdir can race systemd; kubernetes/kubernetes#103542).
connections() {
  local dir=$1 kcp capd cl base name api wait init etcd cgroup
  kcp=$(ls "$dir"/clusters/bootstrap/logs/capi-kubeadm-control-plane-system/*/*/manager.log 2>/dev/null | head -1 || true)
  [[ -n $kcp ]] || return 0
  capd=$(ls "$dir"/clusters/bootstrap/logs/capd-system/*/*/manager.log 2>/dev/null | head -1 || true)
  echo
  echo '| cluster | KCP cluster-cache connection attempts (logged as each ends) | kubeadm init run | etcd first log line | first kube-apiserver "Serving securely" | kubelet pod cgroup errors | wait for control plane initialized |'
  echo '|---|---|---|---|---|---|---|'
  while IFS='|' read -r cl name; do
    base=$(basename "$cl")
    wait=$(sed -nE 's/^ *\+[^ ]+ +([^ ]+) +[a-z]+ +wait for control plane initialized$/\1/p' "$cl/summary.txt" 2>/dev/null || true)
    api=$(cat "$cl"/machines/*control-plane*/pods/kube-system_kube-apiserver-*/*/*.log 2>/dev/null |
      sed -nE 's/^[0-9-]+T([0-9:]+\.[0-9])[0-9]*Z .*Serving securely.*/\1/p' | sort | head -1 || true)
    init=$([[ -n $capd ]] && grep -F 'kubeadm init' "$capd" | grep -F "/$base-control-plane-" |
      awk '{ print substr($2, 1, 10); exit }' || true)
    etcd=$(for f in "$cl"/machines/*control-plane*/pods/kube-system_etcd-*/etcd/0.log; do
      [[ -f $f ]] && sed -nE '1s/^[0-9-]+T([0-9:]+\.[0-9]).*/\1/p' "$f"; done 2>/dev/null | sort | head -1 || true)
    cgroup=$(cat "$cl"/machines/*control-plane*/kubelet.log 2>/dev/null | grep -F 'cgroups exist and are correctly applied' |
      sed -nE 's/^[A-Z][a-z]+ [0-9]+ ([0-9:]+\.[0-9]).* pod="([^"]*)".*/\2 \1/p' | sed "s/-$base-control-plane-[^ ]*//" | paste -sd ';' - || true)
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" \
      "$(grep -E "\"(Connect failed|Connected)\".* Cluster=\"[^\"]*/$base\"" "$kcp" | awk '{
          t = substr($2, 1, 10)
          if ($0 ~ /"Connected"/) r = "connected"
          else if ($0 ~ /kubeconfig secret.*not found/) r = "failed, no kubeconfig Secret yet"
          else if ($0 ~ /not reachable/) r = "failed, not reachable"
          else r = "failed"
          printf "%s%s %s", (n++ ? "; " : ""), t, r
        }')" \
      "${init:-?}" "${etcd:-?}" "${api:-?}" "${cgroup:-none}" "${wait:--}"
  done < <(workload_clusters "$dir")
}

# peerings DIR: for each machine of each workload cluster, when its kubelet
# registered the Node, when its kube-router started, and when that
# kube-router added each BGP peer and brought the session up. Until a
# session is up, pods on the two nodes cannot reach each other (the
# LoadBalancer check does not wait on it: its pod runs on a node that can
# back the load balancer, where haproxy's traffic enters). kube-router
# peers with a node at the Node's add event only if it has an address
# then, which with an external cloud provider it has not (the
# cloud-controller-manager gives it one), so the peer comes at
# kube-router's next periodic sync (--routes-sync-period,
# cni.KubeRouterRoutesSyncPeriod); GoBGP then waits a random 5-10 s
# before its first connect (minConnectRetryInterval, no flag), and a
# connect from a node the other side has not added yet is refused (logged
# by the refusing side); the refused side tries again only after GoBGP's
# connect-retry (120 s), so the session waits for the other's connect.
# Times UTC.
peerings() {
  local dir=$1 cl m name reg kr ip
  echo
  echo '| cluster | machine (its IP) | Node registered | kube-router started | peers added (peer IP at) | connects refused (peer IP at) | sessions up (peer IP at) |'
  echo '|---|---|---|---|---|---|---|'
  while IFS='|' read -r cl name; do
    for m in "$cl"/machines/*/; do
      reg=$(grep -F 'Successfully registered node' "$m/kubelet.log" 2>/dev/null |
        awk '{ print substr($3, 1, 10); exit }' || true)
      kr=$(ls "$m"/pods/kube-system_kube-router-*/kube-router/*.log 2>/dev/null | head -1 || true)
      ip=$(jq -r '[.NetworkSettings.Networks[]?.IPAddress | select(. != "")] | first // empty' "$m/inspect.json" 2>/dev/null || true)
      printf '| %s | %s (%s) | %s | %s | %s | %s | %s |\n' "$name" "$(basename "$m")" "${ip:-?}" "${reg:-?}" \
        "$([[ -n $kr ]] && sed -nE '1s/^[0-9-]+T([0-9:]+\.[0-9]).*/\1/p' "$kr" || echo '?')" \
        "$(gobgp_events "$kr" 'Add a peer configuration')" \
        "$(gobgp_events "$kr" "Can't find configuration for a new passive connection")" "$(gobgp_events "$kr" 'Peer Up')"
    done
  done < <(workload_clusters "$dir")
}

# gobgp_events LOG MSG: "<peer IP> <time>" for each line of kube-router's
# LOG (none if empty) where GoBGP logged MSG, joined by ';'.
gobgp_events() {
  [[ -n $1 ]] || return 0
  grep -F "msg=\"$2\"" "$1" | sed -nE 's/^[0-9-]+T([0-9:]+\.[0-9]).* Key=([^ ]+).*/\2 \1/p' | paste -sd ';' - || true
}

# report NAME: the suite time, setup phases and test cases of a run.
report() {
  local name=$1
  echo "## $name"
  echo
  if [[ -n ${failed[$name]:-} ]]; then
    echo "**FAILED:** ${failed[$name]}"
    echo
  fi
  grep -Eo 'Ran [0-9]+ of [0-9]+ Specs in [0-9.]+ seconds' "$out/$name.log" | tail -1 | sed 's/^/suite: /'
  echo
  echo '| setup phase | time |'
  echo '|---|---|'
  sed -nE 's/.*setup: (.*) done in ([0-9.hmsµ]+)$/| \1 | \2 |/p' "$out/$name.log"
  echo
  echo '| spec (JUnit) | status | time s |'
  echo '|---|---|---|'
  [[ -f $out/$name/junit.e2e_suite.1.xml ]] &&
    sed -nE 's/.*<testcase name="([^"]*)".* status="([a-z]+)".* time="([0-9.]+)".*/| \1 | \2 | \3 |/p' "$out/$name/junit.e2e_suite.1.xml" |
    grep -v '\[SynchronizedBeforeSuite\]\|\[SynchronizedAfterSuite\]\|\[ReportAfterSuite\]\| skipped | \| | 0 |$' || true
  for f in "$out/$name"/clusters/*/summary.txt; do
    [[ -f $f ]] || continue
    echo
    echo '```'
    cat "$f"
    echo '```'
  done
  connections "$out/$name"
  peerings "$out/$name"
  for f in "$out/$name"/comparison/log-collectors/*/comparison.txt; do
    [[ -f $f ]] || continue
    echo
    echo '```'
    sed -n '1,4p' "$f"
    echo '```'
  done
  echo
}

# "!comparison" keeps a checkout from before bench/e2e (whose e2e suite held
# the comparison specs) to the same specs.
filter=${FILTER:-PR-Blocking && !comparison}
runs=()
if [[ -n ${BEFORE_DIR:-} ]]; then
  [[ -f $BEFORE_DIR/e2e/e2e_suite_test.go ]] || { echo "bench-e2e: BEFORE_DIR=$BEFORE_DIR holds no e2e suite" >&2; exit 1; }
  suite pr-before "$(cd "$BEFORE_DIR" && pwd)" e2e "$filter" "${SKIP:-}"
  runs+=(pr-before)
elif [[ -n ${BEFORE_REF:-} ]]; then
  before=$(mktemp -d)/before
  git worktree add --detach "$before" "$BEFORE_REF" >&2
  trap 'git worktree remove --force "$before" >/dev/null 2>&1 || true' EXIT
  suite pr-before "$before" e2e "$filter" "${SKIP:-}"
  runs+=(pr-before)
fi
suite pr "$repo" e2e "$filter" "${SKIP:-}"
runs+=(pr)
if [[ ${COMPARISON:-true} == true ]]; then
  suite comparison "$repo" bench/e2e '!scale'
  runs+=(comparison)
fi
{
  echo "# bench-e2e $(date -u +%FT%TZ) at $(git rev-parse --short HEAD)${BEFORE_REF:+, before = $BEFORE_REF}${BEFORE_DIR:+, before = $BEFORE_DIR}, label filter: $filter${SKIP:+, skip: $SKIP}, $(nproc) CPUs"
  echo
  for r in "${runs[@]}"; do report "$r"; done
} >"$out/results.md"
cat "$out/results.md"
if ((${#failed[@]} > 0)); then
  echo "bench-e2e: failed runs: ${!failed[*]}" >&2
  exit 1
fi
