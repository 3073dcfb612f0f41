package enginesetup

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

func TestParseMode(t *testing.T) {
	for v, want := range map[string]Mode{"": {}, "false": {}, "0": {}, "true": {Fix: true}, "T": {Fix: true}, "replace": {Fix: true, Replace: true}} {
		got, err := ParseMode(v)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", v, got, err, want)
		}
	}
	for _, bad := range []string{"yes", "Replace", "on"} {
		if _, err := ParseMode(bad); err == nil || !strings.Contains(err.Error(), EnvFix+`="`+bad+`"`) {
			t.Errorf("%q: %v, want an error naming it", bad, err)
		}
	}
}

// host is a Host on a folder holding the host files given.
func host(t *testing.T, mode Mode, files map[string]string) (*Host, *bytes.Buffer) {
	t.Helper()
	root := t.TempDir()
	for f, content := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	return &Host{Root: root, Mode: mode, Log: &log, Poll: 10 * time.Millisecond}, &log
}

func read(t *testing.T, h *Host, f string) string {
	t.Helper()
	b, err := os.ReadFile(h.path(f))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestHugePages(t *testing.T) {
	h, log := host(t, Mode{}, map[string]string{thpFile: "always [madvise] never\n"})
	h.HugePages()
	if got := read(t, h, thpFile); got != "always [madvise] never" || !strings.Contains(log.String(), `transparent huge pages are "madvise"`) {
		t.Errorf("without the opt-in: file %q, log %q; want it unchanged and a warning", got, log)
	}
	h.Mode.Fix = true
	log.Reset()
	h.HugePages()
	if got := read(t, h, thpFile); got != "always" || !strings.Contains(log.String(), "set transparent huge pages to always (were madvise") {
		t.Errorf("with the opt-in: file %q, log %q", got, log)
	}
}

func TestInotify(t *testing.T) {
	files := map[string]string{inotify[0].file: "128\n", inotify[1].file: "1048576\n"}
	h, log := host(t, Mode{}, files)
	if err := h.Inotify(); err != nil {
		t.Fatal(err)
	}
	if read(t, h, inotify[0].file) != "128" || !strings.Contains(log.String(), "fs.inotify.max_user_instances=128 (want 512)") || strings.Contains(log.String(), "max_user_watches=1048576") {
		t.Errorf("without the opt-in: log %q", log)
	}
	h.Mode.Fix = true
	if err := h.Inotify(); err != nil {
		t.Fatal(err)
	}
	// Raised to kind's value; a higher one is never lowered.
	if a, b := read(t, h, inotify[0].file), read(t, h, inotify[1].file); a != "512" || b != "1048576" {
		t.Errorf("with the opt-in: instances %s, watches %s; want 512 and 1048576", a, b)
	}
}

func TestHasSysResource(t *testing.T) {
	for capbnd, want := range map[string]bool{"000001ffffffffff": true, "000001fffeffffff": false, "00000000a80425fb": false} {
		h, _ := host(t, Mode{}, map[string]string{"/proc/self/status": "Name:\tx\nCapBnd:\t" + capbnd + "\nCapAmb:\t0\n"})
		got, set, err := h.hasSysResource()
		if err != nil || got != want || set != capbnd {
			t.Errorf("CapBnd %s: %v, %q, %v; want %v", capbnd, got, set, err, want)
		}
	}
	h, _ := host(t, Mode{}, map[string]string{"/proc/self/status": "Name:\tx\n"})
	if _, _, err := h.hasSysResource(); err == nil {
		t.Error("no CapBnd line: no error")
	}
}

func engineAt(info runtime.EngineInfo, err error) func(context.Context, string) (runtime.EngineInfo, error) {
	return func(context.Context, string) (runtime.EngineInfo, error) { return info, err }
}

func TestEnsureEngine(t *testing.T) {
	lacking := map[string]string{"/proc/self/status": "CapBnd:\t000001fffeffffff\n"}
	ctx := context.Background()

	h, _ := host(t, Mode{}, lacking)
	h.Engine = engineAt(runtime.EngineInfo{Version: "26.1.5+dfsg1"}, nil)
	if _, err := h.EnsureEngine(ctx, true); err != nil {
		t.Errorf("Docker 26: %v", err)
	}

	h, log := host(t, Mode{}, lacking)
	h.Engine = engineAt(runtime.EngineInfo{Version: "20.10.24+dfsg1"}, nil)
	h.Command = func(context.Context, string, ...string) error {
		t.Error("ran a command without the opt-in")
		return nil
	}
	_, err := h.EnsureEngine(ctx, true)
	if err == nil || !strings.Contains(err.Error(), "apt-get install -t trixie docker.io") || !strings.Contains(log.String(), "lacks CAP_SYS_RESOURCE") {
		t.Errorf("Docker 20 without CAP_SYS_RESOURCE: %v; log %q", err, log)
	}
	// Without --privileged-nesting the old engine is enough.
	if _, err := h.EnsureEngine(ctx, false); err != nil {
		t.Errorf("Docker 20, no nesting: %v", err)
	}

	// Under the opt-in, a dockerd capd-e2e did not start is not killed.
	h, _ = host(t, Mode{Fix: true}, map[string]string{"/proc/self/status": "CapBnd:\t000001fffeffffff\n", "/etc/debian_version": "12.8\n"})
	h.Engine = engineAt(runtime.EngineInfo{Version: "20.10.24+dfsg1"}, nil)
	h.Command = func(context.Context, string, ...string) error {
		t.Error("installed with a dockerd it may not restart")
		return nil
	}
	if _, err := h.EnsureEngine(ctx, true); err == nil || !strings.Contains(err.Error(), "refusing to kill it") {
		t.Errorf("someone else's dockerd: %v", err)
	}

	h, _ = host(t, Mode{}, nil)
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
	h.Engine = engineAt(runtime.EngineInfo{}, errors.New("connection refused"))
	if _, err := h.EnsureEngine(ctx, false); err == nil || !strings.Contains(err.Error(), "no engine answers at DOCKER_HOST=tcp://127.0.0.1:1 (connection refused)") {
		t.Errorf("no engine at DOCKER_HOST: %v", err)
	}
}

func TestCheckPodman(t *testing.T) {
	h, _ := host(t, Mode{}, nil)
	changed, err := h.CheckPodman()
	if changed || err == nil || !strings.Contains(err.Error(), "/lib/modules does not exist") || !strings.Contains(err.Error(), "pids_limit = 0") {
		t.Errorf("without the opt-in: %v, %v; want both settings named", changed, err)
	}
	h.Mode.Fix = true
	if changed, err := h.CheckPodman(); !changed || err != nil {
		t.Errorf("with the opt-in: %v, %v", changed, err)
	}
	if got := read(t, h, PodmanConf); !strings.Contains(got, `cgroup_manager = "cgroupfs"`) {
		t.Errorf("%s: %q", PodmanConf, got)
	}
	if fi, err := os.Stat(h.path("/lib/modules")); err != nil || !fi.IsDir() {
		t.Errorf("/lib/modules: %v", err)
	}
	h.Mode.Fix = false
	if changed, err := h.CheckPodman(); changed || err != nil {
		t.Errorf("once written: %v, %v; want nothing to do", changed, err)
	}
}

func TestPodmanSettings(t *testing.T) {
	if got := PodmanSettings(524288); !strings.Contains(got, `"nofile=524288:524288", "nproc=4096:4096"`) {
		t.Errorf("hard limit 524288: %s", got)
	}
	if got := PodmanSettings(^uint64(0)); !strings.Contains(got, `"nofile=1048576:1048576"`) {
		t.Errorf("unlimited: %s", got)
	}
}

// A daemon is started in a session of its own, found by its pid file and
// name, and stopped by pid; a pid file naming another program's process
// stops nothing.
func TestDaemon(t *testing.T) {
	h, _ := host(t, Mode{}, nil)
	h.Root = "" // real /proc; the pid and log files in a folder
	dir := t.TempDir()
	pidFile, logFile := filepath.Join(dir, "sleep.pid"), filepath.Join(dir, "sleep.log")
	ready := 0
	if err := h.startDaemon(context.Background(), pidFile, logFile, 5*time.Second, func() bool { ready++; return ready > 2 }, "sleep", "60"); err != nil {
		t.Fatal(err)
	}
	pid, ok := h.process(pidFile, "sleep")
	if !ok {
		t.Fatalf("the daemon (pid %d) is not found", pid)
	}
	if err := h.stop(pidFile, "cat", time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.process(pidFile, "sleep"); !ok {
		t.Fatal("stopped a process by another name")
	}
	if err := h.stop(pidFile, "sleep", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pidFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file left: %v", err)
	}
	// One that never answers is an error naming it, with its log.
	err := h.startDaemon(context.Background(), pidFile, logFile, 50*time.Millisecond, func() bool { return false }, "sh", "-c", "echo started; exec sleep 60")
	if err == nil || !strings.Contains(err.Error(), "did not answer within 50ms") {
		t.Errorf("a daemon that never answers: %v", err)
	}
	_ = h.stop(pidFile, "sleep", 5*time.Second)

	// One that removes its own pid file when it stops, before it is done,
	// as dockerd does, is waited for by its pid and stopped without an
	// error.
	own := filepath.Join(dir, "own.pid")
	script := "trap 'rm -f " + own + "; sleep 0.5; exit 0' TERM; echo trapped; while :; do sleep 0.1; done"
	trapped := func() bool { b, _ := os.ReadFile(logFile); return strings.Contains(string(b), "trapped") }
	if err := h.startDaemon(context.Background(), own, logFile, 5*time.Second, trapped, "sh", "-c", script); err != nil {
		t.Fatal(err)
	}
	if pid, ok = h.process(own, "sh"); !ok {
		t.Fatalf("the daemon (pid %d) is not found", pid)
	}
	if err := h.stop(own, "sh", 5*time.Second); err != nil {
		t.Errorf("stop a daemon that removes its pid file: %v", err)
	}
	if h.running(pid, "sh") {
		t.Errorf("stop returned while the daemon (pid %d) still ran", pid)
	}
}
