package logs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

type stepKind int

const (
	stepExec stepKind = iota
	stepCopy
	stepLogs
)

// step is one thing collected from a container.
type step struct {
	kind stepKind
	// output is the file or folder, relative to the container's folder,
	// that receives the result; for stepLogs, the stdout file.
	output string
	// stderrOutput is the stderr file of stepLogs.
	stderrOutput string
	cmd          []string // stepExec
	path         string   // stepCopy: the path in the container
	optional     bool     // stepCopy: a missing path is no failure
	timeout      time.Duration
	// goProgram marks a stepExec whose command is a short-lived Go
	// program: it runs with goEnv.
	goProgram bool
}

// goEnv is added to the environment of the machine's own Go programs
// (kubelet --version, crictl). They print a few lines and exit, yet the
// runtime's garbage collector starts work in them all the same: measured on
// a v1.36.3 kubelet, 30 runs each, --version took 78-82 ms of CPU with the
// default and 60 ms with GOGC=off. The memory limit keeps a program that
// does more than expected from growing without bound: the collector still
// runs once the heap nears it. GOMAXPROCS=1 keeps each from spreading its
// start-up over every core while other commands run: with it, collecting 3
// kind nodes (BenchmarkCollectNode, 10 rounds, 2 cores) took a median 2.36 s
// of CPU in the nodes instead of 2.47 s.
var goEnv = []string{"GOGC=off", "GOMEMLIMIT=256MiB", "GOMAXPROCS=1"}

// journal is upstream's journalctl invocation (same format, so logs line
// up with theirs) plus args.
func journal(args ...string) []string {
	return append([]string{"journalctl", "--no-pager", "--output=short-precise"}, args...)
}

func execStep(output string, cmd ...string) step {
	return step{kind: stepExec, output: output, cmd: cmd}
}

// goStep is an execStep of a short-lived Go program (goEnv).
func goStep(output string, cmd ...string) step {
	s := execStep(output, cmd...)
	s.goProgram = true
	return s
}

func (c *Collector) machineSteps() []step {
	steps := []step{
		{kind: stepLogs, output: "container-stdout.log", stderrOutput: "container-stderr.log"},
		execStep("journal.log", journal()...),
		execStep("kern.log", journal("-k")...),
		execStep("kubelet.log", journal("-u", "kubelet.service")...),
		execStep("containerd.log", journal("-u", "containerd.service")...),
		goStep("kubelet-version.txt", "kubelet", "--version"),
		goStep("containerd-info.txt", "crictl", "info"),
		goStep("crictl-ps.txt", "crictl", "ps", "-a"),
		{kind: stepCopy, output: "pods", path: "/var/log/pods"},
		{kind: stepCopy, output: "bootstrap", path: "/run/cluster-api", optional: true},
		{kind: stepCopy, output: "cloud-init-output.log", path: "/var/log/cloud-init-output.log", optional: true},
	}
	for _, a := range c.AdditionalLogs {
		s := execStep(a.File, a.Cmd...)
		s.timeout = a.Timeout
		steps = append(steps, s)
	}
	for _, a := range c.AdditionalCopies {
		steps = append(steps, step{kind: stepCopy, output: a.Dest, path: a.Path, optional: a.Optional, timeout: a.Timeout})
	}
	return steps
}

func (c *Collector) loadBalancerSteps() []step {
	return []step{
		{kind: stepLogs, output: "container-stdout.log", stderrOutput: "container-stderr.log"},
		{kind: stepCopy, output: "haproxy.cfg", path: "/usr/local/etc/haproxy/haproxy.cfg"},
	}
}

// Failure is one entry of a container's errors file (ErrorsFile).
type Failure struct {
	// Output is the file or folder, relative to the container's folder, that
	// the step was to write; "." for the container as a whole.
	Output string `json:"output"`
	// Command is the command run in the container, for a command.
	Command []string `json:"command,omitempty"`
	// Path is the path in the container, for a copy.
	Path string `json:"path,omitempty"`
	// ExitCode is the command's exit code; absent when it did not run to
	// its end (not started, timed out, container gone).
	ExitCode *int `json:"exitCode,omitempty"`
	// Stderr is the tail (at most 64 KiB) of the command's standard error.
	Stderr string `json:"stderr,omitempty"`
	// Stdout is what a command that could not be started (exit code 126 or
	// 127) printed on standard output, if at most 64 KiB. Docker writes its
	// own "OCI runtime exec failed" message there, so it is moved here and
	// the output file is removed rather than holding the engine's words.
	Stdout string `json:"stdout,omitempty"`
	// Error says what went wrong.
	Error string `json:"error"`
	// Duration is how long the step ran, e.g. "1.204s".
	Duration string `json:"duration,omitempty"`
}

// ReadErrors reads the errors file in dir. No file means no failure: it
// returns nil and no error.
func ReadErrors(dir string) ([]Failure, error) {
	b, err := os.ReadFile(filepath.Join(dir, ErrorsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read errors file: %w", err)
	}
	var fs []Failure
	if err := json.Unmarshal(b, &fs); err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Join(dir, ErrorsFile), err)
	}
	return fs, nil
}

// outcome is what one step left behind.
type outcome struct {
	failures []Failure
	// stderr is a successful command's standard error, for StderrFile.
	stderr string
}

// collect runs steps against container, all at once, writes what they
// produced under dir and what failed to dir/errors.json, and returns an
// error summing up the failures.
func (c *Collector) collect(ctx context.Context, container, dir string, steps []step) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("collect logs from container %q: %w", container, err)
	}
	// A rerun into the same folder must not leave a stale verdict behind.
	for _, name := range []string{ErrorsFile, StderrFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("collect logs from container %q: %w", container, err)
		}
	}

	// Inspect first: it tells whether commands can run at all, and a
	// container that does not exist needs no further calls.
	state, inspectFailure := c.inspect(ctx, container, dir)
	var failures []Failure
	if inspectFailure != nil {
		failures = append(failures, *inspectFailure)
		if state.notFound {
			return finish(container, dir, failures, nil, 1)
		}
	}

	// In a running machine, commands and copies go into one exec (see
	// bundle); the container's own log is read at the same time.
	var bundled []int
	if state.running && slices.ContainsFunc(steps, func(s step) bool { return s.kind == stepExec }) {
		for i, s := range steps {
			if s.kind == stepExec || s.kind == stepCopy {
				bundled = append(bundled, i)
			}
		}
	}
	outcomes := make([]outcome, len(steps))
	var wg sync.WaitGroup
	for i, s := range steps {
		if !slices.Contains(bundled, i) {
			wg.Go(func() { outcomes[i] = c.runStep(ctx, container, dir, s, state) })
		}
	}
	var note string
	total := len(steps) + 1
	if len(bundled) > 0 {
		bsteps := make([]step, len(bundled))
		for j, i := range bundled {
			bsteps[j] = steps[i]
		}
		bo, scriptFailure, why, ok := c.newBundle(dir, bsteps).run(ctx, container)
		note = why
		for j, i := range bundled {
			if ok {
				outcomes[i] = bo[j]
			} else {
				wg.Go(func() { outcomes[i] = c.runStep(ctx, container, dir, steps[i], state) })
			}
		}
		if scriptFailure != nil {
			failures = append(failures, *scriptFailure)
			total++
		}
	}
	wg.Wait()

	var stderrLog bytes.Buffer
	add := func(header, text string) {
		fmt.Fprintf(&stderrLog, "==> %s <==\n%s", header, text)
		if !strings.HasSuffix(text, "\n") {
			stderrLog.WriteByte('\n')
		}
	}
	if note != "" {
		add("collection script", note)
	}
	for i, o := range outcomes {
		failures = append(failures, o.failures...)
		if o.stderr != "" {
			what := strings.Join(steps[i].cmd, " ")
			if steps[i].kind == stepCopy {
				what = "tar of " + steps[i].path
			}
			add(steps[i].output+": "+what, o.stderr)
		}
	}
	return finish(container, dir, failures, stderrLog.Bytes(), total)
}

// finish writes the errors and stderr files and returns the summary error.
func finish(container, dir string, failures []Failure, stderrLog []byte, total int) error {
	var errs []error
	if len(stderrLog) > 0 {
		if err := os.WriteFile(filepath.Join(dir, StderrFile), stderrLog, 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	if len(failures) == 0 {
		if len(errs) > 0 {
			return fmt.Errorf("collect logs from container %q: %w", container, errors.Join(errs...))
		}
		return nil
	}
	if err := writeErrors(dir, failures); err != nil {
		errs = append(errs, err)
	}
	parts := make([]string, 0, len(failures))
	for _, f := range failures {
		parts = append(parts, f.Output+": "+f.Error)
	}
	err := fmt.Errorf("collect logs from container %q: %d of %d steps failed (details in %s): %s",
		container, len(failures), total, filepath.Join(dir, ErrorsFile), strings.Join(parts, "; "))
	return errors.Join(append([]error{err}, errs...)...)
}

func writeErrors(dir string, failures []Failure) error {
	b, err := json.MarshalIndent(failures, "", "  ")
	if err != nil {
		return fmt.Errorf("encode errors file: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ErrorsFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write errors file: %w", err)
	}
	return nil
}

// notStarted records that a target's collection never began, e.g. because
// the overall deadline passed while it waited for its turn.
func notStarted(t Target, cause error) error {
	f := Failure{Output: ".", Error: "not collected: " + cause.Error()}
	var errs []error
	if err := os.MkdirAll(t.Dir, 0o755); err != nil {
		errs = append(errs, err)
	} else if err := writeErrors(t.Dir, []Failure{f}); err != nil {
		errs = append(errs, err)
	}
	err := fmt.Errorf("collect logs from container %q: not started: %w", t.Container, cause)
	return errors.Join(append([]error{err}, errs...)...)
}

// containerState is what the inspect told the other steps.
type containerState struct {
	notFound bool
	// running is false only when the inspect said so; if the inspect
	// itself failed, commands are tried anyway.
	running  bool
	status   string
	exitCode int
}

func (c *Collector) inspect(ctx context.Context, container, dir string) (containerState, *Failure) {
	start := time.Now()
	d, err := bounded(ctx, c.commandTimeout(), func(ctx context.Context) (runtime.ContainerDetails, error) {
		return c.Runtime.InspectContainer(ctx, container)
	})
	if err != nil {
		st := containerState{running: true, notFound: errors.Is(err, runtime.ErrNotFound)}
		return st, &Failure{Output: "inspect.json", Error: describe(ctx, err, c.commandTimeout()), Duration: since(start)}
	}
	st := containerState{running: d.State.Running, status: d.State.Status, exitCode: d.State.ExitCode}
	raw := d.Raw
	var pretty bytes.Buffer
	if json.Indent(&pretty, raw, "", "  ") == nil {
		raw = append(pretty.Bytes(), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "inspect.json"), raw, 0o644); err != nil {
		return st, &Failure{Output: "inspect.json", Error: err.Error(), Duration: since(start)}
	}
	return st, nil
}

// stepTimeout is s's own timeout, or the collector's command timeout.
func (c *Collector) stepTimeout(s step) time.Duration {
	if s.timeout > 0 {
		return s.timeout
	}
	return c.commandTimeout()
}

func (c *Collector) runStep(ctx context.Context, container, dir string, s step, st containerState) outcome {
	timeout := c.stepTimeout(s)
	switch s.kind {
	case stepExec:
		if !st.running {
			return outcome{failures: []Failure{{
				Output: s.output, Command: s.cmd,
				Error: fmt.Sprintf("skipped: container %q is not running (status %s, exit code %d)", container, st.status, st.exitCode),
			}}}
		}
		return c.execStep(ctx, container, dir, s, timeout)
	case stepCopy:
		return c.copyStep(ctx, container, dir, s, timeout)
	case stepLogs:
		return c.logsStep(ctx, container, dir, s, timeout)
	}
	panic(fmt.Sprintf("logs: unknown step kind %d", s.kind))
}

func (c *Collector) execStep(ctx context.Context, container, dir string, s step, timeout time.Duration) outcome {
	start := time.Now()
	out := &lazyFile{path: filepath.Join(dir, s.output)}
	stderr := &tailBuffer{max: 64 << 10}
	var env []string
	if s.goProgram {
		env = goEnv
	}
	res, err := bounded(ctx, timeout, func(ctx context.Context) (runtime.ExecResult, error) {
		// Privileged like upstream's collector, so that extra commands
		// such as dmesg or iptables-save work in an unprivileged container.
		return c.Runtime.Exec(ctx, container, runtime.ExecOptions{Cmd: s.cmd, Env: env, Stdout: out, Stderr: stderr, Privileged: true})
	})
	ok := err == nil && res.ExitCode == 0
	// An empty file from a command that succeeded is an answer ("no
	// entries"); from one that failed it would only mislead.
	closeErr := out.close(ok)
	f := Failure{Output: s.output, Command: s.cmd, Stderr: stderr.String(), Duration: since(start)}
	switch {
	case err != nil:
		f.Error = describe(ctx, err, timeout)
	case res.ExitCode != 0:
		f.exited(res.ExitCode, out)
	case closeErr != nil:
		f.Error = closeErr.Error()
	default:
		return outcome{stderr: stderr.String()}
	}
	return outcome{failures: []Failure{f}}
}

// exited records a command that exited with code (non-zero). For 126 and
// 127, the shell's "cannot execute" and "not found", it keeps what the
// command printed, which says why.
func (f *Failure) exited(code int, out *lazyFile) {
	f.ExitCode = &code
	f.Error = fmt.Sprintf("exited with code %d", code)
	if code == 126 || code == 127 {
		f.Error += " (the command could not be started: missing or not executable)"
		f.Stdout = out.reclaim(64 << 10)
	}
}

func (c *Collector) copyStep(ctx context.Context, container, dir string, s step, timeout time.Duration) outcome {
	start := time.Now()
	skipped, err := bounded(ctx, timeout, func(ctx context.Context) ([]string, error) {
		rc, err := c.Runtime.CopyFrom(ctx, container, s.path)
		if err != nil {
			return nil, err
		}
		// A stalled stream must not outlive the deadline: closing the body
		// unblocks the read in extract.
		stop := context.AfterFunc(ctx, func() { _ = rc.Close() })
		defer stop()
		defer rc.Close()
		skipped, err := extract(rc, dir, s.output)
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		return skipped, err
	})
	if err != nil && s.optional && errors.Is(err, runtime.ErrNotFound) {
		return outcome{}
	}
	var fs []Failure
	if err != nil {
		fs = append(fs, Failure{Output: s.output, Path: s.path, Error: describe(ctx, err, timeout), Duration: since(start)})
	}
	if len(skipped) > 0 {
		fs = append(fs, Failure{Output: s.output, Path: s.path, Duration: since(start),
			Error: fmt.Sprintf("skipped %d tar entries with unsafe names: %s", len(skipped), strings.Join(skipped, ", "))})
	}
	return outcome{failures: fs}
}

func (c *Collector) logsStep(ctx context.Context, container, dir string, s step, timeout time.Duration) outcome {
	start := time.Now()
	stdout := &lazyFile{path: filepath.Join(dir, s.output)}
	stderr := &lazyFile{path: filepath.Join(dir, s.stderrOutput)}
	_, err := bounded(ctx, timeout, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, c.Runtime.Logs(ctx, container, stdout, stderr)
	})
	// Both files exist after a successful read, even if empty, so that a
	// reader can tell "printed nothing" from "not collected".
	err = errors.Join(err, stdout.close(err == nil), stderr.close(err == nil))
	if err != nil {
		return outcome{failures: []Failure{{Output: s.output, Error: describe(ctx, err, timeout), Duration: since(start)}}}
	}
	return outcome{}
}

// bounded runs fn under its own deadline. It returns when fn does, or at
// the latest abandonGrace after the deadline, so that a runtime that ignores
// its context cannot hang the collection; fn's result is then dropped.
func bounded[T any](ctx context.Context, timeout time.Duration, fn func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
	}
	grace := time.NewTimer(abandonGrace)
	defer grace.Stop()
	select {
	case r := <-done:
		return r.v, r.err
	case <-grace.C:
		var zero T
		return zero, fmt.Errorf("engine call did not return within %s of its deadline: %w", abandonGrace, ctx.Err())
	}
}

// describe turns a step's error into the text of its Failure, saying
// plainly when the step's own deadline was what stopped it.
func describe(parent context.Context, err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		if parent.Err() != nil {
			return "collection deadline passed: " + err.Error()
		}
		return fmt.Sprintf("timed out after %s: %s", timeout, err)
	}
	return err.Error()
}

func since(t time.Time) string {
	return time.Since(t).Round(time.Millisecond).String()
}

var errClosed = errors.New("output closed: the step was abandoned")

// lazyFile creates its file on the first write, so that a command that
// failed before printing anything leaves no empty file behind. It is safe
// for concurrent use, and drops writes after close, which matters only when
// a step was abandoned and its engine call still writes.
type lazyFile struct {
	mu     sync.Mutex
	path   string
	f      *os.File
	err    error
	closed bool
	n      int64 // bytes written
}

func (w *lazyFile) open() error {
	if w.f == nil && w.err == nil {
		if err := os.MkdirAll(filepath.Dir(w.path), 0o755); err != nil {
			w.err = err
		} else {
			w.f, w.err = os.Create(w.path)
		}
	}
	return w.err
}

func (w *lazyFile) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, errClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := w.open(); err != nil {
		return 0, err
	}
	n, err := w.f.Write(p)
	w.n += int64(n)
	return n, err
}

// close closes the file; with create, it first creates it empty if nothing
// was written.
func (w *lazyFile) close(create bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if create {
		if err := w.open(); err != nil {
			return err
		}
	}
	if w.f == nil {
		return nil
	}
	return w.f.Close()
}

// reclaim removes the closed file and returns its content if it holds at
// most max bytes; a larger file is left alone and reclaim returns "".
func (w *lazyFile) reclaim(max int64) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil || w.n > max {
		return ""
	}
	b, err := os.ReadFile(w.path)
	if err != nil || os.Remove(w.path) != nil {
		return ""
	}
	return string(b)
}

// tailBuffer keeps the last max bytes written to it. It is safe for
// concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

var _ io.Writer = (*tailBuffer)(nil)

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
