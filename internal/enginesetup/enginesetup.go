// Package enginesetup makes this host's container engine ready for the E2E:
// `capd-e2e engine ensure` (Docker, or the engine at DOCKER_HOST) and
// `capd-e2e engine podman` (rootful Podman's Docker-API service). What
// each setting is for, and what the opt-in changes, is in
// docs/reliability.md ("The engine") and docs/podman.md.
//
// By default it only checks and explains: what is wrong and the exact
// command that would fix it. It changes the host only under the opt-in
// CAPD_E2E_FIX_ENGINE (this project's CI sets it), in strconv.ParseBool's
// grammar, or "replace": then it may also restart a dockerd it did not
// start, found by dockerd's own pid file (by pid, never by name).
//
// Written here rather than taken from a library: it is a handful of host
// files (/proc, /sys, /etc/containers) and Debian's apt, specific to the
// machines this project runs on; the engine itself is asked through the
// harness's runtime (framework/runtime/moby), which tells Podman from
// Docker by the components the engine lists.
package enginesetup

import (
	"bytes"
	"context"
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

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
)

// EnvFix is the opt-in to change the host.
const EnvFix = "CAPD_E2E_FIX_ENGINE"

// Mode is what the opt-in allows.
type Mode struct {
	// Fix allows changing host settings, installing packages and starting
	// daemons.
	Fix bool
	// Replace also allows restarting a running dockerd this harness did
	// not start.
	Replace bool
}

// ParseMode reads EnvFix's value: a boolean as strconv.ParseBool spells
// it, or "replace"; empty is false.
func ParseMode(v string) (Mode, error) {
	switch v {
	case "":
		return Mode{}, nil
	case "replace":
		return Mode{Fix: true, Replace: true}, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return Mode{}, fmt.Errorf("%s=%q: want true, false (strconv.ParseBool: 1, t, 0, f...) or replace", EnvFix, v)
	}
	return Mode{Fix: b}, nil
}

// Files of the daemons this package starts.
const (
	DockerdPidFile = "/run/capd-e2e-dockerd.pid"
	DockerdLog     = "/var/log/capd-e2e-dockerd.log"
	// SystemDockerdPidFile is dockerd's own pid file, for Replace.
	SystemDockerdPidFile = "/var/run/docker.pid"
	defaultSocket        = "unix:///var/run/docker.sock"
)

// Host is this machine, as the checks see it.
type Host struct {
	// Root prefixes every host path; empty is "/". Tests use a folder.
	Root string
	Mode Mode
	// Log gets what is checked, changed or wrong.
	Log io.Writer
	// Engine asks the engine at host ("" for DOCKER_HOST's) for its
	// version; nil: through framework/runtime/moby.
	Engine func(ctx context.Context, host string) (runtime.EngineInfo, error)
	// Command runs a host command (apt-get, dockerd's replacement); nil:
	// os/exec, its output into Log.
	Command func(ctx context.Context, name string, args ...string) error
	// Poll is the wait between checks while a daemon starts or stops;
	// zero: a second.
	Poll time.Duration
}

func (h *Host) path(p string) string { return filepath.Join(h.Root, p) }

func (h *Host) logf(format string, args ...any) {
	fmt.Fprintf(h.Log, "capd-e2e engine: "+format+"\n", args...)
}

func (h *Host) poll() time.Duration {
	if h.Poll == 0 {
		return time.Second
	}
	return h.Poll
}

func (h *Host) engine(ctx context.Context, host string) (runtime.EngineInfo, error) {
	if h.Engine != nil {
		return h.Engine(ctx, host)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rt, err := moby.New(moby.Config{Host: host})
	if err != nil {
		return runtime.EngineInfo{}, err
	}
	defer rt.Close()
	return rt.Info(ctx)
}

func (h *Host) command(ctx context.Context, name string, args ...string) error {
	if h.Command != nil {
		return h.Command(ctx, name, args...)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = h.Log, h.Log
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// thpFile holds the transparent huge pages mode, "[always] madvise never".
const thpFile = "/sys/kernel/mm/transparent_hugepage/enabled"

// selected is the bracketed word of a /sys mode file.
func selected(s string) string {
	if _, after, ok := strings.Cut(s, "["); ok {
		if mode, _, ok := strings.Cut(after, "]"); ok {
			return mode
		}
	}
	return strings.TrimSpace(s)
}

// HugePages sets transparent huge pages to "always" (under the opt-in),
// before anything compiles. The Go runtime advises none, so at Debian's
// default ("madvise") the compilers' heaps use 4 KiB pages, and on a VM of
// this project's kind a cold Go build took 1.6 times the wall time and CPU
// of the same build at "always" (make bench-thp: 151 s against 93 s).
// Without the opt-in, or where the file is not writable, it warns.
func (h *Host) HugePages() {
	b, err := os.ReadFile(h.path(thpFile))
	if err != nil {
		return // no such kernel setting here
	}
	mode := selected(string(b))
	if mode == "always" {
		return
	}
	if h.Mode.Fix {
		if err := os.WriteFile(h.path(thpFile), []byte("always"), 0o644); err == nil {
			h.logf("set transparent huge pages to always (were %s; until reboot): the Go builds take about 0.6 times the time", mode)
			return
		}
	}
	h.logf("warning: transparent huge pages are %q: cold Go builds (make images) take about 1.6 times the time they take at \"always\" on a VM of this project's kind; fix: echo always >%s (or rerun with %s=true)", mode, thpFile, EnvFix)
}

// kind's recommended inotify limits: every kind and CAPD node runs
// containerd and a kubelet, each with inotify instances of its own, and
// with the kernel's default of 128 instances per user a second cluster's
// containerd fails to start its CRI plugin ("failed to create fsnotify
// watcher: too many open files").
var inotify = []struct {
	file string
	want int
}{
	{"/proc/sys/fs/inotify/max_user_instances", 512},
	{"/proc/sys/fs/inotify/max_user_watches", 524288},
}

// Inotify raises the inotify limits to kind's recommendation (under the
// opt-in; until reboot), never lowering one; without it, it warns.
func (h *Host) Inotify() error {
	var low []string
	for _, l := range inotify {
		b, err := os.ReadFile(h.path(l.file))
		if err != nil {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || n >= l.want {
			continue
		}
		name := "fs.inotify." + filepath.Base(l.file)
		if !h.Mode.Fix {
			low = append(low, fmt.Sprintf("%s=%d (want %d)", name, n, l.want))
			continue
		}
		if err := os.WriteFile(h.path(l.file), []byte(strconv.Itoa(l.want)), 0o644); err != nil {
			return fmt.Errorf("raise %s to %d: %w", name, l.want, err)
		}
		h.logf("raised %s from %d to %d (until reboot)", name, n, l.want)
	}
	if len(low) > 0 {
		h.logf("warning: %s: enough for one run, but several clusters at once (GINKGO_NODES>1, concurrent runs) fail with \"too many open files\"; fix: sysctl -w fs.inotify.max_user_instances=512 fs.inotify.max_user_watches=524288 (or rerun with %s=true)",
			strings.Join(low, ", "), EnvFix)
	}
	return nil
}

// capSysResource is CAP_SYS_RESOURCE's bit.
const capSysResource = 24

// hasSysResource reads the capability bounding set of this process.
func (h *Host) hasSysResource() (bool, string, error) {
	b, err := os.ReadFile(h.path("/proc/self/status"))
	if err != nil {
		return false, "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			v = strings.TrimSpace(v)
			set, err := strconv.ParseUint(v, 16, 64)
			if err != nil {
				return false, v, fmt.Errorf("CapBnd %q: %w", v, err)
			}
			return set&(1<<capSysResource) != 0, v, nil
		}
	}
	return false, "", errors.New("/proc/self/status has no CapBnd line")
}

// process is a daemon this package started, or dockerd's own: by its pid
// file, alive and with the command name comm.
func (h *Host) process(pidFile, comm string) (int, bool) {
	b, err := os.ReadFile(h.path(pidFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	got, err := os.ReadFile(h.path(fmt.Sprintf("/proc/%d/comm", pid)))
	if err != nil || strings.TrimSpace(string(got)) != comm {
		return pid, false
	}
	return pid, true
}

// startDaemon starts name args in a session of its own, its output
// appended to logFile and its pid in pidFile, and waits until ready
// answers (true), up to timeout. The daemon outlives this process.
func (h *Host) startDaemon(ctx context.Context, pidFile, logFile string, timeout time.Duration, ready func() bool, name string, args ...string) error {
	if err := os.MkdirAll(filepath.Dir(h.path(logFile)), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(h.path(logFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	// Reaped by init once this process exits; meanwhile, by a goroutine.
	go func() { _ = cmd.Wait() }() // reaping only: the daemon's health is checked through its socket
	if err := os.WriteFile(h.path(pidFile), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for !ready() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s (pid %d) did not answer within %s; its log ends with:\n%s", name, pid, timeout, tail(h.path(logFile), 20))
		}
		select {
		case <-ctx.Done():
		case <-time.After(h.poll()):
		}
	}
	return nil
}

// stop sends SIGTERM to the process pidFile names, if it is alive and
// called comm, and waits up to timeout for that process to end (watched by
// its pid: dockerd removes its own pid file before it is done); then
// removes pidFile if it is still there.
func (h *Host) stop(pidFile, comm string, timeout time.Duration) error {
	pid, ok := h.process(pidFile, comm)
	if !ok {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s (pid %d): %w", comm, pid, err)
	}
	deadline := time.Now().Add(timeout)
	for h.running(pid, comm) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s (pid %d) did not stop within %s", comm, pid, timeout)
		}
		time.Sleep(h.poll())
	}
	if err := os.Remove(h.path(pidFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// running reports whether process pid is called comm and has not ended
// (a zombie has).
func (h *Host) running(pid int, comm string) bool {
	b, err := os.ReadFile(h.path(fmt.Sprintf("/proc/%d/stat", pid)))
	if err != nil {
		return false
	}
	// "<pid> (<comm>) <state> ...": comm may hold spaces and parentheses.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || len(b) < end+3 {
		return false
	}
	return string(b[open+1:end]) == comm && b[end+2] != 'Z'
}

// tail is the last n lines of a file, for an error.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
