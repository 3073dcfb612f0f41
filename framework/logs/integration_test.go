package logs_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/logs"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// engine connects to the engine from the environment. Integration tests
// fail, never skip, when it is missing: CI must not go green without it.
func engine(t *testing.T) *moby.Runtime {
	return runtimetest.Engine(t)
}

// file is one file planted in a container.
type file struct {
	path string
	mode int64
	body string
}

// start runs the test image as a container of cluster with role, plants
// files in it, and removes it when the test ends.
func start(t *testing.T, r *moby.Runtime, runID, name, cluster, role string, files ...file) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ref, err := runtimetest.EnsureImage(ctx, r)
	if err != nil {
		t.Fatalf("test image: %v", err)
	}
	id, err := r.RunContainer(ctx, runtime.ContainerSpec{
		Name:  name,
		Image: ref,
		Labels: runtime.RunLabels(runID, "logs-integration-test", map[string]string{
			runtime.LabelCluster: cluster,
			runtime.LabelRole:    role,
		}),
		AutoRemove: false, // a killed container must stay to be collected
	})
	if err != nil {
		t.Fatalf("run container %q: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.RemoveContainer(ctx, id); err != nil {
			t.Errorf("remove container %q: %v", name, err)
		}
	})
	if len(files) == 0 {
		return
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// Parent directories first, shallow before deep, so that the engine
	// creates them.
	var dirs []string
	for _, f := range files {
		for d := filepath.Dir(strings.TrimPrefix(f.path, "/")); d != "."; d = filepath.Dir(d) {
			if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(a, "/") - strings.Count(b, "/") })
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		mode := f.mode
		if mode == 0 {
			mode = 0o644
		}
		h := &tar.Header{Name: strings.TrimPrefix(f.path, "/"), Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(f.body))}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.CopyTo(ctx, name, "/", &buf); err != nil {
		t.Fatalf("plant files in %q: %v", name, err)
	}
}

const journalctlScript = `#!/bin/sh
case "$*" in
*" -k"*) echo "kernel: booted" ;;
*"-u kubelet.service"*) echo "kubelet: started" ;;
*"-u containerd.service"*) echo "containerd: serving"; echo "containerd: a warning" >&2 ;;
*) echo "journal: line 1"; echo "journal: line 2" ;;
esac
`

// hangingJournalctlScript is journalctlScript whose full journal prints a
// line and then hangs, as a huge journal would.
var hangingJournalctlScript = strings.Replace(journalctlScript,
	`*) echo "journal: line 1"; echo "journal: line 2" ;;`,
	`*) echo "journal: partial"; exec sleep 60 ;;`, 1)

// startHangingJournal starts a worker of a new cluster whose full journal
// hangs (hangingJournalctlScript) and returns its name.
func startHangingJournal(t *testing.T, r *moby.Runtime) string {
	t.Helper()
	runID := runtime.NewRunID()
	cluster := "capd-e2e-it-" + runID
	machine := cluster + "-md-0"
	files := machineFiles()
	files[0].body = hangingJournalctlScript
	start(t, r, runID, machine, cluster, "worker", files...)
	return machine
}

// crictlScript also tells on its standard error the Go settings it ran
// with (goEnv).
const crictlScript = `#!/bin/sh
echo "crictl env: GOGC=${GOGC-unset} GOMEMLIMIT=${GOMEMLIMIT-unset}" >&2
case "$1" in
info) echo '{"status":{"conditions":[]}}' ;;
ps) echo "CONTAINER  IMAGE  STATE"; echo "abc123  pause  Running" ;;
*) echo "crictl: unknown command $1" >&2; exit 1 ;;
esac
`

// machineFiles is a machine-like layout; kubelet is left out on purpose.
func machineFiles() []file {
	return []file{
		{path: "/usr/local/bin/journalctl", mode: 0o755, body: journalctlScript},
		{path: "/usr/local/bin/crictl", mode: 0o755, body: crictlScript},
		{path: "/var/log/pods/kube-system_etcd-n1_uid1/etcd/0.log", body: "etcd: ready\n"},
		{path: "/var/log/pods/kube-system_kube-apiserver-n1_uid2/kube-apiserver/0.log", body: "apiserver: serving\n"},
		{path: "/run/cluster-api/capd.bootstrap.started", body: "started\n"},
		{path: "/run/cluster-api/bootstrap-success.complete", body: "success\n"},
		{path: "/var/log/cloud-init-output.log", body: "Cloud-init finished\n"},
	}
}

// waitForStdout waits until the test image's init has printed its line.
func waitForStdout(t *testing.T, ctx context.Context, r *moby.Runtime, name string) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		var out bytes.Buffer
		if err := r.Logs(ctx, name, &out, nil); err != nil {
			t.Fatalf("logs of %q: %v", name, err)
		}
		if strings.Contains(out.String(), runtimetest.StdoutLine) {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("%q printed nothing: %v", name, ctx.Err())
		}
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("read: %v", err)
	}
	return string(b)
}

// assertClean fails if any file under dir holds stream framing (the 8-byte
// headers that start with 0x01 or 0x02 and carry NULs) or other control
// bytes.
func assertClean(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, c := range b {
			if c < 0x09 || (c > 0x0d && c < 0x20) {
				t.Errorf("%s holds control byte %#x: %q", p, c, b)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestIntegrationCollectCluster(t *testing.T) {
	r := engine(t)
	runID := runtime.NewRunID()
	cluster := "capd-e2e-it-" + runID
	machine := cluster + "-md-0"
	lb := logs.LoadBalancerName(cluster)
	start(t, r, runID, machine, cluster, "worker", machineFiles()...)
	start(t, r, runID, lb, cluster, "external-load-balancer",
		file{path: "/usr/local/etc/haproxy/haproxy.cfg", body: "frontend control-plane\n  bind *:6443\n"})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The containers' own logs are compared below: let their init print.
	waitForStdout(t, ctx, r, machine)
	waitForStdout(t, ctx, r, lb)
	c := &logs.Collector{
		Runtime:        r,
		CommandTimeout: 20 * time.Second,
		AdditionalLogs: []logs.Command{
			{File: "hostname.txt", Cmd: []string{"cat", "/etc/hostname"}},
			{File: "env.txt", Cmd: []string{"sh", "-c", `echo "GOGC=${GOGC-unset}"`}},
		},
	}
	dir := t.TempDir()
	begin := time.Now()
	err := c.CollectCluster(ctx, cluster, dir)
	t.Logf("collected in %s", time.Since(begin))
	if err == nil || !strings.Contains(err.Error(), "kubelet-version.txt") {
		t.Errorf("error = %v, want the missing kubelet reported", err)
	}

	m := filepath.Join(dir, "machines", machine)
	for name, want := range map[string]string{
		"journal.log":         "journal: line 1\njournal: line 2\n",
		"kern.log":            "kernel: booted\n",
		"kubelet.log":         "kubelet: started\n",
		"containerd.log":      "containerd: serving\n",
		"containerd-info.txt": `{"status":{"conditions":[]}}` + "\n",
		"crictl-ps.txt":       "CONTAINER  IMAGE  STATE\nabc123  pause  Running\n",
		"pods/kube-system_etcd-n1_uid1/etcd/0.log":                     "etcd: ready\n",
		"pods/kube-system_kube-apiserver-n1_uid2/kube-apiserver/0.log": "apiserver: serving\n",
		"bootstrap/capd.bootstrap.started":                             "started\n",
		"bootstrap/bootstrap-success.complete":                         "success\n",
		"cloud-init-output.log":                                        "Cloud-init finished\n",
		"container-stdout.log":                                         runtimetest.StdoutLine + "\n",
		"container-stderr.log":                                         runtimetest.StderrLine + "\n",
	} {
		if got := read(t, filepath.Join(m, name)); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if got := strings.TrimSpace(read(t, filepath.Join(m, "hostname.txt"))); got == "" {
		t.Error("hostname.txt is empty")
	}
	stderrLog := read(t, filepath.Join(m, logs.StderrFile))
	if !strings.Contains(stderrLog, "containerd.log") || !strings.Contains(stderrLog, "containerd: a warning") {
		t.Errorf("%s = %q, want containerd's warning under its header", logs.StderrFile, stderrLog)
	}
	// crictl, a Go program, ran with the collector's Go settings; a
	// command of the caller's kept the machine's environment.
	if want := "crictl env: GOGC=off GOMEMLIMIT=256MiB"; strings.Count(stderrLog, want) != 2 {
		t.Errorf("%s = %q, want %q under both crictl commands", logs.StderrFile, stderrLog, want)
	}
	if got := read(t, filepath.Join(m, "env.txt")); got != "GOGC=unset\n" {
		t.Errorf("env.txt = %q: an additional command ran with the Go settings", got)
	}
	if strings.Contains(stderrLog, "collection script") {
		t.Errorf("%s = %q: the collection script did not run cleanly in busybox", logs.StderrFile, stderrLog)
	}
	var inspect struct{ Name string }
	if err := json.Unmarshal([]byte(read(t, filepath.Join(m, "inspect.json"))), &inspect); err != nil || inspect.Name != "/"+machine {
		t.Errorf("inspect.json: name %q, %v", inspect.Name, err)
	}

	t.Logf("%s:\n%s", logs.ErrorsFile, read(t, filepath.Join(m, logs.ErrorsFile)))
	// The one thing missing is the one thing in the errors file.
	fs, err := logs.ReadErrors(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Output != "kubelet-version.txt" || fs[0].ExitCode == nil || *fs[0].ExitCode == 0 ||
		!strings.Contains(fs[0].Stdout+fs[0].Stderr, "kubelet") {
		t.Errorf("errors file = %+v, want one entry for kubelet-version.txt with its exit code and the reason", fs)
	}
	if _, err := os.Stat(filepath.Join(m, "kubelet-version.txt")); err == nil {
		t.Errorf("kubelet-version.txt exists: %q", read(t, filepath.Join(m, "kubelet-version.txt")))
	}

	l := filepath.Join(dir, "infrastructure", lb)
	if got := read(t, filepath.Join(l, "haproxy.cfg")); got != "frontend control-plane\n  bind *:6443\n" {
		t.Errorf("haproxy.cfg = %q", got)
	}
	if got := read(t, filepath.Join(l, "container-stdout.log")); got != runtimetest.StdoutLine+"\n" {
		t.Errorf("load balancer container-stdout.log = %q", got)
	}
	if fs, _ := logs.ReadErrors(l); len(fs) != 0 {
		t.Errorf("load balancer errors: %+v", fs)
	}
	assertClean(t, dir)
}

// A machine that dies while its logs are collected leaves what was
// collected plus error entries, and the collection ends soon after. The
// copies arrive while the commands still run; the commands' output is
// staged in the machine and dies with it, so the hung journal is listed as
// not received.
func TestIntegrationContainerKilledMidCollection(t *testing.T) {
	r := engine(t)
	machine := startHangingJournal(t, r)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const commandTimeout = 30 * time.Second
	c := &logs.Collector{Runtime: r, CommandTimeout: commandTimeout}
	dir := t.TempDir()
	done := make(chan error, 1)
	begin := time.Now()
	go func() { done <- c.CollectMachine(ctx, machine, dir) }()

	// Kill the machine once the copies have arrived.
	pods := filepath.Join(dir, "pods/kube-system_etcd-n1_uid1/etcd/0.log")
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for b, _ := os.ReadFile(pods); !strings.Contains(string(b), "ready"); b, _ = os.ReadFile(pods) {
		select {
		case <-tick.C:
		case err := <-done:
			t.Fatalf("collection ended before the kill: %v", err)
		case <-ctx.Done():
			t.Fatal("the copies never arrived")
		}
	}
	if err := r.Kill(ctx, machine, "SIGKILL"); err != nil {
		t.Fatalf("kill: %v", err)
	}
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatal("collection hung after the container was killed")
	}
	elapsed := time.Since(begin)
	t.Logf("collection ended %s after start: %v", elapsed, err)
	if elapsed >= commandTimeout {
		t.Errorf("collection took %s: it waited for the command deadline instead of noticing the dead container", elapsed)
	}
	if err == nil {
		t.Error("want an error from a collection cut short")
	}
	fs, rerr := logs.ReadErrors(dir)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var journalFailed bool
	for _, f := range fs {
		journalFailed = journalFailed || f.Output == "journal.log"
	}
	if !journalFailed {
		t.Errorf("errors file has no entry for the interrupted journal.log: %+v", fs)
	}
	if got := read(t, pods); got != "etcd: ready\n" {
		t.Errorf("pods log = %q", got)
	}
	assertClean(t, dir)
}

// After the kill, a second collection of the dead machine still copies
// files and its own log, and lists the commands as skipped.
func TestIntegrationStoppedMachine(t *testing.T) {
	r := engine(t)
	runID := runtime.NewRunID()
	cluster := "capd-e2e-it-" + runID
	machine := cluster + "-cp-0"
	start(t, r, runID, machine, cluster, "control-plane", machineFiles()...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.Kill(ctx, machine, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(ctx, machine); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	err := (&logs.Collector{Runtime: r, CommandTimeout: 20 * time.Second}).CollectMachine(ctx, machine, dir)
	if err == nil || !strings.Contains(err.Error(), "7 of 12 steps failed") {
		t.Errorf("error = %v, want the 7 commands skipped", err)
	}
	if got := read(t, filepath.Join(dir, "bootstrap/bootstrap-success.complete")); got != "success\n" {
		t.Errorf("bootstrap sentinel = %q", got)
	}
	if got := read(t, filepath.Join(dir, "container-stdout.log")); got != runtimetest.StdoutLine+"\n" {
		t.Errorf("container-stdout.log = %q", got)
	}
	assertClean(t, dir)
}

// A command that hangs is stopped at its deadline by timeout(1) (the test
// image's is busybox's): the collection ends soon after, what the command
// printed is kept, the commands after it in its lane still run, and it does
// not outlive the collection in the machine.
func TestIntegrationHungCommandIsStopped(t *testing.T) {
	r := engine(t)
	machine := startHangingJournal(t, r)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const commandTimeout = 2 * time.Second
	dir := t.TempDir()
	begin := time.Now()
	err := (&logs.Collector{Runtime: r, CommandTimeout: commandTimeout}).CollectMachine(ctx, machine, dir)
	elapsed := time.Since(begin)
	t.Logf("collection took %s: %v", elapsed, err)
	// The deadline and the rest of the lane.
	if elapsed > 10*time.Second {
		t.Errorf("collection took %s, want the hung command stopped after %s", elapsed, commandTimeout)
	}
	if err == nil {
		t.Error("want an error for the stopped command")
	}
	fs, rerr := logs.ReadErrors(dir)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var journal *logs.Failure
	for i := range fs {
		if fs[i].Output == "journal.log" {
			journal = &fs[i]
		}
	}
	if journal == nil || journal.Error != "timed out after 2s" {
		t.Errorf("journal.log failure = %+v, want timed out after 2s (all: %+v)", journal, fs)
	}
	if got := read(t, filepath.Join(dir, "journal.log")); got != "journal: partial\n" {
		t.Errorf("journal.log = %q, want what it printed before it hung", got)
	}
	// kubelet.log comes after journal.log in the same lane.
	if got := read(t, filepath.Join(dir, "kubelet.log")); got != "kubelet: started\n" {
		t.Errorf("kubelet.log = %q", got)
	}
	var procs bytes.Buffer
	if _, err := r.Exec(ctx, machine, runtime.ExecOptions{
		Cmd:    []string{"sh", "-c", `for f in /proc/[0-9]*/cmdline; do cat "$f"; echo; done`},
		Stdout: &procs,
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(procs.String(), "sleep\x0060") {
		t.Errorf("the hung command still runs in the machine:\n%q", procs.String())
	}
}
