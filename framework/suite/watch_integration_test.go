package suite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/report"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// fakeToken is a bootstrap token made now, so that none is committed.
func fakeToken() string {
	return "a1" + runtime.NewRunID()[:4] + "." + strings.Repeat("x", 16)
}

// startTestWatcher starts the real watcher (this test binary, through
// init) for a run of its own; the suite's death is the pipe closed
// without "done".
func startTestWatcher(t *testing.T, skipCleanup bool) (*watcher, watchTask) {
	t.Helper()
	t.Setenv(EnvSupervised, "")
	task := watchTask{RunID: runtime.NewRunID(), Artifacts: t.TempDir(), JUnitFile: report.JUnitFile, SkipCleanup: skipCleanup, SuitePID: os.Getpid(), Started: time.Now()}
	w, err := startWatcher(task)
	if err != nil || w == nil {
		t.Fatalf("startWatcher: %v, %v", w, err)
	}
	t.Cleanup(func() {
		_ = w.w.Close()
		select {
		case <-w.exited:
		case <-time.After(time.Minute):
			_ = w.cmd.Process.Kill()
		}
	})
	return w, task
}

// watchPlanted starts a watcher (startTestWatcher) and a container
// labelled with its run id, as the run's, and returns the container's
// name.
func watchPlanted(ctx context.Context, t *testing.T, rt runtime.Runtime) (*watcher, watchTask, string) {
	t.Helper()
	ref, err := runtimetest.EnsureImage(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	w, task := startTestWatcher(t, false)
	runtimetest.RemoveRunOnCleanup(t, rt, task.RunID)
	name := "capd-e2e-watch-test-" + task.RunID
	if _, err := rt.RunContainer(ctx, runtime.ContainerSpec{Name: name, Image: ref, Labels: runtime.RunLabels(task.RunID, "watch-test", nil)}); err != nil {
		t.Fatal(err)
	}
	return w, task, name
}

func waitExited(t *testing.T, w *watcher, task watchTask) string {
	t.Helper()
	select {
	case <-w.exited:
	case <-time.After(3 * time.Minute):
		t.Fatal("the watcher did not exit within 3 minutes")
	}
	b, err := os.ReadFile(filepath.Join(task.Artifacts, WatcherLog))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestIntegrationWatcherCleansUpAfterADeadSuite: the suite dies (its end
// of the pipe closes without "done"): the watcher removes the container
// the run labelled, writes the reports the suite did not, naming what
// happened, and redacts a token in the artifacts.
func TestIntegrationWatcherCleansUpAfterADeadSuite(t *testing.T) {
	rt := runtimetest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w, task, name := watchPlanted(ctx, t, rt)
	tok := fakeToken()
	journal := filepath.Join(task.Artifacts, "journal.log")
	if err := os.WriteFile(journal, []byte("kubeadm join 172.18.0.3:6443 --token "+tok+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	if err := w.w.Close(); err != nil { // the suite "dies"
		t.Fatal(err)
	}
	log := waitExited(t, w, task)
	if !strings.Contains(log, "ended without writing its reports") || !strings.Contains(log, name) {
		t.Errorf("the watcher's log does not say what it did:\n%s", log)
	}
	rep, err := leak.Check(ctx, rt, leak.Selector{RunID: task.RunID})
	if err != nil || !rep.Empty() {
		t.Errorf("after the watcher: %s, %v; want the container removed", rep, err)
	}
	junit, err := os.ReadFile(filepath.Join(task.Artifacts, report.JUnitFile))
	if err != nil || !strings.Contains(string(junit), "<failure") || !strings.Contains(string(junit), "the suite process died") || !strings.Contains(string(junit), name) {
		t.Errorf("JUnit report: %v\n%s", err, junit)
	}
	for _, f := range []string{report.MetadataFile, report.HTMLFile} {
		if _, err := os.Stat(filepath.Join(task.Artifacts, f)); err != nil {
			t.Error(err)
		}
	}
	if b, _ := os.ReadFile(journal); strings.Contains(string(b), tok) {
		t.Error("the token was not redacted")
	}
}

// TestIntegrationWatcherDoesNothingAfterDone: a suite that wrote its
// reports leaves the watcher nothing to do: it removes nothing, writes no
// report.
func TestIntegrationWatcherDoesNothingAfterDone(t *testing.T) {
	rt := runtimetest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w, task, _ := watchPlanted(ctx, t, rt)
	if err := w.done(); err != nil {
		t.Fatal(err)
	}
	log := waitExited(t, w, task)
	if !strings.Contains(log, "nothing to do") {
		t.Errorf("watcher log:\n%s", log)
	}
	if rep, err := leak.Check(ctx, rt, leak.Selector{RunID: task.RunID}); err != nil || len(rep.Containers) != 1 {
		t.Errorf("after done: %s, %v; want the container left alone", rep, err)
	}
	if _, err := os.Stat(filepath.Join(task.Artifacts, report.JUnitFile)); !os.IsNotExist(err) {
		t.Errorf("a JUnit report after done: %v", err)
	}
}

// TestWatcherNotStartedUnderASupervisor: capd-e2e run outlives the suite
// and sets EnvSupervised.
func TestWatcherNotStartedUnderASupervisor(t *testing.T) {
	t.Setenv(EnvSupervised, "true")
	w, err := startWatcher(watchTask{Artifacts: t.TempDir()})
	if w != nil || err != nil {
		t.Errorf("startWatcher under a supervisor = %v, %v; want none", w, err)
	}
}
