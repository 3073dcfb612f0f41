package summary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a fake time source that tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)}
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestPhaseTimings(t *testing.T) {
	c := newClock()
	r := newWithClock("quick-start", t.TempDir(), c.now)

	c.advance(2 * time.Second)
	done := r.Phase("create namespace")
	c.advance(500 * time.Millisecond)
	done(nil)

	done = r.Phase("wait for control plane")
	c.advance(3*time.Minute + 20*time.Second)
	done(nil)
	c.advance(time.Hour)
	done(errors.New("ignored: a phase ends once"))

	s := r.Summary()
	if s.Result != ResultPassed || s.Failure != nil {
		t.Fatalf("result = %q, failure = %+v; want passed, none", s.Result, s.Failure)
	}
	want := []struct {
		name     string
		offset   time.Duration
		duration time.Duration
	}{
		{"create namespace", 2 * time.Second, 500 * time.Millisecond},
		{"wait for control plane", 2500 * time.Millisecond, 3*time.Minute + 20*time.Second},
	}
	if len(s.Phases) != len(want) {
		t.Fatalf("got %d phases, want %d", len(s.Phases), len(want))
	}
	for i, w := range want {
		p := s.Phases[i]
		if p.Name != w.name || p.Start.Sub(s.Start) != w.offset || p.Duration != w.duration || p.Result != ResultPassed {
			t.Errorf("phase %d = %+v (offset %s); want %s at +%s for %s, passed", i, p, p.Start.Sub(s.Start), w.name, w.offset, w.duration)
		}
	}
	if s.Duration != 2*time.Second+500*time.Millisecond+3*time.Minute+20*time.Second+time.Hour {
		t.Errorf("spec duration = %s", s.Duration)
	}
}

func TestFailedPhaseIsTheFirstThatFailedOrNeverEnded(t *testing.T) {
	c := newClock()
	r := newWithClock("md-remediation", t.TempDir(), c.now)
	r.Phase("create cluster")(nil)
	_ = r.Phase("wait for remediation") // the spec timed out in here
	c.advance(5 * time.Minute)
	r.Phase("cleanup: delete cluster")(errors.New("cluster still exists"))
	r.Fail("Timed out after 300.000s.\nExpected machine to be deleted", "md_remediation.go:120")

	s := r.Summary()
	if s.Result != ResultFailed {
		t.Fatalf("result = %q, want failed", s.Result)
	}
	if s.Failure.Phase != "wait for remediation" {
		t.Errorf("failing phase = %q, want the unfinished one", s.Failure.Phase)
	}
	if s.Phases[1].Result != ResultUnfinished || s.Phases[1].Duration != 5*time.Minute {
		t.Errorf("unfinished phase = %+v; want unfinished, running for 5m", s.Phases[1])
	}
	if s.Failure.Location != "md_remediation.go:120" {
		t.Errorf("location = %q", s.Failure.Location)
	}
}

func TestPhaseErrorWithoutFailIsAFailure(t *testing.T) {
	r := New("quick-start", t.TempDir())
	r.Phase("leak check")(errors.New("container c1-md-0 left"))
	s := r.Summary()
	if s.Result != ResultFailed || s.Failure == nil || s.Failure.Phase != "leak check" || s.Failure.Message != "container c1-md-0 left" {
		t.Fatalf("summary = %+v, failure %+v", s, s.Failure)
	}
}

func TestObjectsAndSnapshotInTextOnlyOnFailure(t *testing.T) {
	r := New("quick-start", t.TempDir())
	r.Phase("create cluster")(nil)
	r.SetObjects([]Object{{Kind: "Cluster", Name: "c1"}})
	r.SetSnapshot(Snapshot{Path: "clusters/c1/containers.txt", Table: "NAME\nc1-lb\n", Containers: []Container{{Name: "c1-lb", State: "running"}}})
	s := r.Summary()
	// The report shows a passed spec's machines too: the JSON has them.
	if len(s.Objects) != 1 || s.Snapshot == nil || len(s.Snapshot.Containers) != 1 {
		t.Errorf("a passed summary lacks objects %v / snapshot %v", s.Objects, s.Snapshot)
	}
	var text strings.Builder
	_ = s.WriteText(&text)
	if strings.Contains(text.String(), "Conditions:") || strings.Contains(text.String(), "c1-lb") {
		t.Errorf("a passed summary's text shows conditions or containers:\n%s", text.String())
	}
	r.Fail("boom", "")
	text.Reset()
	_ = r.Summary().WriteText(&text)
	if !strings.Contains(text.String(), "Cluster c1") || !strings.Contains(text.String(), "c1-lb") {
		t.Errorf("a failed summary's text lacks the objects or containers:\n%s", text.String())
	}
}

func TestFailureRendering(t *testing.T) {
	c := newClock()
	r := newWithClock("kcp-remediation", t.TempDir(), c.now)
	r.Set("namespace", "kcp-remediation-abc123")
	r.Set("cluster", "kcp-remediation-x1y2z3")
	r.Phase("create cluster")(nil)
	c.advance(90 * time.Second)
	done := r.Phase("wait for remediation")
	c.advance(10 * time.Minute)
	done(errors.New("Timed out after 600s.\nmachine kcp-remediation-x1y2z3-cp-abcde still exists"))
	r.Fail("Timed out after 600s.\nmachine kcp-remediation-x1y2z3-cp-abcde still exists", "/work/main/e2e/specs/mhc.go:210")
	lt := time.Date(2026, 11, 30, 5, 3, 0, 0, time.UTC)
	r.SetObjects([]Object{
		{Kind: "Cluster", Namespace: "kcp-remediation-abc123", Name: "kcp-remediation-x1y2z3", Conditions: []Condition{
			{Type: "Available", Status: "False", Reason: "NotAvailable", Message: "* ControlPlaneAvailable:\n  * 1 of 3 etcd members unhealthy", LastTransitionTime: lt},
		}},
		{Kind: "Machine", Namespace: "kcp-remediation-abc123", Name: "kcp-remediation-x1y2z3-cp-abcde"},
	})
	r.SetSnapshot(Snapshot{Path: "clusters/kcp-remediation-x1y2z3/containers.txt", Table: "NAME   STATE\ncp-1   exited\n"})

	var b bytes.Buffer
	if err := r.Summary().WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Spec:     kcp-remediation\n",
		"Result:   FAILED\n",
		"Duration: 11m30s\n",
		"namespace: kcp-remediation-abc123\n",
		"cluster: kcp-remediation-x1y2z3\n",
		"+0s",
		"+1m30s",
		"10m0s",
		"failed  wait for remediation",
		"phase:    wait for remediation\n",
		"location: /work/main/e2e/specs/mhc.go:210\n",
		"message:  Timed out after 600s.\n            machine kcp-remediation-x1y2z3-cp-abcde still exists\n",
		"Cluster kcp-remediation-abc123/kcp-remediation-x1y2z3\n",
		"Available  False  NotAvailable  2026-11-30T05:03:00Z  * ControlPlaneAvailable: * 1 of 3 etcd members unhealthy\n",
		"Machine kcp-remediation-abc123/kcp-remediation-x1y2z3-cp-abcde\n    (no conditions)\n",
		"Containers (clusters/kcp-remediation-x1y2z3/containers.txt):\n  NAME   STATE\n  cp-1   exited\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestPassedRenderingHasNoFailureSection(t *testing.T) {
	r := New("quick-start", t.TempDir())
	r.Phase("create cluster")(nil)
	var b bytes.Buffer
	if err := r.Summary().WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "Result:   PASSED") || strings.Contains(out, "Failure:") {
		t.Errorf("unexpected summary:\n%s", out)
	}
}

func TestWriteOnFailure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "specs", "quick-start-abc123") // Write creates it
	r := New("quick-start", dir)
	func() {
		// What a spec does: a deferred Write runs even when the spec body
		// panics (Ginkgo fails a spec by panicking).
		defer func() {
			if recover() == nil {
				t.Fatal("expected a panic")
			}
		}()
		defer func() {
			if err := r.Write(); err != nil {
				t.Errorf("Write: %v", err)
			}
		}()
		_ = r.Phase("wait for cluster")
		r.Fail("cluster never became ready", "")
		panic("spec failed")
	}()

	text, err := os.ReadFile(filepath.Join(dir, TextFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "Result:   FAILED") || !strings.Contains(string(text), "phase:    wait for cluster") {
		t.Errorf("summary.txt:\n%s", text)
	}
	raw, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var s Summary
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("summary.json does not parse: %v", err)
	}
	if s.Result != ResultFailed || s.Failure == nil || s.Failure.Phase != "wait for cluster" || s.Phases[0].Result != ResultUnfinished {
		t.Errorf("summary.json = %+v", s)
	}
}

func TestWriteReportsAnUnwritableFolder(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := New("quick-start", filepath.Join(file, "sub")).Write()
	if err == nil || !strings.Contains(err.Error(), `"quick-start"`) {
		t.Errorf("Write into a file's child = %v; want an error naming the spec", err)
	}
}

func TestConcurrentPhases(t *testing.T) {
	r := New("self-hosted", t.TempDir())
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			done := r.Phase("phase")
			if i%2 == 0 {
				done(nil)
			}
			_ = r.Summary()
		})
	}
	wg.Wait()
	if n := len(r.Summary().Phases); n != 20 {
		t.Errorf("%d phases, want 20", n)
	}
}

func TestBestEffortPhaseErrorIsAWarning(t *testing.T) {
	r := New("quick-start", t.TempDir())
	r.Phase("create cluster")(nil)
	r.BestEffortPhase("cleanup: collect machine logs")(errors.New("container c1-md-0-x: journalctl exited 1"))
	_ = r.BestEffortPhase("cleanup: describe cluster") // never ends: not the failing phase
	s := r.Summary()
	if s.Result != ResultPassed || s.Failure != nil {
		t.Fatalf("result = %q, failure = %+v; best-effort phases must not fail the spec", s.Result, s.Failure)
	}
	if p := s.Phases[1]; p.Result != ResultWarning || !p.BestEffort || p.Error == "" {
		t.Errorf("best-effort phase = %+v; want a warning with its error", p)
	}
	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s+\+\S+\s+\S+\s+warning\s+cleanup: collect machine logs$`).MatchString(b.String()) {
		t.Errorf("summary lacks the warning:\n%s", b.String())
	}
}

func TestFailureTextNamesFailedTests(t *testing.T) {
	c := newClock()
	r := newWithClock("k8s-conformance", t.TempDir(), c.now)
	r.Set("cluster", "k8s-conformance-x1y2z3")
	done := r.Phase("run Kubernetes conformance v1.37.2")
	var tests []string
	for i := range 25 {
		tests = append(tests, fmt.Sprintf("[sig-network] DNS should provide DNS for services [Conformance] #%d: lookup failed", i))
	}
	r.Set(FailedTestsAttribute, strings.Join(tests, "\n"))
	done(errors.New("conformance: 25 of 400 tests failed"))
	r.Fail("conformance: 25 of 400 tests failed", "conformance.go:1")
	text := r.Summary().FailureText(nil)
	for _, want := range []string{
		"k8s-conformance failed in phase: run Kubernetes conformance v1.37.2",
		"failed tests (25):\n  [sig-network] DNS should provide DNS for services [Conformance] #0: lookup failed\n",
		"#19: lookup failed\n  (5 more in summary.txt)\n",
		"cluster: k8s-conformance-x1y2z3\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("failure text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "#20:") {
		t.Errorf("failure text lists more than %d tests:\n%s", maxFailedTests, text)
	}
}
