package logs

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Running one step in a container, bounded by its timeout: exec, copy,
// the container's own log.

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
		stop := context.AfterFunc(ctx, func() { _ = rc.Close() }) // unblocking the read; its error is the read's
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
