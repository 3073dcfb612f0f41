// Package bench holds what capd-e2e's benchmarks share: where results go,
// the host's CPU and memory over a run, medians and tables, the commands a
// side runs, and the readers of the logs and reports those commands write.
//
// The benchmarks are Go benchmarks behind the build tag "bench" in this
// folder (bench_*_test.go), one per `make bench-*` target of bench/bench.mk,
// each measuring both sides of its question in one run and writing
// $ARTIFACTS/bench-<name>/results.md; docs/performance.md holds what they
// measured. They are not in `make test`: they take minutes to hours, and
// some change the host (the engine's images, transparent huge pages). The
// readers in this file are, with their unit tests.
package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/summary"
	"github.com/capd-e2e/capd-e2e/internal/hoststat"
)

// Median returns the median of xs, or 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Table is a Markdown table.
type Table struct {
	Header []string
	Rows   [][]string
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// String renders the table, a line per row.
func (t Table) String() string {
	var b strings.Builder
	line := func(cells []string) { fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | ")) }
	line(t.Header)
	sep := make([]string, len(t.Header))
	for i := range sep {
		sep[i] = "---"
	}
	fmt.Fprintf(&b, "|%s|\n", strings.Join(sep, "|"))
	for _, r := range t.Rows {
		line(r)
	}
	return b.String()
}

// MinSec formats whole seconds as "XmYYs".
func MinSec(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}

// GiB formats bytes as GiB with one decimal.
func GiB(n int64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }

// Host describes the machine for a results header: CPUs and memory.
func Host() string {
	mem := "memory unknown"
	if n, err := hoststat.MemTotal(); err == nil {
		mem = GiB(n)
	}
	return fmt.Sprintf("%s, %d CPUs, %s", time.Now().UTC().Format(time.RFC3339), numCPU(), mem)
}

// numCPU is the CPUs this process may run on, as nproc counts them.
func numCPU() int { return goruntime.NumCPU() }

// Usage is what the host did over a span: wall time, busy CPU seconds of
// the whole machine (every process and container's), the CPUs busy on
// average, and the least memory available when sampled.
type Usage struct {
	Wall         time.Duration
	CPUSeconds   float64
	CPUsBusy     float64
	CPUs         int
	MinAvailable int64
}

// Meter measures a span of the host's work: Start it, then Stop.
type Meter struct {
	start time.Time
	cpu0  hoststat.CPUTicks
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	min   int64
}

// StartMeter starts measuring, sampling the memory available every
// interval.
func StartMeter(interval time.Duration) (*Meter, error) {
	cpu0, err := hoststat.CPU()
	if err != nil {
		return nil, err
	}
	m := &Meter{start: time.Now(), cpu0: cpu0, stop: make(chan struct{}), done: make(chan struct{})}
	m.sample()
	go func() {
		defer close(m.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				m.sample()
			}
		}
	}()
	return m, nil
}

func (m *Meter) sample() {
	n, err := hoststat.MemAvailable()
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.min == 0 || n < m.min {
		m.min = n
	}
}

// Stop ends the span and returns its usage.
func (m *Meter) Stop() (Usage, error) {
	close(m.stop)
	<-m.done
	m.sample()
	cpu1, err := hoststat.CPU()
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Wall: time.Since(m.start), CPUs: numCPU(), MinAvailable: m.min}
	u.CPUSeconds, u.CPUsBusy = cpu1.Since(m.cpu0, u.CPUs)
	return u, nil
}

// Cmd is a command a benchmark side runs: in Dir, with Env added to this
// process's, its output into Log (and nowhere else).
type Cmd struct {
	Dir  string
	Env  []string
	Log  string
	Args []string
}

// Run runs c in a process group of its own. When ctx ends, or this
// process gets SIGINT or SIGTERM, the group gets SIGTERM (the harness's
// supervisor then cleans up) and, after grace, is killed: a terminal's
// Ctrl-C reaches only the foreground group, which the command is not in.
// A second signal acts as it would without Run. The error names the
// command and its log.
func (c Cmd) Run(ctx context.Context, grace time.Duration) error {
	if len(c.Args) == 0 {
		return errors.New("bench: a command without arguments")
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	log, err := os.Create(c.Log)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = c.Dir, log, log
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = grace
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w (log: %s)", strings.Join(c.Args, " "), err, c.Log)
	}
	return nil
}

// ExitCode returns the exit code an error of Cmd.Run carries: 0 for none,
// -1 when the command did not exit by itself.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// Result says "passed" or "failed (exit code)".
func Result(err error) string {
	if err == nil {
		return "passed"
	}
	return fmt.Sprintf("failed (%d)", ExitCode(err))
}

// Step is one image the factory built, as `capd-e2e images` logs it:
// "[i/n] ID: built in W (cpu C)"; CPU is empty where not logged.
type Step struct{ ID, Wall, CPU string }

var builtLine = regexp.MustCompile(`^\[[0-9]+/[0-9]+\] (.*): built in (\S+)(?: \(cpu ([^)]*)\))?$`)

// BuiltSteps reads the steps a log of `capd-e2e images` (or of a run that
// provided images) says it built.
func BuiltSteps(r io.Reader) ([]Step, error) {
	var steps []Step
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		if m := builtLine.FindStringSubmatch(sc.Text()); m != nil {
			steps = append(steps, Step{ID: m[1], Wall: m[2], CPU: m[3]})
		}
	}
	return steps, sc.Err()
}

// ReadFile returns a file's text, or "" when it cannot be read.
func ReadFile(path string) string {
	data, _ := os.ReadFile(path) // a missing log reads as empty: its numbers show as "-"
	return string(data)
}

// Glob is filepath.Glob for patterns known to be well formed.
func Glob(pattern string) []string {
	m, err := filepath.Glob(pattern)
	if err != nil {
		panic(err)
	}
	return m
}

// SpecSpan reads the summary.json of every cluster under a run's
// artifacts (clusters/*/summary.json) and returns, for the specs named
// spec, how many passed, how many ran, and the wall time from the first
// one's start to the last one's end.
func SpecSpan(artifacts, spec string) (passed, ran int, span time.Duration, err error) {
	var first, last time.Time
	for _, f := range Glob(filepath.Join(artifacts, "clusters", "*", summary.JSONFile)) {
		data, err := os.ReadFile(f)
		if err != nil {
			return 0, 0, 0, err
		}
		var s summary.Summary
		if err := json.Unmarshal(data, &s); err != nil {
			return 0, 0, 0, fmt.Errorf("%s: %w", f, err)
		}
		if s.Spec != spec {
			continue
		}
		ran++
		if s.Result == summary.ResultPassed {
			passed++
		}
		if end := s.Start.Add(s.Duration); last.IsZero() || end.After(last) {
			last = end
		}
		if first.IsZero() || s.Start.Before(first) {
			first = s.Start
		}
	}
	return passed, ran, last.Sub(first), nil
}
