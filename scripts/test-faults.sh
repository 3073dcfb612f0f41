#!/usr/bin/env bash
# `make test-faults`: injects faults into real E2E runs (scripts/ci-e2e.sh,
# the PR-Blocking quick-start) and checks each run ends the way a Prow job
# owner needs: nothing of the run left in the engine, its artifacts as far
# as it got, a JUnit report, a non-zero exit code. FAULTS selects scenarios
# (space separated; default: all):
#
#   bad-config         KUBERNETES_VERSION without a node image: fails before
#                      anything is created
#   setup-fail         setup fails after kind create (injected at cert-manager's install)
#   interrupt-kind     SIGTERM to the job during kind create (kubeadm init and the image load)
#   interrupt-nodes    SIGTERM to the job while kind creates its node containers
#   interrupt-cp       SIGTERM to the job during the control-plane wait
#   sigint-suite       SIGINT to the suite's test process during the control-plane wait
#   double-interrupt   two SIGTERMs during the control-plane wait (Ginkgo skips
#                      its cleanup; capd-e2e run removes the leftovers by run id)
#   killed-rerun       kill -9 of the whole run during the control-plane wait,
#                      then a re-run, whose setup removes what the dead run left
#   concurrent         two quick-starts at once on one engine
#   artifacts-full     the artifacts folder on a 3 MB tmpfs (root): the job
#                      fails, still writes its JUnit report, and a failed
#                      write is not taken for leftovers
#   bad-clusterclass   a ClusterClass patch that misreads a variable, in a
#                      copy of the harness: the quick-start fails within
#                      wait-cluster (1m there), naming the patch, the
#                      variable and the ClusterClass
#   broken-dns         conformance (K8s-Install, its DNS tests only) on a
#                      cluster whose CoreDNS is scaled to zero when the
#                      suite starts: the run fails, its JUnit failure text
#                      names the failed DNS tests, the container is gone
#
# The results table goes to ARTIFACTS/faults/results.md (ARTIFACTS default
# _artifacts); each scenario's log and artifacts are beside it.
set -o errexit -o nounset -o pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
OUT=${ARTIFACTS:-$REPO_ROOT/_artifacts}/faults
rm -rf "$OUT"
mkdir -p "$OUT"
FAULTS=${FAULTS:-bad-config setup-fail artifacts-full interrupt-kind interrupt-nodes interrupt-cp sigint-suite double-interrupt killed-rerun concurrent bad-clusterclass broken-dns}
unset SKIP_RESOURCE_CLEANUP CAPD_E2E_INJECT_FAULT GINKGO_FOCUS GINKGO_SKIP
export GINKGO_LABEL_FILTER="PR-Blocking"

log() { printf '[test-faults %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
newid() { od -An -N6 -tx1 /dev/urandom | tr -d ' \n'; }

scripts/ensure-engine.sh --privileged-nesting
scripts/install-deps.sh --kubectl
scripts/images.sh >"$OUT/images.log" 2>&1
CGO_ENABLED=0 GOGC=400 go build -gcflags=all=-dwarf=false -o hack/tools/bin/capd-e2e ./cmd/capd-e2e

# What the engine holds, to compare before and after a scenario.
state() {
  hack/tools/bin/capd-e2e engine objects
}

# start NAME [VAR=value...]: runs ci-e2e.sh (CI_E2E, default this
# checkout's) in the background, in its own process group, with run id
# RUN_<NAME>; sets PID.
declare -A RUN START
start() {
  local name=$1; shift
  RUN[$name]=$(newid)
  mkdir -p "$OUT/$name"
  START[$name]=$(date +%s)
  env "$@" CAPD_E2E_RUN_ID="${RUN[$name]}" ARTIFACTS="$OUT/$name/artifacts" setsid "${CI_E2E:-scripts/ci-e2e.sh}" >"$OUT/$name/run.log" 2>&1 &
  PID=$!
}

# wait_log NAME PATTERN TIMEOUT_S PID: waits until the run's log matches;
# fails at once if the run (PID) ended first: the fault could not be
# injected where the scenario says.
wait_log() {
  for _ in $(seq "$3"); do
    grep -qE "$2" "$OUT/$1/run.log" 2>/dev/null && return 0
    if ! kill -0 "$4" 2>/dev/null; then
      log "$1: the run ended before '$2' appeared"; return 1
    fi
    sleep 1
  done
  log "$1: '$2' did not appear within $3s"; return 1
}

RESULTS=()
FAILED=0
MISSED=
# check NAME PHASE RC EXPECT SIGNAL_TIME ARTIFACT...: records a row. The
# run must have exited as EXPECT says (fail: non-zero, pass: zero), left
# nothing, written a JUnit report and the artifacts listed (globs).
check() {
  local name=$1 phase=$2 rc=$3 expect=$4 t_signal=$5; shift 5
  local end; end=$(date +%s)
  local left junit artifacts="yes" ok=true secrets
  if [[ -n $MISSED ]]; then
    ok=false; phase="$phase (NOT REACHED: $MISSED)"; MISSED=
  fi
  # An independent scan of what the run published (capd-e2e run scanned and
  # redacted it too; this checks that it did).
  if hack/tools/bin/capd-e2e secrets scan "$OUT/$name/artifacts" >"$OUT/$name/secrets-scan.txt" 2>&1; then
    secrets="none in $(find "$OUT/$name/artifacts" -type f | wc -l) files"
  else
    secrets="FOUND (see $name/secrets-scan.txt)"; ok=false
  fi
  left=$(comm -13 "$OUT/before.txt" <(state) | tr '\n' ' ')
  # Markers of the run count too (a run id in a volume name).
  [[ -z $left ]] || ok=false
  local ju="$OUT/$name/artifacts/junit.e2e_suite.1.xml"
  if [[ -s $ju ]] && grep -q "<testsuite" "$ju"; then junit=yes; else junit=no; ok=false; fi
  # A failed run's JUnit report says why in a <failure> (Prow's junit lens
  # shows nothing of an <error>), and metadata.json names the failing phase.
  if [[ $expect == fail && $junit == yes ]]; then
    grep -q "<failure" "$ju" || { junit="no <failure>"; ok=false; }
    grep -q '"capd-e2e-failing-phase"' "$OUT/$name/artifacts/metadata.json" 2>/dev/null || { junit="$junit, no failing phase in metadata.json"; ok=false; }
  fi
  for a in "$@"; do
    compgen -G "$OUT/$name/artifacts/$a" >/dev/null || { artifacts="missing $a"; ok=false; }
  done
  # The log is a file, as a CI build log is: no terminal colour codes.
  local colour=none
  if grep -q $'\x1b\[' "$OUT/$name/run.log"; then colour=FOUND; ok=false; fi
  # A scenario appends ", message missing" to RC when its log lacks the
  # error it expects; the row must fail then, whatever the exit code.
  [[ $rc != *missing* ]] || ok=false
  case $expect in
  fail) [[ $rc != 0 ]] || { ok=false; rc="0 (should fail)"; } ;;
  pass) [[ $rc == 0 ]] || { ok=false; rc="$rc (should pass)"; } ;;
  esac
  local cleanup="-"
  [[ $t_signal == - ]] || cleanup="$((end - t_signal))s"
  RESULTS+=("| $name | $phase | ${left:-nothing} | $artifacts | $junit | exit $rc | $cleanup | $secrets | $colour | $([[ $ok == true ]] && echo PASS || echo FAIL) |")
  $ok || FAILED=$((FAILED + 1))
  log "$name: $([[ $ok == true ]] && echo PASS || echo FAIL) (left: ${left:-nothing}; junit $junit; artifacts $artifacts; exit $rc; cleanup $cleanup; secrets $secrets; colour codes $colour)"
}

# suite_pid PID: the suite's test process (e2e.test) among the descendants
# of the run this script started as PID (capd-e2e run starts Ginkgo in a
# process group of its own, so a kill of the run's group misses it); never
# another run's.
suite_pid() {
  local queue=("$1") p found=
  while ((${#queue[@]})); do
    p=${queue[0]} queue=("${queue[@]:1}")
    [[ $(cat "/proc/$p/comm" 2>/dev/null) == e2e.test ]] && found=$p
    # shellcheck disable=SC2207
    queue+=($(pgrep -P "$p" || true))
  done
  echo "$found"
}

# interrupt NAME WHEN SIGNALS: starts a run, signals it when its log
# shows WHEN, waits for it; TARGET=suite signals the test process instead.
interrupt() {
  local name=$1 when=$2 signals=$3 target=${TARGET:-ci}
  start "$name"
  local pid=$PID
  if ! wait_log "$name" "$when" 900 "$pid"; then
    MISSED="the run ended before: $when"
    local rc=0
    wait "$pid" || rc=$?
    SIGNAL_TIME=- RC=$rc
    return
  fi
  local t; t=$(date +%s)
  for s in $signals; do
    if [[ $target == suite ]]; then
      kill -"$s" "$(suite_pid "$pid")"
    else
      kill -"$s" "$pid"
    fi
    sleep 2
  done
  local rc=0
  wait "$pid" || rc=$?
  SIGNAL_TIME=$t RC=$rc
}

for f in $FAULTS; do
  state >"$OUT/before.txt"
  log "scenario $f"
  case $f in
  bad-config)
    start "$f" KUBERNETES_VERSION=v1.35.0
    rc=0; wait "$PID" || rc=$?
    grep -q 'variables.KUBERNETES_VERSION (environment): Invalid value: "v1.35.0" has no build.kubernetes entry' "$OUT/$f/run.log" || rc="$rc, message missing"
    check "$f" "config check (before the engine)" "$rc" fail - localhost/images.log
    ;;
  artifacts-full)
    # The artifacts folder on a 3 MB tmpfs: the job fills it and fails; the
    # JUnit report must still be written (the reserve capd-e2e run keeps), and
    # a failed write must not read as leftovers.
    mkdir -p "$OUT/$f/artifacts"
    mount -t tmpfs -o size=3m capd-e2e-full "$OUT/$f/artifacts"
    start "$f"
    rc=0; wait "$PID" || rc=$?
    if grep -q "left nothing" "$OUT/$f/run.log" && grep -q "the run left objects behind" "$OUT/$f/run.log"; then
      rc="$rc, leftovers misreported, message missing"
    fi
    check "$f" "artifacts folder full (3 MB tmpfs)" "$rc" fail -
    # Keep what it wrote, off the tmpfs.
    cp -a "$OUT/$f/artifacts" "$OUT/$f/artifacts-kept" 2>/dev/null || true
    umount "$OUT/$f/artifacts"
    rmdir "$OUT/$f/artifacts" && mv "$OUT/$f/artifacts-kept" "$OUT/$f/artifacts"
    ;;
  setup-fail)
    start "$f" CAPD_E2E_INJECT_FAULT="install cert-manager's CRDs"
    rc=0; wait "$PID" || rc=$?
    check "$f" "setup: cert-manager, after kind create" "$rc" fail - "clusters/bootstrap/machines/*/journal.log" "clusters/bootstrap/containers.txt"
    ;;
  interrupt-kind)
    # kind's library takes no context: CreateKind lets it finish, then
    # collects the nodes' logs into kind/ and deletes them.
    interrupt "$f" "Starting control-plane" TERM
    check "$f" "setup: kind create and image load" "$RC" fail "$SIGNAL_TIME" "kind/*/journal.log"
    ;;
  interrupt-nodes)
    # The signal reaches kind's docker CLI too: a killed `docker run` may
    # leave a container the engine creates a moment later, which
    # CreateKind waits for and removes. The nodes never ran: no logs.
    interrupt "$f" "Preparing nodes" TERM
    check "$f" "setup: kind's node containers" "$RC" fail "$SIGNAL_TIME" "localhost/engine-ps.txt"
    ;;
  interrupt-cp)
    interrupt "$f" "wait for control plane initialized" TERM
    check "$f" "spec: control-plane wait" "$RC" fail "$SIGNAL_TIME" "clusters/quick-start-*/summary.txt" "clusters/quick-start-*/machines/*/journal.log" "clusters/bootstrap/machines/*/journal.log"
    ;;
  sigint-suite)
    TARGET=suite interrupt "$f" "wait for control plane initialized" INT
    check "$f" "spec: control-plane wait (SIGINT to the test process)" "$RC" fail "$SIGNAL_TIME" "clusters/quick-start-*/summary.txt" "clusters/bootstrap/machines/*/journal.log"
    ;;
  double-interrupt)
    interrupt "$f" "wait for control plane initialized" "TERM TERM"
    check "$f" "spec: control-plane wait, twice" "$RC" fail "$SIGNAL_TIME"
    ;;
  broken-dns)
    # Kubernetes' DNS conformance tests only, so that the run is short.
    mkdir -p "$OUT/$f"
    printf '%s\n' 'ginkgo.focus: \[sig-network\] DNS .*\[Conformance\]' 'ginkgo.skip: \[Serial\]' 'ginkgo.no-color: "true"' 'disable-log-dump: "true"' >"$OUT/$f/dns.yaml"
    # Each DNS test waits up to 10 minutes for its lookups: all at once.
    start "$f" GINKGO_LABEL_FILTER=K8s-Install KUBETEST_CONFIGURATION="$OUT/$f/dns.yaml" KUBETEST_GINKGO_NODES=12
    pid=$PID
    t=-
    if wait_log "$f" "run Kubernetes conformance" 2400 "$pid"; then
      # The runner writes the workload cluster's kubeconfig before it
      # starts the suite's container.
      for _ in $(seq 60); do
        kc=$(compgen -G "$OUT/$f/artifacts/clusters/k8s-conformance-*/kubetest/config/kubeconfig" | head -1 || true)
        [[ -n $kc ]] && break
        sleep 1
      done
      t=$(date +%s)
      kubectl --kubeconfig "$kc" -n kube-system scale deployment coredns --replicas=0 >>"$OUT/$f/run.log" 2>&1 ||
        MISSED="CoreDNS could not be scaled to zero"
    else
      MISSED="the run ended before the conformance suite started"
    fi
    rc=0
    wait "$pid" || rc=$?
    ju="$OUT/$f/artifacts/junit.e2e_suite.1.xml"
    grep -q 'failed tests (' "$ju" 2>/dev/null && grep -q 'DNS should' "$ju" || rc="$rc, message missing"
    check "$f" "spec: conformance with CoreDNS gone" "$rc" fail "$t" "clusters/k8s-conformance-*/kubetest/e2e.log" "clusters/k8s-conformance-*/kubetest/junit_kubetest.*.xml" "junit.kubetest.*.xml"
    ;;
  killed-rerun)
    start "$f"
    pid=$PID
    wait_log "$f" "wait for control plane initialized" 900 "$pid" || MISSED="the run ended before: wait for control plane initialized"
    sp=$(suite_pid "$pid")
    kill -KILL -- "-$pid" 2>/dev/null || true
    [[ -n $sp ]] && kill -KILL "$sp" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    dead=${RUN[$f]}
    log "$f: killed run $dead; left: $(comm -13 "$OUT/before.txt" <(state) | wc -l) objects; re-running"
    t=$(date +%s)
    start "$f-rerun"
    rc=0; wait "$PID" || rc=$?
    grep -q "run $dead (owner .*) was gone: removed" "$OUT/$f-rerun/run.log" || rc="$rc, the re-run did not reap run $dead"
    check "$f-rerun" "re-run after kill -9 of a run in the control-plane wait" "$rc" pass "$t" "clusters/quick-start-*/summary.txt"
    ;;
  concurrent)
    start "$f-a"; a=$PID
    start "$f-b"; b=$PID
    rca=0; rcb=0
    wait "$a" || rca=$?
    wait "$b" || rcb=$?
    names_a=$(grep -o 'kind management cluster "[^"]*"' "$OUT/$f-a/run.log" | head -1)
    names_b=$(grep -o 'kind management cluster "[^"]*"' "$OUT/$f-b/run.log" | head -1)
    rc=0
    [[ $rca == 0 && $rcb == 0 && $names_a != "$names_b" ]] || rc="a $rca, b $rcb, $names_a / $names_b"
    log "$f: $names_a and $names_b"
    check "$f-a" "two quick-starts at once, a" "$rc" pass - "clusters/quick-start-*/summary.txt"
    check "$f-b" "two quick-starts at once, b" "$rc" pass - "clusters/quick-start-*/summary.txt"
    ;;
  bad-clusterclass)
    # A copy of this checkout (what git tracks or would), whose ClusterClass
    # takes the MachineDeployment's node image from a field of the
    # preLoadImages variable, a list: the webhook accepts it (it does not
    # execute templates), the topology controller cannot render it.
    # (A variable the class does not declare would not do: Cluster API
    # v1.14.2 renders it "<no value>" and reports the topology reconciled;
    # data/templates_test.go catches that in our own class.) wait-cluster
    # is 1m there.
    copy=$(mktemp -d)/capd-e2e
    mkdir -p "$copy"
    git ls-files -z -co --exclude-standard | xargs -0 cp --parents -t "$copy"
    sed -i 's/kindest\/node:{{ .builtin.machineDeployment.version }}/kindest\/node:{{ .preLoadImages.tag }}/' "$copy/data/clusterclass-quick-start.yaml"
    grep -q '{{ .preLoadImages.tag }}' "$copy/data/clusterclass-quick-start.yaml" || { log "$f: the ClusterClass was not broken"; exit 2; }
    sed -i 's|^intervals:$|intervals:\n  quick-start/wait-cluster: ["1m", "5s"]|' "$copy/config/e2e.yaml"
    CI_E2E=$copy/scripts/ci-e2e.sh start "$f"
    rc=0; wait "$PID" || rc=$?
    for want in 'TopologyReconciled False' '.preLoadImages.tag' 'nodeImage' 'ClusterClass quick-start-'; do
      grep -q "$want" "$OUT/$f/run.log" || rc="$rc, message missing"
    done
    rm -rf "$(dirname "$copy")"
    check "$f" "spec: a ClusterClass patch the topology controller cannot render" "$rc" fail - "clusters/quick-start-*/summary.txt"
    ;;
  *) log "unknown scenario $f"; exit 2 ;;
  esac
done

{
  echo "| scenario | phase | left in the engine | artifacts | JUnit | exit | cleanup after the signal | secrets in the artifacts | colour codes in the log | result |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${RESULTS[@]}"
} | tee "$OUT/results.md"
exit $(( FAILED > 0 ))
