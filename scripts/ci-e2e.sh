#!/usr/bin/env bash
# Prow entry point, and what `make test-e2e` runs.
#
# Honours ARTIFACTS (default: _artifacts), GINKGO_FOCUS, GINKGO_SKIP (space
# separated), GINKGO_LABEL_FILTER (default: "PR-Blocking"),
# GINKGO_NODES (default 1), GINKGO_TIMEOUT (default 3h), E2E_CONFIG,
# SKIP_RESOURCE_CLEANUP and USE_EXISTING_CLUSTER (true/1/yes), E2E_SUITE_DIR
# (the Ginkgo suite's package directory, default e2e/; a provider's suite in
# its own module works too), GRACE_PERIOD (default 10m: how long the suite
# gets to clean up after SIGTERM/SIGINT before it is killed). Ginkgo's
# output is coloured only on a terminal without CI set.
#
# Provides the images the selected specs need (built, or pulled per
# build.registry; capd-e2e-images compiles the suite and asks it), runs the
# suite with a JUnit report in ARTIFACTS under a run id of its own
# (CAPD_E2E_RUN_ID), then checks by that run id that the run left nothing
# in the engine (and removes what it left, failing the job), scans the
# artifacts for secrets (and redacts them, failing the job), and saves the
# host's container state into ARTIFACTS/localhost.
#
# Signals as Prow sends them: SIGTERM (or SIGINT) is passed on to the suite
# as an interrupt: Ginkgo interrupts the running node and cleans up, then
# writes its reports. A second signal is passed on too: Ginkgo skips the
# rest of the cleanup but still writes the JUnit report. A third signal, or
# GRACE_PERIOD after the first, kills the suite. Whatever the suite did not
# clean up is then removed here by run id. The exit code is non-zero.
set -o errexit -o nounset -o pipefail

REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
export ARTIFACTS=${ARTIFACTS:-$REPO_ROOT/_artifacts}
GINKGO_FOCUS=${GINKGO_FOCUS:-}
GINKGO_SKIP=${GINKGO_SKIP:-}
GINKGO_LABEL_FILTER=${GINKGO_LABEL_FILTER:-PR-Blocking}
GINKGO_NODES=${GINKGO_NODES:-1}
GINKGO_TIMEOUT=${GINKGO_TIMEOUT:-3h}
GRACE_PERIOD=${GRACE_PERIOD:-10m}
E2E_CONFIG=$(realpath "${E2E_CONFIG:-$REPO_ROOT/config/e2e.yaml}")
E2E_SUITE_DIR=$(realpath "${E2E_SUITE_DIR:-$REPO_ROOT/e2e}")
# capd-e2e-images reads the same selection: it compiles the suite and
# builds only what the selected specs need.
export E2E_CONFIG E2E_SUITE_DIR GINKGO_LABEL_FILTER GINKGO_FOCUS GINKGO_SKIP

bool() { case "${1,,}" in 1 | true | yes | y | on) echo true ;; "" | 0 | false | no | n | off) echo false ;; *) echo "ci-e2e: $2=$1 is not a boolean (true/false, 1/0, yes/no)" >&2; exit 2 ;; esac; }
SKIP_RESOURCE_CLEANUP=$(bool "${SKIP_RESOURCE_CLEANUP:-false}" SKIP_RESOURCE_CLEANUP)
USE_EXISTING_CLUSTER=$(bool "${USE_EXISTING_CLUSTER:-false}" USE_EXISTING_CLUSTER)
mkdir -p "$ARTIFACTS/localhost"

log() { printf '[ci-e2e %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }

# The job's tools compile while packages install and the engine is checked
# (on a new machine that is network time: apt, and with
# CAPD_E2E_FIX_ENGINE=replace a new engine), as the suite is compiled
# (gobuild.HarnessEnv and HarnessFlags), so sharing its packages; the
# ginkgo CLI at the version go.mod requires.
TOOLS_LOG=$ARTIFACTS/localhost/tools-build.log
# In a process group of its own, so that an early exit stops its go
# commands too.
REPO_ROOT=$REPO_ROOT setsid bash -c '
  set -o errexit
  export CGO_ENABLED=0 GOGC=${GOGC:-400}
  for tool in factory/cmd/capd-e2e-images cmd/capd-e2e-clean cmd/capd-e2e-secrets cmd/capd-e2e-engine; do
    go build -gcflags=all=-dwarf=false -o "hack/tools/bin/${tool##*/}" "./$tool"
  done
  GOBIN=$REPO_ROOT/hack/tools/bin go install github.com/onsi/ginkgo/v2/ginkgo
' >"$TOOLS_LOG" 2>&1 </dev/null &
tools=$!
trap 'kill -- -"$tools" 2>/dev/null || true' EXIT
scripts/install-deps.sh
scripts/ensure-engine.sh --privileged-nesting
tools_start=$(date +%s)
if ! wait "$tools"; then
  log "compiling the tools failed (log: $TOOLS_LOG):"
  tail -20 "$TOOLS_LOG"
  exit 1
fi
log "tools compiled (waited $(( $(date +%s) - tools_start ))s for them after the engine check)"

# One run id for everything this job creates: the suite labels and tracks
# by it, and the leak check below looks for nothing else, so that runs on
# one engine never see each other's objects.
export CAPD_E2E_RUN_ID=${CAPD_E2E_RUN_ID:-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')}
log "run id $CAPD_E2E_RUN_ID"

# Space kept for the reports: when the artifacts folder fills up, the
# suite's report writer (framework/report) removes it to write the JUnit
# report, and this script removes it before writing its own.
RESERVE=$ARTIFACTS/.capd-e2e-reserve
head -c 1048576 /dev/zero >"$RESERVE" 2>/dev/null || rm -f "$RESERVE"

# A JUnit report and metadata.json whatever happens: when the job fails
# before the suite writes them (a bad config the image build refuses, an
# engine that is down, a suite killed), a report with one failed test case
# naming the stage. A write that fails is said, not hidden.
junit_if_missing() {
  rm -f "$RESERVE"
  local junit=$ARTIFACTS/junit.e2e_suite.1.xml
  if [[ ! -s $junit ]]; then
    local msg; msg=$(tail -5 "$ARTIFACTS/localhost/stage.log" 2>/dev/null | sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g')
    cat >"$junit" 2>/dev/null <<XML || log "could not write $junit (is the artifacts folder full?)"
<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="1" failures="1">
  <testsuite name="capd-e2e" tests="1" failures="1">
    <testcase name="ci-e2e.sh: $stage" classname="ci-e2e">
      <failure message="ci-e2e.sh failed at: $stage">ci-e2e.sh failed at: $stage
$msg</failure>
    </testcase>
  </testsuite>
</testsuites>
XML
  fi
  local meta=$ARTIFACTS/metadata.json
  if [[ ! -s $meta ]]; then
    printf '{\n  "capd-e2e-run-id": "%s",\n  "capd-e2e-result": "FAILED",\n  "capd-e2e-failing-phase": "ci-e2e.sh: %s"\n}\n' \
      "${CAPD_E2E_RUN_ID:-}" "$stage" >"$meta" 2>/dev/null || log "could not write $meta (is the artifacts folder full?)"
  fi
}

start=$(date +%s)
log "building or reusing images"
stage="provide the images"
trap junit_if_missing EXIT
scripts/images.sh -use-existing-cluster="$USE_EXISTING_CLUSTER" -selection-out "$ARTIFACTS/localhost/selection.json" 2>&1 |
  tee "$ARTIFACTS/localhost/images.log" "$ARTIFACTS/localhost/stage.log"
# capd-e2e-images compiled the suite there, as `ginkgo build` would.
SUITE_BINARY=$E2E_SUITE_DIR/$(basename "$E2E_SUITE_DIR").test
log "images ready after $(( $(date +%s) - start ))s"
events_since=$(date -u +%s)

# The engine's state through our runtime (no docker CLI: a Podman host
# may have none): engine-{info,ps,images}.txt and engine-events.log.
save_host_state() {
  hack/tools/bin/capd-e2e-engine dump -since "$events_since" "$ARTIFACTS/localhost" >>"$ARTIFACTS/localhost/engine-dump.log" 2>&1 || true
  cp /var/log/capd-e2e-dockerd.log /var/log/capd-e2e-podman.log "$ARTIFACTS/localhost/" 2>/dev/null || true
}
trap 'junit_if_missing; save_host_state' EXIT

GINKGO=$REPO_ROOT/hack/tools/bin/ginkgo

# The suite writes the JUnit report itself (-e2e.junit-report), with each
# failure's phase, conditions and artifacts first, beside metadata.json and
# report.html; Ginkgo's own report is kept as JSON.
args=(-v --trace --timeout="$GINKGO_TIMEOUT" --nodes="$GINKGO_NODES"
  --poll-progress-after=60m --poll-progress-interval=5m --fail-on-pending --fail-on-empty
  --json-report=ginkgo-report.json --output-dir="$ARTIFACTS")
# Colour only on a terminal: Ginkgo cannot tell a pipe or a CI build log
# from one, and Prow's build log shows escape codes as text.
if [[ ! -t 1 || -n ${CI:-} ]]; then
  args+=(--no-color)
fi
[[ -n $GINKGO_LABEL_FILTER ]] && args+=(--label-filter="$GINKGO_LABEL_FILTER")
[[ -n $GINKGO_FOCUS ]] && args+=(--focus="$GINKGO_FOCUS")
for s in $GINKGO_SKIP; do args+=(--skip="$s"); done

log "running the suite (label filter: ${GINKGO_LABEL_FILTER:-none})"
stage="run the suite"
# The suite in its own process group, so that a kill reaches the test
# processes ginkgo starts, not only ginkgo.
cd "$E2E_SUITE_DIR"
setsid "$GINKGO" "${args[@]}" "$SUITE_BINARY" -- \
  -e2e.config="$E2E_CONFIG" -e2e.artifacts-folder="$ARTIFACTS" \
  -e2e.skip-resource-cleanup="$SKIP_RESOURCE_CLEANUP" -e2e.use-existing-cluster="$USE_EXISTING_CLUSTER" &
suite=$!
cd "$REPO_ROOT"

signals=0
on_signal() { # $1: the signal
  signals=$((signals + 1))
  case $signals in
  1)
    log "got $1: interrupting the suite, which cleans up (killed after GRACE_PERIOD=$GRACE_PERIOD)"
    kill -INT -- "-$suite" 2>/dev/null || true
    ( sleep "$GRACE_PERIOD"; log "grace period over: killing the suite"; kill -KILL -- "-$suite" 2>/dev/null ) &
    watchdog=$!
    ;;
  2)
    log "got $1 again: the suite skips its cleanup and writes its report; leftovers are removed afterwards"
    kill -INT -- "-$suite" 2>/dev/null || true
    ;;
  *)
    log "got $1 a third time: killing the suite"
    kill -KILL -- "-$suite" 2>/dev/null || true
    ;;
  esac
}
trap 'on_signal TERM' TERM
trap 'on_signal INT' INT
rc=0
# wait returns early when a trapped signal arrives: wait again until the
# suite is gone.
while kill -0 "$suite" 2>/dev/null; do
  wait "$suite" && rc=0 || rc=$?
done
[[ -n ${watchdog:-} ]] && kill "$watchdog" 2>/dev/null || true
(( signals > 0 )) && [[ $rc -eq 0 ]] && rc=1
log "suite finished with exit code $rc after $(( $(date +%s) - start ))s in all"

# A copy into the artifacts that may fail (a full folder) without being
# taken for anything else.
keep() { # $1: file, $2: name under ARTIFACTS
  { cp "$1" "$ARTIFACTS/$2" && chmod 644 "$ARTIFACTS/$2"; } 2>/dev/null || { rm -f "$ARTIFACTS/$2"; log "could not write $2 into the artifacts (is the folder full?); it is printed above"; }
}

if [[ $SKIP_RESOURCE_CLEANUP != true ]]; then
  # By run id: this run's labelled objects and every cluster it tracked
  # (its kind cluster, the workload clusters' machines and load balancers),
  # whatever another run on the engine is doing. The exit code is the
  # check's own, not that of writing its list.
  leftovers=$(mktemp)
  check=0
  hack/tools/bin/capd-e2e-clean -check "$CAPD_E2E_RUN_ID" >"$leftovers" 2>&1 || check=$?
  cat "$leftovers"
  keep "$leftovers" localhost/leftovers.txt
  rm -f "$leftovers"
  case $check in
  0) log "no objects left behind" ;;
  1)
    log "the run left objects behind (listed above and in localhost/leftovers.txt; now removed)"
    [[ $rc -eq 0 ]] && rc=1
    ;;
  *)
    log "the leak check itself failed (exit code $check, above): what the run left is unknown"
    [[ $rc -eq 0 ]] && rc=1
    ;;
  esac
fi

# Nothing secret may be published: redact what slipped through (the suite
# redacts its own artifacts), and fail the job if anything did.
scan=$(mktemp)
if ! hack/tools/bin/capd-e2e-secrets scan "$ARTIFACTS" >"$scan" 2>&1; then
  log "secrets found in the artifacts (localhost/secrets-scan.txt); redacting them"
  hack/tools/bin/capd-e2e-secrets redact "$ARTIFACTS" >>"$scan" 2>&1 || true
  [[ $rc -eq 0 ]] && rc=1
else
  log "secrets scan: $(tail -1 "$scan")"
fi
keep "$scan" localhost/secrets-scan.txt
rm -f "$scan"

# What the report looks like, where a browser is installed (make test
# installs Debian's chromium): a screenshot beside it.
if [[ -s $ARTIFACTS/report.html ]] && command -v chromium >/dev/null; then
  shot=$(mktemp --suffix=.png)
  if timeout 60 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,2400 \
    --screenshot="$shot" "file://$ARTIFACTS/report.html" >/dev/null 2>&1; then
    keep "$shot" report.png
  fi
  rm -f "$shot"
fi
[[ -s $ARTIFACTS/report.html ]] && log "run report: $ARTIFACTS/report.html"
exit "$rc"
