// Package faults holds `make test-faults`: faults injected into real E2E
// runs — `capd-e2e run` on the PR-Blocking quick-start, and the suite under
// plain Ginkgo — each checked the way a Prow job owner needs it to end:
// nothing of the run left in the engine, its artifacts as far as it got, a
// JUnit report (with a <failure> and metadata.json's failing phase when it
// failed), no secret and no terminal colour code in what it published, the
// exit code the scenario expects.
//
// The scenarios are Go tests behind the faults build tag (faults_test.go):
// each starts its runs as processes of its own, signals only them or their
// descendants, and reads the engine's objects through the harness's
// runtime, failing when it cannot. scripts/test-faults.sh provides the
// machine, the images and the tools, and selects scenarios with FAULTS.
package faults
