#!/usr/bin/env bash
# `make test-faults`: injects faults into real E2E runs (capd-e2e run on
# the PR-Blocking quick-start; the Go tests of internal/faults) and checks each run ends the way a Prow job
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
#   killed-plain-ginkgo the suite under plain ginkgo, its test process killed
#                      (kill -9) in the control-plane wait: the suite's
#                      watcher removes what it left and writes its reports
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
# _artifacts); each scenario's log and artifacts are beside it. This script
# provides the machine, the images and the tools; the scenarios, their
# signals and their checks are Go (internal/faults/faults_test.go).
set -o errexit -o nounset -o pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
export FAULTS_OUT=${ARTIFACTS:-$REPO_ROOT/_artifacts}/faults
rm -rf "$FAULTS_OUT"
mkdir -p "$FAULTS_OUT"
export FAULTS=${FAULTS:-bad-config setup-fail artifacts-full interrupt-kind interrupt-nodes interrupt-cp sigint-suite double-interrupt killed-rerun killed-plain-ginkgo concurrent bad-clusterclass broken-dns}
unset SKIP_RESOURCE_CLEANUP CAPD_E2E_INJECT_FAULT GINKGO_FOCUS GINKGO_SKIP
export GINKGO_LABEL_FILTER="PR-Blocking"

scripts/capd-e2e.sh engine ensure --privileged-nesting
scripts/install-deps.sh
# The images the quick-start needs, and the suite compiled (e2e/e2e.test).
scripts/images.sh >"$FAULTS_OUT/images.log" 2>&1 || { tail -20 "$FAULTS_OUT/images.log" >&2; exit 1; }
export CGO_ENABLED=0
GOGC=400 go build -gcflags=all=-dwarf=false -o hack/tools/bin/capd-e2e ./cmd/capd-e2e
GOBIN=$REPO_ROOT/hack/tools/bin go install github.com/onsi/ginkgo/v2/ginkgo
export CAPD_E2E_BIN=$REPO_ROOT/hack/tools/bin/capd-e2e GINKGO=$REPO_ROOT/hack/tools/bin/ginkgo

# One subtest per scenario FAULTS names, in TestFaults' order.
exec go test -tags faults -count=1 -timeout 8h -v ./internal/faults
