package suite

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/report"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
	"github.com/capd-e2e/capd-e2e/framework/secrets"
)

// The suite's watcher: what the suite does for its run when it ends (the
// leak check by run id, the reports, the redaction of secrets) must happen
// when it is killed outright too (kill -9, the OOM killer, a CI runner
// that gives up). A process that outlives the suite's does it: a copy of
// the suite's own test binary, started by Setup's process before it
// creates anything, in a session of its own (so that a kill of the suite's
// process group spares it), that waits on a pipe only the suite holds.
// When the suite writes its reports, it tells the watcher, which exits.
// When the pipe closes first, the suite died: the watcher removes what the
// run left (unless -e2e.skip-resource-cleanup), writes the JUnit report,
// metadata.json and report.html the suite did not, naming what happened,
// and redacts the artifacts. Its log is WatcherLog in the artifacts folder.
//
// So a provider's suite run with plain ginkgo or go test gets that too.
// Under `capd-e2e run`, which outlives the suite and does the same after
// it, with a grace period for a suite that hangs, no watcher is started
// (EnvSupervised).

// EnvSupervised, true (strconv.ParseBool) as `capd-e2e run` sets it, says
// a supervisor outlives the suite: no watcher is started.
const EnvSupervised = "CAPD_E2E_SUPERVISED"

// WatcherLog is the watcher's log in the artifacts folder.
const WatcherLog = "suite-watcher.log"

// envWatch carries a watcher's task (watchTask, JSON) to the copy of the
// test binary that is the watcher.
const envWatch = "CAPD_E2E_SUITE_WATCH"

// watchDone is what the suite writes to the watcher when it has written
// its reports.
const watchDone = "done"

// watcherDeadline bounds the watcher's work after the suite died.
const watcherDeadline = 15 * time.Minute

// watchTask is what the watcher does when the suite dies.
type watchTask struct {
	RunID       string
	Artifacts   string
	JUnitFile   string
	SkipCleanup bool
	SuitePID    int
	Started     time.Time
}

func init() {
	// The test binary started as the watcher is the watcher, and nothing
	// else: it never gets to the tests.
	if task := os.Getenv(envWatch); task != "" {
		os.Exit(watcherMain(task, os.Stdin, os.Stderr))
	}
}

// watcher is the suite's end of the pipe.
type watcher struct {
	w   *os.File
	cmd *exec.Cmd
	// exited is closed when the watcher process has exited.
	exited chan struct{}
}

// startWatcher starts the watcher for task, unless a supervisor outlives
// the suite; nil then.
func startWatcher(task watchTask) (*watcher, error) {
	if supervised, _ := strconv.ParseBool(os.Getenv(EnvSupervised)); supervised {
		return nil, nil // unset or not a boolean: no supervisor to count on
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the suite's watcher: %w", err)
	}
	data, err := json.Marshal(task)
	if err != nil {
		return nil, err
	}
	log, err := os.OpenFile(filepath.Join(task.Artifacts, WatcherLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("the suite's watcher: %w", err)
	}
	defer log.Close()
	// Close-on-exec, both ends: no process the suite starts holds the
	// write end, so that the watcher reads EOF when the suite is gone.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("the suite's watcher: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envWatch+"="+string(data))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		_ = w.Close() // nothing reads it
		return nil, fmt.Errorf("the suite's watcher: %w", err)
	}
	wt := &watcher{w: w, cmd: cmd, exited: make(chan struct{})}
	// Reaped when it exits before the suite does; its exit code is in
	// its log.
	go func() {
		_ = cmd.Wait() // its exit code is in its log; exited says it ended
		close(wt.exited)
	}()
	return wt, nil
}

// done tells the watcher that the suite wrote its reports: it exits.
func (w *watcher) done() error {
	if w == nil {
		return nil
	}
	_, err := io.WriteString(w.w, watchDone+"\n")
	return errors.Join(err, w.w.Close())
}

// watcherMain is the watcher's process: it waits for the suite, and when
// the suite died without saying it was done, does its job. It returns the
// exit code.
func watcherMain(taskJSON string, in io.Reader, log io.Writer) int {
	logf := func(format string, args ...any) {
		fmt.Fprintf(log, "%s watcher: %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
	}
	var task watchTask
	if err := json.Unmarshal([]byte(taskJSON), &task); err != nil {
		logf("bad task %q: %v", taskJSON, err)
		return 2
	}
	// Nothing this process starts is a watcher.
	_ = os.Unsetenv(envWatch) // only fails for an empty name
	logf("watching suite process %d (run %s)", task.SuitePID, task.RunID)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == watchDone {
			logf("the suite wrote its reports: nothing to do")
			return 0
		}
	}
	logf("suite process %d ended without writing its reports (killed?): cleaning up after it", task.SuitePID)
	ctx, cancel := context.WithTimeout(context.Background(), watcherDeadline)
	defer cancel()
	return afterDeath(ctx, task, logf)
}

// afterDeath does for a dead suite's run what its teardown and reports
// would have.
func afterDeath(ctx context.Context, task watchTask, logf func(string, ...any)) int {
	code := 0
	var removed string
	if !task.SkipCleanup {
		r, err := removeRun(ctx, task.RunID)
		if err != nil {
			logf("run %s: %v", task.RunID, err)
			code = 1
		}
		removed = r
		logf("run %s left: %s", task.RunID, removed)
	}
	detail := fmt.Sprintf("suite process %d ended without writing its reports (killed?); the suite's watcher removed what run %s left: %s; see %s",
		task.SuitePID, task.RunID, removed, WatcherLog)
	if task.SkipCleanup {
		detail = fmt.Sprintf("suite process %d ended without writing its reports (killed?); run %s was kept (-e2e.skip-resource-cleanup); see %s",
			task.SuitePID, task.RunID, WatcherLog)
	}
	now := time.Now()
	err := report.WriteMissing(report.Input{
		Report:         report.StageFailure("capd-e2e suite", "the suite process died", detail, task.Started, now),
		ArtifactFolder: task.Artifacts,
		RunID:          task.RunID,
		JUnitFile:      task.JUnitFile,
		Now:            now,
	})
	if err != nil {
		logf("the reports: %v", err)
		code = 1
	}
	rep, err := secrets.RedactTree(task.Artifacts)
	if err != nil {
		logf("redacting the artifacts: %v", err)
		code = 1
	}
	for _, f := range rep.Findings {
		logf("redacted %s", f) // path:line kind fingerprint, never the secret
	}
	logf("done")
	return code
}

// removeRun removes what run id left in the engine and its markers
// (leak.ClearRun), and says what that was.
func removeRun(ctx context.Context, id string) (string, error) {
	rt, err := moby.New(moby.Config{})
	if err != nil {
		return "unknown", err
	}
	defer rt.Close()
	left, err := leak.ClearRun(ctx, rt, id)
	switch {
	case !left.Empty():
		return left.String(), err
	case err != nil:
		return "unknown", err
	}
	return "nothing", nil
}
