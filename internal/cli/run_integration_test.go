package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/report"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// envMain makes the test binary capd-e2e itself (TestMain): the
// supervisor's tests start it as a process of their own, to signal it.
const envMain = "CAPD_E2E_CLI_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envMain) == "1" {
		os.Exit(Main())
	}
	os.Exit(m.Run())
}

// fakeGinkgo stands in for Ginkgo's CLI and the suite: what it does is
// FAKE's (its environment); it finds the artifacts folder in
// --output-dir, as Ginkgo's reports do, or in ARTIFACTS, as the suite
// (framework/suite) does first.
const fakeGinkgo = `#!/usr/bin/env bash
for a in "$@"; do case $a in --output-dir=*) out=${a#--output-dir=} ;; esac; done
out=${ARTIFACTS:-$out}
echo "fake ginkgo in $PWD: $*"
junit() { printf '<?xml version="1.0"?>\n<testsuites tests="1"><testsuite name="s" tests="1"><testcase name="t"></testcase></testsuite></testsuites>\n' >"$out/junit.e2e_suite.1.xml"; }
case $FAKE in
fail) echo "the suite: boom"; exit 3 ;;
pass-without-junit) exit 0 ;;
leak-and-secret)
  junit
  mkdir -p "$out/clusters/c1"
  echo "kubeadm join 172.18.0.3:6443 --token $TOKEN" >"$out/clusters/c1/journal.log"
  exit 0 ;;
hang)
  # A suite whose cleanup hangs: it takes note of each interrupt and goes
  # on; its child (a background job, which ignores SIGINT) too.
  trap 'echo interrupted >>"$out/signals"' INT
  sleep 1000 &
  echo $! >"$out/child"
  echo "suite started"
  while :; do sleep 0.1; done ;;
*) echo "FAKE=$FAKE?"; exit 99 ;;
esac
`

// supervised is one `capd-e2e run` process with the fake suite.
type supervised struct {
	cmd       *exec.Cmd
	out       bytes.Buffer
	artifacts string
	runID     string
}

// startRun starts `capd-e2e run` (this test binary) without the image step,
// on the fake suite doing fake, with a run id of its own.
func startRun(t *testing.T, fake string, env ...string) *supervised {
	t.Helper()
	s := newRun(t, fake, env...)
	s.start(t)
	return s
}

// newRun is startRun without the start: its run id is known, so that a
// test can make objects of the run before it starts.
func newRun(t *testing.T, fake string, env ...string) *supervised {
	t.Helper()
	dir := t.TempDir()
	ginkgo := filepath.Join(dir, "ginkgo")
	if err := os.WriteFile(ginkgo, []byte(fakeGinkgo), 0o755); err != nil {
		t.Fatal(err)
	}
	suiteDir := filepath.Join(dir, "suite")
	if err := os.Mkdir(suiteDir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &supervised{artifacts: filepath.Join(dir, "artifacts"), runID: runtime.NewRunID()}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(self, "run", "--images=false", "--ginkgo", ginkgo, "--suite", suiteDir,
		"--artifacts", s.artifacts, "--run-id", s.runID, "--grace-period", "2s", "--label-filter", "x")
	s.cmd.Env = append(os.Environ(), append(env, envMain+"=1", "FAKE="+fake, "CI=true")...)
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	return s
}

func (s *supervised) start(t *testing.T) {
	t.Helper()
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
	})
}

// wait waits for the run (at most 2 minutes) and returns its exit code.
func (s *supervised) wait(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = s.cmd.Process.Kill()
		<-done
		t.Fatalf("capd-e2e run did not end within 2 minutes:\n%s", s.out.String())
	}
	return s.cmd.ProcessState.ExitCode()
}

func (s *supervised) read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.artifacts, rel))
	if err != nil {
		t.Fatalf("%v; the run's output:\n%s", err, s.out.String())
	}
	return string(b)
}

// TestIntegrationRunWritesTheReportsTheSuiteDidNot: a suite that fails
// without a JUnit report gets one from the supervisor, naming the stage and
// the end of the suite's output, with metadata.json and report.html.
func TestIntegrationRunWritesTheReportsTheSuiteDidNot(t *testing.T) {
	runtimetest.Engine(t) // the leak check after the run needs one
	s := startRun(t, "fail")
	if code := s.wait(t); code != 3 {
		t.Fatalf("exit code %d, want the suite's (3):\n%s", code, s.out.String())
	}
	junit := s.read(t, report.JUnitFile)
	for _, want := range []string{"<failure", "run the suite", "capd-e2e run failed at: run the suite", "the suite: boom"} {
		if !strings.Contains(junit, want) {
			t.Errorf("the fallback JUnit report lacks %q:\n%s", want, junit)
		}
	}
	var meta map[string]string
	if err := json.Unmarshal([]byte(s.read(t, report.MetadataFile)), &meta); err != nil {
		t.Fatal(err)
	}
	if meta[report.MetaRunID] != s.runID || meta[report.MetaResult] != "FAILED" || !strings.Contains(meta[report.MetaFailingPhase], "run the suite") {
		t.Errorf("metadata.json: %v", meta)
	}
	if html := s.read(t, report.HTMLFile); !strings.Contains(html, "run the suite") {
		t.Error("report.html does not name the stage")
	}
	for _, f := range []string{"localhost/suite.log", "localhost/engine-ps.txt", "localhost/leftovers.txt", "localhost/secrets-scan.txt"} {
		s.read(t, f)
	}
	if _, err := os.Stat(filepath.Join(s.artifacts, report.ReserveFile)); !os.IsNotExist(err) {
		t.Errorf("the reserve is still there: %v", err)
	}
}

// TestIntegrationRunFailsASuitePassingWithoutJUnit: exit code 0 and no
// JUnit report is a broken suite, not a green job.
func TestIntegrationRunFailsASuitePassingWithoutJUnit(t *testing.T) {
	runtimetest.Engine(t)
	s := startRun(t, "pass-without-junit")
	if code := s.wait(t); code != 1 {
		t.Fatalf("exit code %d, want 1:\n%s", code, s.out.String())
	}
	if junit := s.read(t, report.JUnitFile); !strings.Contains(junit, "without writing "+report.JUnitFile) {
		t.Errorf("the fallback JUnit report does not say why:\n%s", junit)
	}
}

// TestIntegrationRunFindsLeftoversAndSecrets: a run whose suite passed but
// left a container labelled with its run id, and a bootstrap token in its
// artifacts, fails; the container is removed and listed, the token
// redacted.
func TestIntegrationRunFindsLeftoversAndSecrets(t *testing.T) {
	rt := runtimetest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ref, err := runtimetest.EnsureImage(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	tok := token()
	// An ARTIFACTS of another folder in the environment: the run's
	// --artifacts wins, for the suite too.
	s := newRun(t, "leak-and-secret", "TOKEN="+tok, "ARTIFACTS="+t.TempDir())
	runtimetest.RemoveRunOnCleanup(t, rt, s.runID)
	name := "capd-e2e-run-test-" + s.runID
	// Planted before the run starts: its suite passes at once.
	if _, err := rt.RunContainer(ctx, runtime.ContainerSpec{Name: name, Image: ref, Labels: runtime.RunLabels(s.runID, "run-test", nil)}); err != nil {
		t.Fatal(err)
	}
	s.start(t)
	if code := s.wait(t); code != 1 {
		t.Fatalf("exit code %d, want 1:\n%s", code, s.out.String())
	}
	if left := s.read(t, "localhost/leftovers.txt"); !strings.Contains(left, name) {
		t.Errorf("leftovers.txt does not name the planted container %s:\n%s", name, left)
	}
	rep, err := leak.Check(ctx, rt, leak.Selector{RunID: s.runID})
	if err != nil || !rep.Empty() {
		t.Errorf("after the run: %s, %v; want the planted container removed; the run said:\n%s", rep, err, s.out.String())
	}
	if journal := s.read(t, "clusters/c1/journal.log"); strings.Contains(journal, tok) || !strings.Contains(journal, "kubeadm join") {
		t.Errorf("the token was not redacted:\n%s", journal)
	}
	if scan := s.read(t, "localhost/secrets-scan.txt"); !strings.Contains(scan, "bootstrap-token") || strings.Contains(scan, tok) {
		t.Errorf("secrets-scan.txt:\n%s", scan)
	}
	if strings.Contains(s.out.String(), tok) {
		t.Error("the run printed the token")
	}
}

// TestIntegrationRunSignals: SIGTERM to the supervisor interrupts the
// suite's process group; a suite that does not end within the grace
// period is killed, its children with it, and the job still gets its
// reports and fails.
func TestIntegrationRunSignals(t *testing.T) {
	runtimetest.Engine(t)
	s := startRun(t, "hang")
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(s.out.String(), "suite started") {
		if time.Now().After(deadline) {
			t.Fatalf("the fake suite did not start:\n%s", s.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	child, err := strconv.Atoi(strings.TrimSpace(s.read(t, "child")))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := s.wait(t)
	took := time.Since(start)
	if code == 0 {
		t.Fatalf("exit code 0 after SIGTERM:\n%s", s.out.String())
	}
	if took < 2*time.Second {
		t.Errorf("the suite was killed after %s, before its grace period (2s)", took)
	}
	if got := s.read(t, "signals"); got != "interrupted\n" {
		t.Errorf("the suite got %q; want one interrupt", got)
	}
	for _, want := range []string{"interrupting the suite", "grace period over: killing the suite"} {
		if !strings.Contains(s.out.String(), want) {
			t.Errorf("the run's output lacks %q:\n%s", want, s.out.String())
		}
	}
	if alive(child) {
		t.Errorf("the suite's child %d outlived the kill", child)
	}
	if junit := s.read(t, report.JUnitFile); !strings.Contains(junit, "run the suite") {
		t.Errorf("no fallback JUnit report:\n%s", junit)
	}
}

// alive reports whether pid runs (a zombie does not), waiting up to 5
// seconds for it to go.
func alive(pid int) bool {
	for range 50 {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}
