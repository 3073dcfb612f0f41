// run is `capd-e2e run`, the supervised E2E run that `make test-e2e` and
// Prow's job (scripts/ci-e2e.sh) start: a process that outlives the
// suite's, so that what the suite cannot do when it is killed or hangs is
// still done.
//
//  1. The images the selected specs need (capd-e2e images, in this
//     process), unless --images=false.
//  2. The suite, under Ginkgo's CLI, in a process group of its own, with a
//     run id (CAPD_E2E_RUN_ID) and a JUnit report in the artifacts.
//  3. After it, whatever happened: the leak check by run id (what the run
//     left is listed, removed, and fails the job), the engine's state and
//     the fallback reports (a JUnit report, metadata.json and report.html
//     naming the stage that failed, when the suite wrote none), the
//     secrets scan of the artifacts (redacted, failing the job), and a
//     screenshot of report.html where chromium is installed.
//
// Signals as Prow sends them: SIGTERM (or SIGINT) is passed on to the suite
// as an interrupt: Ginkgo interrupts the running node and cleans up, then
// writes its reports. A second signal is passed on too: Ginkgo skips the
// rest of the cleanup but still writes the JUnit report. A third signal, or
// --grace-period after the first, kills the suite. Step 3 runs after each.
// During step 1 the first signal stops the image build.
//
// Every flag's default is the environment variable upstream's Makefile and
// ci-e2e.sh read (ARTIFACTS, GINKGO_*, E2E_CONFIG, SKIP_RESOURCE_CLEANUP,
// USE_EXISTING_CLUSTER...), booleans in strconv.ParseBool's grammar.

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/capd-e2e/capd-e2e/factory/imagescmd"
	"github.com/capd-e2e/capd-e2e/framework/report"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
	"github.com/capd-e2e/capd-e2e/framework/secrets"
	"github.com/capd-e2e/capd-e2e/framework/suite/selection"
)

// runOptions are capd-e2e run's flags.
type runOptions struct {
	artifacts   string
	config      string
	suite       string
	labelFilter string
	focus       string
	skip        []string
	nodes       int
	timeout     time.Duration
	grace       time.Duration
	skipCleanup bool
	useExisting bool
	runID       string
	ginkgo      string
	images      bool
	// envErrs are environment defaults that did not parse, reported when
	// the command runs.
	envErrs []error
}

// env reads the environment variable name, with def when unset or empty.
func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// envBool reads the environment variable name as strconv.ParseBool
// does, with def when unset or empty; a value that does not parse is
// reported by check.
func (o *runOptions) envBool(name string, def bool) bool {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		o.envErrs = append(o.envErrs, fmt.Errorf("%s=%q is not a boolean (strconv.ParseBool: 1, t, true, 0, f, false...)", name, v))
	}
	return b
}

func (o *runOptions) envDuration(name, def string) time.Duration {
	v := env(name, def)
	d, err := time.ParseDuration(v)
	if err != nil {
		o.envErrs = append(o.envErrs, fmt.Errorf("%s=%q is not a duration (e.g. 90m, 3h)", name, v))
	}
	return d
}

func (o *runOptions) envInt(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		o.envErrs = append(o.envErrs, fmt.Errorf("%s=%q is not a number", name, v))
	}
	return n
}

func newRunCommand(s streams) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "The supervised E2E run: images, the suite under Ginkgo, then the leak check, reports and secrets scan whatever happened",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return usageError(err)
			}
			return exitCode(supervise(cmd.Context(), *o, s))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.artifacts, "artifacts", env("ARTIFACTS", "_artifacts"), "the artifacts folder ($ARTIFACTS)")
	f.StringVar(&o.labelFilter, "label-filter", env("GINKGO_LABEL_FILTER", "PR-Blocking"), "Ginkgo's label filter ($GINKGO_LABEL_FILTER)")
	f.StringVar(&o.focus, "focus", os.Getenv("GINKGO_FOCUS"), "Ginkgo's focus ($GINKGO_FOCUS)")
	f.StringSliceVar(&o.skip, "skip", strings.Fields(os.Getenv("GINKGO_SKIP")), "Ginkgo's skips ($GINKGO_SKIP, space separated)")
	suiteFlags(cmd, o)
	f.IntVar(&o.nodes, "nodes", o.envInt("GINKGO_NODES", 1), "Ginkgo processes ($GINKGO_NODES)")
	f.BoolVar(&o.skipCleanup, "skip-resource-cleanup", o.envBool("SKIP_RESOURCE_CLEANUP", false), "keep the clusters ($SKIP_RESOURCE_CLEANUP)")
	f.BoolVar(&o.useExisting, "use-existing-cluster", o.envBool("USE_EXISTING_CLUSTER", false), "use the current kubeconfig's cluster as the management cluster ($USE_EXISTING_CLUSTER)")
	return cmd
}

func (o *runOptions) check() error {
	errs := o.envErrs
	if o.nodes < 1 {
		errs = append(errs, fmt.Errorf("--nodes %d: want 1 or more", o.nodes))
	}
	if o.timeout <= 0 || o.grace <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %s, --grace-period %s: want durations above zero", o.timeout, o.grace))
	}
	for _, p := range []*string{&o.artifacts, &o.config, &o.suite} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			errs = append(errs, err)
		}
		*p = abs
	}
	if fi, err := os.Stat(o.suite); err != nil || !fi.IsDir() {
		errs = append(errs, fmt.Errorf("--suite %s: not a directory", o.suite))
	}
	return errors.Join(errs...)
}

// envSupervised is framework/suite's EnvSupervised (the command does not
// link the suite's packages).
const envSupervised = "CAPD_E2E_SUPERVISED"

// Files the run writes under ARTIFACTS/localhost.
const (
	hostDir       = "localhost"
	leftoversFile = "leftovers.txt"
	scanFile      = "secrets-scan.txt"
)

// The stages of a run, as the fallback report names them.
const (
	stageImages = "provide the images"
	stageSuite  = "run the suite"
)

// supervisor is one supervised run.
type supervisor struct {
	o     runOptions
	s     streams
	start time.Time
	// stage is where the job is, for the fallback report; tail the end
	// of its output.
	stage string
	tail  *tailWriter
	// signals counts SIGINT and SIGTERM.
	mu       sync.Mutex
	signals  int
	suite    *exec.Cmd
	watchdog *time.Timer
}

func (r *supervisor) log(format string, args ...any) {
	fmt.Fprintf(r.s.out, "[capd-e2e run %s] %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func supervise(ctx context.Context, o runOptions, s streams) int {
	r := &supervisor{o: o, s: s, start: time.Now(), tail: newTailWriter(5)}
	host := filepath.Join(o.artifacts, hostDir)
	if err := os.MkdirAll(host, 0o755); err != nil {
		fmt.Fprintln(s.err, "capd-e2e run:", err)
		return 2
	}
	if r.o.runID == "" {
		r.o.runID = runtime.NewRunID()
	}
	// One run id for everything the run creates: the suite labels and
	// tracks by it, and the leak check looks for nothing else, so that runs
	// on one engine never see each other's objects.
	// This process outlives the suite and does the suite watcher's job
	// after it (framework/suite: EnvSupervised): no watcher.
	// ARTIFACTS too, which the suite reads before -e2e.artifacts-folder
	// (as upstream's): one folder, whatever the environment said.
	for k, v := range map[string]string{"CAPD_E2E_RUN_ID": r.o.runID, envSupervised: "true", "ARTIFACTS": r.o.artifacts} {
		if err := os.Setenv(k, v); err != nil {
			fmt.Fprintln(s.err, "capd-e2e run:", err)
			return 2
		}
	}
	r.log("run id %s", r.o.runID)
	// Space kept for the reports: when the artifacts folder fills up, the
	// suite's report writer (framework/report) frees it.
	reserve := filepath.Join(o.artifacts, report.ReserveFile)
	if err := os.WriteFile(reserve, make([]byte, 1<<20), 0o644); err != nil {
		_ = os.Remove(reserve) // a partial reserve only takes space
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	stageCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for sig := range sigs {
			r.onSignal(sig, cancel)
		}
	}()

	rc := 0
	if o.images {
		rc = r.provideImages(stageCtx)
	}
	suiteStart := time.Now()
	if rc == 0 {
		rc = r.runSuite()
	}
	r.mu.Lock()
	if r.watchdog != nil {
		r.watchdog.Stop()
	}
	if r.signals > 0 && rc == 0 {
		rc = 1
	}
	r.mu.Unlock()
	// Whole seconds, as bench/scripts/cold.sh reads them.
	what := "suite"
	if r.stage != stageSuite {
		what = "job (at " + r.stage + ")"
	}
	r.log("%s finished with exit code %d after %ds in all", what, rc, int(time.Since(r.start).Seconds()))

	// The checks after the run have their own deadline: the signals that
	// ended the run must not stop them.
	after, cancelAfter := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
	defer cancelAfter()
	if err := os.Remove(reserve); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.log("removing the reserve: %v", err)
	}
	if !o.skipCleanup {
		if code := r.leakCheck(after); code != 0 && rc == 0 {
			rc = 1
		}
	}
	r.saveHostState(after, suiteStart)
	if code := r.fallbackReports(rc); code != 0 && rc == 0 {
		rc = 1
	}
	if code := r.secretsScan(); code != 0 && rc == 0 {
		rc = 1
	}
	r.screenshot(after)
	if fi, err := os.Stat(filepath.Join(o.artifacts, report.HTMLFile)); err == nil && fi.Size() > 0 {
		r.log("run report: %s", filepath.Join(o.artifacts, report.HTMLFile))
	}
	return rc
}

// onSignal is the three-stage handling of SIGINT and SIGTERM.
func (r *supervisor) onSignal(sig os.Signal, cancelStage context.CancelFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.signals++
	if r.signals == 1 {
		cancelStage() // the image build, if it is running
	}
	if r.suite == nil || r.suite.Process == nil {
		r.log("got %s during %q: stopping", sig, r.stage)
		return
	}
	pgid := -r.suite.Process.Pid
	switch r.signals {
	case 1:
		r.log("got %s: interrupting the suite, which cleans up (killed after --grace-period %s)", sig, r.o.grace)
		_ = syscall.Kill(pgid, syscall.SIGINT) // ESRCH: the suite is gone already
		r.watchdog = time.AfterFunc(r.o.grace, func() {
			r.log("grace period over: killing the suite")
			_ = syscall.Kill(pgid, syscall.SIGKILL) // ESRCH: the group is gone already
		})
	case 2:
		r.log("got %s again: the suite skips its cleanup and writes its report; leftovers are removed afterwards", sig)
		_ = syscall.Kill(pgid, syscall.SIGINT) // ESRCH: the group is gone already
	default:
		r.log("got %s a third time: killing the suite", sig)
		_ = syscall.Kill(pgid, syscall.SIGKILL) // ESRCH: the group is gone already
	}
}

func (r *supervisor) setStage(stage string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stage = stage
	r.tail = newTailWriter(5)
}

// stageLog opens ARTIFACTS/localhost/name for a stage's output, which also
// goes to stdout and the stage's tail. A write to the file that fails (a
// full artifacts folder) ends the file, said once, not the output: the
// stage's process must not lose its stdout (the suite died of SIGPIPE,
// before its reports, when the copy into a full folder stopped).
func (r *supervisor) stageLog(name string) (io.Writer, func()) {
	w := []io.Writer{r.s.out, r.tail}
	f, err := os.Create(filepath.Join(r.o.artifacts, hostDir, name))
	if err != nil {
		r.log("%v (the output is not kept)", err)
		return io.MultiWriter(w...), func() {}
	}
	kept := &keptLog{f: f, failed: func(err error) { r.log("%v: the rest of the output is not kept there", err) }}
	return io.MultiWriter(append(w, kept)...), func() { _ = f.Close() } // a log written unbuffered: nothing pending
}

// keptLog is a stage's log file that stops taking writes at its first
// failed one, calling failed once, and never fails a write.
type keptLog struct {
	mu     sync.Mutex
	f      io.Writer
	err    error
	failed func(error)
}

func (k *keptLog) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err == nil {
		if _, k.err = k.f.Write(p); k.err != nil {
			k.failed(k.err)
		}
	}
	return len(p), nil
}

func (r *supervisor) provideImages(ctx context.Context) int {
	r.setStage(stageImages)
	r.log("building or reusing images")
	out, done := r.stageLog("images.log")
	defer done()
	args := []string{"--config", r.o.config, "--suite", r.o.suite, "--label-filter", r.o.labelFilter, "--focus", r.o.focus,
		"--skip", strings.Join(r.o.skip, " "), "--selection-out", filepath.Join(r.o.artifacts, hostDir, "selection.json"),
		"--use-existing-cluster=" + strconv.FormatBool(r.o.useExisting)}
	if err := runImages(ctx, out, args); err != nil {
		return 1
	}
	r.log("images ready after %ds", int(time.Since(r.start).Seconds()))
	return 0
}

// runImages runs `capd-e2e images args` in this process, its output and
// its error into out.
func runImages(ctx context.Context, out io.Writer, args []string) error {
	cmd := imagescmd.Command(out, out)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintln(out, "capd-e2e images:", err)
	}
	return err
}

// ginkgoArgs are the Ginkgo CLI's arguments for the suite at target (its
// compiled binary or its directory).
func (r *supervisor) ginkgoArgs(target string, color bool) []string {
	o := r.o
	args := []string{"-v", "--trace", "--timeout=" + o.timeout.String(), "--nodes=" + strconv.Itoa(o.nodes),
		"--poll-progress-after=60m", "--poll-progress-interval=5m", "--fail-on-pending", "--fail-on-empty",
		"--json-report=ginkgo-report.json", "--output-dir=" + o.artifacts}
	// Colour only on a terminal: Prow's build log shows escape codes as
	// text.
	if !color {
		args = append(args, "--no-color")
	}
	args = append(args, selection.Filter{LabelFilter: o.labelFilter, Focus: o.focus, Skip: o.skip}.Args("--")...)
	// The suite writes the JUnit report itself (framework/report), with
	// each failure's phase, conditions and artifacts first.
	return append(args, target, "--",
		"-e2e.config="+o.config, "-e2e.artifacts-folder="+o.artifacts,
		"-e2e.skip-resource-cleanup="+strconv.FormatBool(o.skipCleanup),
		"-e2e.use-existing-cluster="+strconv.FormatBool(o.useExisting))
}

// onTerminal reports whether f is a terminal (a character device) outside
// CI.
func onTerminal(f *os.File) bool {
	if os.Getenv("CI") != "" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (r *supervisor) runSuite() int {
	r.setStage(stageSuite)
	// capd-e2e images compiled the suite where `ginkgo build` would;
	// without the image step, Ginkgo compiles it.
	target := imagescmd.SuiteBinary(r.o.suite)
	var build []string
	if !r.o.images {
		// The suite's files carry the e2e build tag, as capd-e2e's.
		target, build = ".", []string{"--tags=e2e"}
	}
	out, done := r.stageLog("suite.log")
	defer done()
	cmd := exec.Command(r.o.ginkgo, append(build, r.ginkgoArgs(target, onTerminal(os.Stdout))...)...)
	cmd.Dir = r.o.suite
	cmd.Stdout, cmd.Stderr = out, out
	// A process group of its own, so that a signal reaches the test
	// processes Ginkgo starts, not only Ginkgo.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A process that left the group but holds the output open (a daemon a
	// test started) must not hold the job after the suite is gone.
	cmd.WaitDelay = 30 * time.Second
	r.log("running the suite (label filter: %s)", r.o.labelFilter)
	// Under the lock onSignal takes: a signal is either seen here, and
	// the suite not started, or finds the suite to pass it on to.
	r.mu.Lock()
	if r.signals > 0 {
		r.mu.Unlock()
		fmt.Fprintln(out, "interrupted before the suite started")
		return 1
	}
	err := cmd.Start()
	if err == nil {
		r.suite = cmd
	}
	r.mu.Unlock()
	if err != nil {
		fmt.Fprintf(out, "start %s: %v\n", r.o.ginkgo, err)
		return 1
	}
	err = cmd.Wait()
	r.mu.Lock()
	r.suite = nil
	r.mu.Unlock()
	var ee *exec.ExitError
	switch {
	case errors.Is(err, exec.ErrWaitDelay):
		fmt.Fprintf(out, "the suite exited, but a process it started still held its output after %s\n", cmd.WaitDelay)
		if code := cmd.ProcessState.ExitCode(); code > 0 {
			return code
		}
		return 1
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		return ee.ExitCode()
	default:
		fmt.Fprintf(out, "the suite: %v\n", err)
		return 1
	}
}

// leakCheck checks by run id that the run left nothing in the engine,
// removes what it left and keeps the list in localhost/leftovers.txt.
func (r *supervisor) leakCheck(ctx context.Context) int {
	var out bytes.Buffer
	code := 2
	rt, err := moby.New(moby.Config{})
	if err != nil {
		fmt.Fprintln(&out, "capd-e2e run:", err)
	} else {
		code = checkRun(ctx, rt, r.o.runID, &out, &out)
		_ = rt.Close() // a connection's close: nothing to lose
	}
	_, _ = r.s.out.Write(out.Bytes()) // the terminal; the same text is kept in the artifacts below
	r.keep(leftoversFile, out.Bytes())
	switch code {
	case 0:
		r.log("no objects left behind")
	case 1:
		r.log("the run left objects behind (listed above and in %s/%s; now removed)", hostDir, leftoversFile)
	default:
		r.log("the leak check itself failed (above): what the run left is unknown")
	}
	return code
}

// saveHostState writes the engine's state into localhost (no docker CLI:
// a Podman host may have none), and the engine's log where
// capd-e2e engine ensure started it.
func (r *supervisor) saveHostState(ctx context.Context, since time.Time) {
	host := filepath.Join(r.o.artifacts, hostDir)
	rt, err := moby.New(moby.Config{})
	if err == nil {
		err = dump(ctx, rt, host, since.Unix())
		_ = rt.Close() // a connection's close: nothing to lose
	}
	if err != nil {
		r.log("the engine's state, partly: %v", err)
	}
	for _, f := range []string{"/var/log/capd-e2e-dockerd.log", "/var/log/capd-e2e-podman.log"} {
		if b, err := os.ReadFile(f); err == nil {
			r.keep(filepath.Base(f), b)
		}
	}
}

// fallbackReports writes the JUnit report, metadata.json and report.html
// the suite did not: one failed test case naming the stage. A suite that
// passed without writing its JUnit report fails the job.
func (r *supervisor) fallbackReports(rc int) int {
	junit := filepath.Join(r.o.artifacts, report.JUnitFile)
	fi, err := os.Stat(junit)
	hasJUnit := err == nil && fi.Size() > 0
	code, detail := 0, r.tail.String()
	switch {
	case rc == 0 && hasJUnit:
		return 0
	case rc == 0:
		r.log("the suite passed but wrote no JUnit report (%s)", junit)
		code, detail = 1, "the suite exited 0 without writing "+report.JUnitFile
	}
	now := time.Now()
	err = report.WriteMissing(report.Input{
		Report:         report.StageFailure("capd-e2e run", r.stage, detail, r.start, now),
		ArtifactFolder: r.o.artifacts,
		RunID:          r.o.runID,
		Now:            now,
	})
	if err != nil {
		r.log("the fallback reports: %v", err)
	}
	return code
}

// secretsScan scans the artifacts for secrets (the suite redacts its own;
// this catches what slipped through, and what a suite killed never
// redacted), redacts them and fails the job if it found any.
func (r *supervisor) secretsScan() int {
	var out bytes.Buffer
	code := runSecrets([]string{"scan", r.o.artifacts}, &out, &out)
	if code != 0 {
		r.log("secrets found in the artifacts (%s/%s); redacting them", hostDir, scanFile)
		if runSecrets([]string{"redact", r.o.artifacts}, &out, &out) != 0 {
			r.log("redacting failed: %s", lastLine(out.String()))
		}
		if after, err := secrets.ScanTree(r.o.artifacts); err != nil || len(after.Findings) > 0 {
			r.log("secrets remain in the artifacts after redaction: %v", err)
		}
	} else {
		r.log("secrets scan: %s", lastLine(out.String()))
	}
	r.keep(scanFile, out.Bytes())
	return code
}

// screenshot keeps a picture of report.html beside it, where a browser is
// installed (make test installs Debian's chromium).
func (r *supervisor) screenshot(ctx context.Context) {
	html := filepath.Join(r.o.artifacts, report.HTMLFile)
	if fi, err := os.Stat(html); err != nil || fi.Size() == 0 {
		return
	}
	browser, err := exec.LookPath("chromium")
	if err != nil {
		return
	}
	dir, err := os.MkdirTemp("", "capd-e2e-shot-")
	if err != nil {
		return
	}
	defer os.RemoveAll(dir)
	shot := filepath.Join(dir, "report.png")
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--window-size=1280,2400", "--screenshot="+shot, "file://"+html)
	if err := cmd.Run(); err != nil {
		r.log("no screenshot of the report: %v", err)
		return
	}
	if b, err := os.ReadFile(shot); err == nil {
		if err := os.WriteFile(filepath.Join(r.o.artifacts, "report.png"), b, 0o644); err != nil {
			r.log("could not write report.png: %v", err)
		}
	}
}

// keep writes data into localhost/name; a write that fails (a full
// folder) is said, the data having gone to stdout already.
func (r *supervisor) keep(name string, data []byte) {
	p := filepath.Join(r.o.artifacts, hostDir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		_ = os.Remove(p) // a partial file
		r.log("could not write %s into the artifacts (is the folder full?); it is printed above", filepath.Join(hostDir, name))
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// tailWriter keeps the last n lines written to it.
type tailWriter struct {
	mu    sync.Mutex
	n     int
	lines []string
	part  string
}

func newTailWriter(n int) *tailWriter { return &tailWriter{n: n} }

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.part + string(p)
	parts := strings.Split(s, "\n")
	t.part = parts[len(parts)-1]
	for _, l := range parts[:len(parts)-1] {
		t.lines = append(t.lines, l)
	}
	if len(t.lines) > t.n {
		t.lines = t.lines[len(t.lines)-t.n:]
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := t.lines
	if t.part != "" {
		lines = append(append([]string(nil), lines...), t.part)
		if len(lines) > t.n {
			lines = lines[len(lines)-t.n:]
		}
	}
	return strings.Join(lines, "\n")
}
