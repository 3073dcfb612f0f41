// Package cputime attributes the CPU time of the processes and containers
// a piece of work starts to that work, through its context: the image
// factory reports each plan step's CPU time beside its wall time, so that
// a cold build's CPU can be read per step (what bounds it on a few cores).
//
// A step's goroutines run in the one factory process beside the other
// steps', so their own CPU cannot be told apart; what a step starts can:
// a command's rusage from wait4 (its own and that of every descendant it
// waited for: the go command's compilers and linker), a container's from
// its cgroup. Work without a Meter in its context is not counted.
package cputime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Meter sums CPU time; it is safe for concurrent use.
type Meter struct{ ns atomic.Int64 }

// Add adds d.
func (m *Meter) Add(d time.Duration) {
	if m != nil && d > 0 {
		m.ns.Add(int64(d))
	}
}

// Total returns what was added.
func (m *Meter) Total() time.Duration {
	if m == nil {
		return 0
	}
	return time.Duration(m.ns.Load())
}

type key struct{}

// With returns a context carrying a new Meter, and the Meter.
func With(ctx context.Context) (context.Context, *Meter) {
	m := &Meter{}
	return context.WithValue(ctx, key{}, m), m
}

// From returns ctx's Meter, or nil.
func From(ctx context.Context) *Meter {
	m, _ := ctx.Value(key{}).(*Meter)
	return m
}

// Add adds d to ctx's Meter, if it has one.
func Add(ctx context.Context, d time.Duration) { From(ctx).Add(d) }

// Process returns the user and system CPU time of an exited process and of
// the descendants it waited for; 0 for nil (a command that never started).
func Process(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

// Run runs cmd (exec.Cmd.Run) and adds its CPU time to ctx's Meter, also
// when it failed.
func Run(ctx context.Context, cmd *exec.Cmd) error {
	err := cmd.Run()
	Add(ctx, Process(cmd.ProcessState))
	return err
}

// Self returns this process's own CPU time and that of the children it
// waited for (getrusage RUSAGE_SELF and RUSAGE_CHILDREN).
func Self() (self, children time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		self = tv(ru.Utime) + tv(ru.Stime)
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		children = tv(ru.Utime) + tv(ru.Stime)
	}
	return self, children
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

// CgroupScript prints, run by sh inside a container, the CPU time the
// container's cgroup has used, in nanoseconds: cgroup v1's
// cpuacct.usage, or cgroup v2's cpu.stat usage_usec. Give its output to
// ParseCgroup.
const CgroupScript = `for f in /sys/fs/cgroup/cpuacct/cpuacct.usage /sys/fs/cgroup/cpu,cpuacct/cpuacct.usage; do
  [ -r "$f" ] && { cat "$f"; exit 0; }
done
while read -r k v; do [ "$k" = usage_usec ] && { echo "${v}000"; exit 0; }; done </sys/fs/cgroup/cpu.stat
exit 1`

// ParseCgroup reads CgroupScript's output.
func ParseCgroup(out string) (time.Duration, error) {
	ns, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read a cgroup's CPU time: %q: %w", strings.TrimSpace(out), err)
	}
	return time.Duration(ns), nil
}
