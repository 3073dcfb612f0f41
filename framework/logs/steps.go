package logs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
