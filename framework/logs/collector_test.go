package logs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/fake"
)

// reply scripts one command's outcome in the fake.
type reply struct {
	stdout, stderr string
	code           int
	err            error
	// block makes the command hang until its context ends.
	block bool
}

// script maps a command line to its reply; anything else is "not found",
// as a shell would say.
type script map[string]reply

func (s script) exec(ctx context.Context, _ string, opts runtime.ExecOptions) (runtime.ExecResult, error) {
	r, ok := s[strings.Join(opts.Cmd, " ")]
	if !ok {
		fmt.Fprintf(opts.Stderr, "exec: %q: executable file not found in $PATH\n", opts.Cmd[0])
		return runtime.ExecResult{ExitCode: 127}, nil
	}
	_, _ = opts.Stdout.Write([]byte(r.stdout))
	_, _ = opts.Stderr.Write([]byte(r.stderr))
	if r.block {
		<-ctx.Done()
		return runtime.ExecResult{}, fmt.Errorf("exec %q: %w", opts.Cmd, ctx.Err())
	}
	return runtime.ExecResult{ExitCode: r.code}, r.err
}

const jc = "journalctl --no-pager --output=short-precise"

// healthy is a machine where every default command works.
func healthy() script {
	return script{
		jc:                                {stdout: "journal line 1\njournal line 2\n"},
		jc + " -k":                        {stdout: "kernel: hello\n"},
		jc + " -u kubelet.service":        {stdout: "kubelet started\n"},
		jc + " -u containerd.service":     {stdout: "containerd started\n"},
		"kubelet --version":               {stdout: "Kubernetes v1.36.3\n"},
		"crictl info":                     {stdout: `{"status":{}}` + "\n", stderr: "WARN: deprecated endpoint\n"},
		"crictl ps -a":                    {stdout: "CONTAINER  IMAGE  STATE\n"},
		"sh -c echo extra; echo oops >&2": {stdout: "extra\n", stderr: "oops\n"},
	}
}

func addMachine(f *fake.Runtime, name string) {
	f.AddContainer(fake.Container{
		ContainerDetails: runtime.ContainerDetails{
			Name:   name,
			Image:  "kindest/node:v1.36.3",
			Labels: map[string]string{runtime.LabelCluster: "c1", runtime.LabelRole: "worker"},
			Raw:    []byte(`{"Id":"` + name + `","State":{"Running":true}}`),
		},
		Files: map[string][]byte{
			"/var/log/pods/kube-system_etcd-x_123/etcd/0.log":                     []byte("etcd log\n"),
			"/var/log/pods/kube-system_kube-apiserver-x_456/kube-apiserver/0.log": []byte("apiserver log\n"),
			"/run/cluster-api/bootstrap-success.complete":                         []byte("success\n"),
			"/run/cluster-api/capd.bootstrap.started":                             []byte("started\n"),
			"/etc/hostname": []byte(name + "\n"),
		},
		Stdout: []byte("systemd booting\n"),
		Stderr: []byte("systemd warning\n"),
	})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read output: %v", err)
	}
	return string(b)
}

// healthyFiles are the files collected from the machine healthy()
// scripts, with their content.
func healthyFiles() map[string]string {
	return map[string]string{
		"journal.log":                            "journal line 1\njournal line 2\n",
		"kern.log":                               "kernel: hello\n",
		"kubelet.log":                            "kubelet started\n",
		"containerd.log":                         "containerd started\n",
		"kubelet-version.txt":                    "Kubernetes v1.36.3\n",
		"containerd-info.txt":                    `{"status":{}}` + "\n",
		"crictl-ps.txt":                          "CONTAINER  IMAGE  STATE\n",
		"container-stdout.log":                   "systemd booting\n",
		"container-stderr.log":                   "systemd warning\n",
		"pods/kube-system_etcd-x_123/etcd/0.log": "etcd log\n",
		"pods/kube-system_kube-apiserver-x_456/kube-apiserver/0.log": "apiserver log\n",
		"bootstrap/bootstrap-success.complete":                       "success\n",
		"bootstrap/capd.bootstrap.started":                           "started\n",
		"extra/extra.txt":                                            "extra\n",
		"hostname":                                                   "c1-md-0-abc\n",
	}
}

// assertHealthyStderr checks the stderr file of a healthy() machine keeps
// what its commands printed there, each under its command.
func assertHealthyStderr(t *testing.T, dir string) {
	t.Helper()
	stderr := readFile(t, filepath.Join(dir, StderrFile))
	for _, want := range []string{"==> containerd-info.txt: crictl info <==\nWARN: deprecated endpoint\n", "==> extra/extra.txt: sh -c echo extra; echo oops >&2 <==\noops\n"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("%s = %q, want it to contain %q", StderrFile, stderr, want)
		}
	}
}

func assertFiles(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	for name, content := range want {
		if got := readFile(t, filepath.Join(dir, name)); got != content {
			t.Errorf("%s = %q, want %q", name, got, content)
		}
	}
}

func assertAbsent(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (err %v), want it absent", n, err)
		}
	}
}

// failuresByOutput reads the errors file and indexes it by output.
func failuresByOutput(t *testing.T, dir string) map[string]Failure {
	t.Helper()
	fs, err := ReadErrors(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]Failure{}
	for _, f := range fs {
		m[f.Output] = f
	}
	return m
}

func TestCollectMachineWritesCleanFiles(t *testing.T) {
	t.Parallel()
	f := fake.New()
	addMachine(f, "c1-md-0-abc")
	f.SetExec(healthy().exec)
	c := &Collector{
		Runtime:          f,
		AdditionalLogs:   []Command{{File: "extra/extra.txt", Cmd: []string{"sh", "-c", "echo extra; echo oops >&2"}}},
		AdditionalCopies: []Copy{{Path: "/etc/hostname", Dest: "hostname"}},
	}
	dir := t.TempDir()
	if err := c.CollectMachine(t.Context(), "c1-md-0-abc", dir); err != nil {
		t.Fatalf("CollectMachine: %v", err)
	}
	want := healthyFiles()
	want["inspect.json"] = "{\n  \"Id\": \"c1-md-0-abc\",\n  \"State\": {\n    \"Running\": true\n  }\n}\n"
	assertFiles(t, dir, want)
	// No failure means no errors file; the optional cloud-init log is
	// simply absent on a CAPD machine.
	assertAbsent(t, dir, ErrorsFile, "cloud-init-output.log")
	assertHealthyStderr(t, dir)
}

// TestFallbackRunsGoProgramsWithGoEnv: collected step by step (the fake
// has no sh for the script), kubelet and crictl get goEnv and nothing else
// does.
func TestFallbackRunsGoProgramsWithGoEnv(t *testing.T) {
	t.Parallel()
	f := fake.New()
	addMachine(f, "m1")
	var mu sync.Mutex
	envs := map[string][]string{}
	h := healthy()
	f.SetExec(func(ctx context.Context, container string, opts runtime.ExecOptions) (runtime.ExecResult, error) {
		mu.Lock()
		envs[strings.Join(opts.Cmd, " ")] = opts.Env
		mu.Unlock()
		return h.exec(ctx, container, opts)
	})
	c := &Collector{
		Runtime:        f,
		AdditionalLogs: []Command{{File: "extra/extra.txt", Cmd: []string{"sh", "-c", "echo extra; echo oops >&2"}}},
	}
	if err := c.CollectMachine(t.Context(), "m1", t.TempDir()); err != nil {
		t.Fatalf("CollectMachine: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for cmd := range h {
		env, ran := envs[cmd]
		if !ran {
			t.Errorf("%q did not run", cmd)
			continue
		}
		var want []string // the machine's own environment: nothing added
		if strings.HasPrefix(cmd, "kubelet ") || strings.HasPrefix(cmd, "crictl ") {
			want = goEnv
		}
		if !slices.Equal(env, want) {
			t.Errorf("%q ran with env %q, want %q", cmd, env, want)
		}
	}
}

func TestCollectMachineRecordsFailuresAndGoesOn(t *testing.T) {
	t.Parallel()
	f := fake.New()
	addMachine(f, "m1")
	s := healthy()
	delete(s, "kubelet --version") // not installed: exit 127
	s["crictl ps -a"] = reply{stdout: "partial\n", stderr: "connection refused\n", code: 1}
	s[jc+" -u containerd.service"] = reply{err: fmt.Errorf("exec: stream broke: %w", runtime.ErrUnavailable)}
	// Docker reports a command it cannot start on stdout, exit code 126.
	s["crictl info"] = reply{stdout: "OCI runtime exec failed: exec: \"crictl\": permission denied\r\n", code: 126}
	f.SetExec(s.exec)
	dir := t.TempDir()

	err := (&Collector{Runtime: f}).CollectMachine(t.Context(), "m1", dir)
	if err == nil {
		t.Fatal("CollectMachine succeeded, want an error naming the failures")
	}
	for _, want := range []string{`"m1"`, "4 of 12 steps failed", "kubelet-version.txt: exited with code 127", ErrorsFile} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}

	fs := failuresByOutput(t, dir)
	if len(fs) != 4 {
		t.Errorf("errors file has %d entries, want 4: %+v", len(fs), fs)
	}
	if ci := fs["containerd-info.txt"]; !strings.Contains(ci.Stdout, "OCI runtime exec failed") {
		t.Errorf("containerd-info.txt failure = %+v, want the engine's message in Stdout", ci)
	}
	kv := fs["kubelet-version.txt"]
	if kv.ExitCode == nil || *kv.ExitCode != 127 || !strings.Contains(kv.Stderr, "executable file not found") ||
		!slices.Equal(kv.Command, []string{"kubelet", "--version"}) {
		t.Errorf("kubelet-version.txt failure = %+v, want exit code 127, the command and its stderr", kv)
	}
	ps := fs["crictl-ps.txt"]
	if ps.ExitCode == nil || *ps.ExitCode != 1 || ps.Stderr != "connection refused\n" {
		t.Errorf("crictl-ps.txt failure = %+v, want exit code 1 and stderr", ps)
	}
	cd := fs["containerd.log"]
	if cd.ExitCode != nil || !strings.Contains(cd.Error, "stream broke") {
		t.Errorf("containerd.log failure = %+v, want no exit code and the exec error", cd)
	}

	// A failed command that printed nothing leaves no file; one that
	// printed something keeps it; everything else was collected.
	assertAbsent(t, dir, "kubelet-version.txt", "containerd.log", "containerd-info.txt")
	assertFiles(t, dir, map[string]string{
		"crictl-ps.txt":                          "partial\n",
		"journal.log":                            "journal line 1\njournal line 2\n",
		"pods/kube-system_etcd-x_123/etcd/0.log": "etcd log\n",
	})
	if b, _ := os.ReadFile(filepath.Join(dir, "crictl-ps.txt")); strings.Contains(string(b), "refused") {
		t.Error("stderr leaked into the output file")
	}
}

func TestCommandDeadline(t *testing.T) {
	t.Parallel()
	f := fake.New()
	addMachine(f, "m1")
	s := healthy()
	s[jc] = reply{stdout: "first lines\n", block: true}
	f.SetExec(s.exec)
	dir := t.TempDir()

	start := time.Now()
	err := (&Collector{Runtime: f, CommandTimeout: 200 * time.Millisecond}).CollectMachine(t.Context(), "m1", dir)
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("collection took %s with a hung command and a 200ms command timeout", elapsed)
	}
	if err == nil || !strings.Contains(err.Error(), "journal.log: timed out after 200ms") {
		t.Errorf("error = %v, want the journal.log timeout", err)
	}
	j := failuresByOutput(t, dir)["journal.log"]
	if !strings.Contains(j.Error, "timed out after 200ms") || j.ExitCode != nil {
		t.Errorf("journal.log failure = %+v", j)
	}
	// What the hung command printed before its deadline is kept.
	assertFiles(t, dir, map[string]string{"journal.log": "first lines\n", "kern.log": "kernel: hello\n"})
}

// A runtime that ignores its context must not hang the collector either.
func TestStepAbandonedWhenRuntimeIgnoresDeadline(t *testing.T) {
	f := fake.New()
	addMachine(f, "m1")
	release := make(chan struct{})
	defer close(release)
	s := healthy()
	f.SetExec(func(ctx context.Context, c string, opts runtime.ExecOptions) (runtime.ExecResult, error) {
		if opts.Cmd[0] == "kubelet" {
			<-release // ignores ctx
			_, _ = opts.Stdout.Write([]byte("too late\n"))
			return runtime.ExecResult{}, nil
		}
		return s.exec(ctx, c, opts)
	})
	old := abandonGrace
	abandonGrace = 100 * time.Millisecond
	defer func() { abandonGrace = old }()
	dir := t.TempDir()

	start := time.Now()
	err := (&Collector{Runtime: f, CommandTimeout: 100 * time.Millisecond}).CollectMachine(t.Context(), "m1", dir)
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("collection took %s", elapsed)
	}
	if err == nil || !strings.Contains(failuresByOutput(t, dir)["kubelet-version.txt"].Error, "did not return") {
		t.Errorf("error = %v, want kubelet-version.txt abandoned", err)
	}
}

func TestStoppedContainerSkipsCommandsButCopies(t *testing.T) {
	t.Parallel()
	f := fake.New()
	addMachine(f, "m1")
	f.SetState("m1", runtime.ContainerState{Status: "exited", ExitCode: 137, FinishedAt: time.Now()})
	f.SetExec(healthy().exec)
	dir := t.TempDir()

	if err := (&Collector{Runtime: f}).CollectMachine(t.Context(), "m1", dir); err == nil {
		t.Fatal("want an error for the skipped commands")
	}
	for _, c := range f.Calls() {
		if c.Method == "Exec" {
			t.Errorf("Exec called on a stopped container: %v", c.Args)
		}
	}
	fs := failuresByOutput(t, dir)
	if len(fs) != 7 {
		t.Errorf("errors file has %d entries, want the 7 commands", len(fs))
	}
	if e := fs["journal.log"].Error; !strings.Contains(e, "not running (status exited, exit code 137)") {
		t.Errorf("journal.log failure = %q", e)
	}
	assertFiles(t, dir, map[string]string{
		"container-stdout.log":                   "systemd booting\n",
		"pods/kube-system_etcd-x_123/etcd/0.log": "etcd log\n",
		"bootstrap/capd.bootstrap.started":       "started\n",
	})
}

func TestMissingContainer(t *testing.T) {
	t.Parallel()
	f := fake.New()
	dir := t.TempDir()
	err := (&Collector{Runtime: f}).CollectMachine(t.Context(), "ghost", dir)
	if err == nil || !strings.Contains(err.Error(), "1 of 1 steps failed") {
		t.Fatalf("error = %v, want the missing container reported", err)
	}
	fs := failuresByOutput(t, dir)
	if len(fs) != 1 || !strings.Contains(fs["inspect.json"].Error, "not found") {
		t.Errorf("errors file = %+v, want one not-found entry", fs)
	}
	if n := len(f.Calls()); n != 1 {
		t.Errorf("%d engine calls for a missing container, want only the inspect", n)
	}
}

func TestRerunRemovesStaleErrorsFile(t *testing.T) {
	t.Parallel()
	f := fake.New()
	addMachine(f, "m1")
	dir := t.TempDir()
	c := &Collector{Runtime: f}
	f.SetExec(script{}.exec) // everything missing
	if err := c.CollectMachine(t.Context(), "m1", dir); err == nil {
		t.Fatal("want failures")
	}
	f.SetExec(healthy().exec)
	if err := c.CollectMachine(t.Context(), "m1", dir); err != nil {
		t.Fatal(err)
	}
	assertAbsent(t, dir, ErrorsFile)
}

// gate counts commands in flight and lets them through once want of them
// run at the same time (or after a timeout, so a failing test ends).
type gate struct {
	want int32
	// skipScript lets the collection script through uncounted.
	skipScript bool
	inFlight   atomic.Int32
	max        atomic.Int32
	open       chan struct{}
	once       sync.Once
}

func newGate(want int32) *gate { return &gate{want: want, open: make(chan struct{})} }

func (g *gate) wrap(next fake.ExecFunc) fake.ExecFunc {
	return func(ctx context.Context, c string, opts runtime.ExecOptions) (runtime.ExecResult, error) {
		if g.skipScript && opts.Cmd[0] == "sh" && strings.HasPrefix(opts.Cmd[len(opts.Cmd)-1], "b=capd-e2e-logs.") {
			return next(ctx, c, opts)
		}
		n := g.inFlight.Add(1)
		defer g.inFlight.Add(-1)
		for {
			m := g.max.Load()
			if n <= m || g.max.CompareAndSwap(m, n) {
				break
			}
		}
		if n >= g.want {
			g.once.Do(func() { close(g.open) })
		}
		select {
		case <-g.open:
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
		}
		return next(ctx, c, opts)
	}
}

func threeMachines(t *testing.T, f *fake.Runtime) []Target {
	var targets []Target
	root := t.TempDir()
	for i := range 3 {
		name := fmt.Sprintf("m%d", i)
		addMachine(f, name)
		targets = append(targets, Target{Container: name, Dir: filepath.Join(root, name)})
	}
	return targets
}

func TestMachinesRunConcurrently(t *testing.T) {
	t.Parallel()
	f := fake.New()
	targets := threeMachines(t, f)
	// One exec per machine, 3 machines: all 3 must be in flight at once.
	g := newGate(3)
	f.SetExec(g.wrap(node{f: f, commands: healthy()}.exec(t)))
	if err := (&Collector{Runtime: f}).CollectMachines(t.Context(), targets); err != nil {
		t.Fatal(err)
	}
	if got := g.max.Load(); got != 3 {
		t.Errorf("at most %d machines were collected at once, want 3", got)
	}
	for _, tg := range targets {
		assertFiles(t, tg.Dir, map[string]string{"kern.log": "kernel: hello\n"})
	}
}

// Without a shell in the machine, its commands run one exec each, at once.
func TestFallbackRunsCommandsConcurrently(t *testing.T) {
	t.Parallel()
	f := fake.New()
	targets := threeMachines(t, f)
	// 7 commands per machine, 3 machines: all 21 must be in flight at once.
	g := newGate(21)
	g.skipScript = true
	f.SetExec(g.wrap(healthy().exec))
	if err := (&Collector{Runtime: f}).CollectMachines(t.Context(), targets); err != nil {
		t.Fatal(err)
	}
	if got := g.max.Load(); got != 21 {
		t.Errorf("at most %d commands ran at once, want 21", got)
	}
	for _, tg := range targets {
		assertFiles(t, tg.Dir, map[string]string{"kern.log": "kernel: hello\n"})
	}
}

func TestParallelismBoundsMachines(t *testing.T) {
	t.Parallel()
	f := fake.New()
	targets := threeMachines(t, f)
	g := newGate(2)
	f.SetExec(g.wrap(node{f: f, commands: healthy()}.exec(t)))
	if err := (&Collector{Runtime: f, Parallelism: 1}).CollectMachines(t.Context(), targets); err != nil {
		t.Fatal(err)
	}
	if got := g.max.Load(); got != 1 {
		t.Errorf("at most %d machines were collected at once with Parallelism 1, want 1", got)
	}
}

func TestOverallDeadlineMarksMachinesNotStarted(t *testing.T) {
	t.Parallel()
	f := fake.New()
	root := t.TempDir()
	targets := []Target{{"m0", filepath.Join(root, "m0")}, {"m1", filepath.Join(root, "m1")}}
	addMachine(f, "m0")
	addMachine(f, "m1")
	s := healthy()
	s["kubelet --version"] = reply{block: true}
	f.SetExec(s.exec)

	start := time.Now()
	err := (&Collector{Runtime: f, Parallelism: 1, Timeout: 200 * time.Millisecond}).CollectMachines(t.Context(), targets)
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("took %s with a 200ms overall timeout", elapsed)
	}
	if err == nil {
		t.Fatal("want an error")
	}
	// Whichever machine got the one slot hit the deadline mid-way; the
	// other never started. Both say so in their errors file.
	var deadline, notCollected int
	for _, tg := range targets {
		fs := failuresByOutput(t, tg.Dir)
		if strings.Contains(fs["kubelet-version.txt"].Error, "collection deadline passed") {
			deadline++
		}
		if strings.Contains(fs["."].Error, "not collected") {
			notCollected++
		}
	}
	if deadline != 1 || notCollected != 1 {
		t.Errorf("%d machines hit the deadline and %d were not collected, want 1 and 1; error: %v", deadline, notCollected, err)
	}
}

func TestUnsafeTarEntriesAreSkipped(t *testing.T) {
	t.Parallel()
	f := fake.New()
	addMachine(f, "m1")
	f.AddContainer(fake.Container{
		ContainerDetails: runtime.ContainerDetails{Name: "evil"},
		Files: map[string][]byte{
			"/var/log/pods/ok/0.log":            []byte("fine\n"),
			"/var/log/pods/../../../escaped":    []byte("gotcha\n"),
			"/var/log/pods/a/../../../../x.log": []byte("gotcha\n"),
		},
	})
	f.SetExec(healthy().exec)
	root := t.TempDir()
	dir := filepath.Join(root, "out")
	_ = (&Collector{Runtime: f}).CollectMachine(t.Context(), "evil", dir)
	assertFiles(t, dir, map[string]string{"pods/ok/0.log": "fine\n"})
	for _, p := range []string{filepath.Join(root, "escaped"), filepath.Join(root, "x.log"), filepath.Join(dir, "escaped")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if e := failuresByOutput(t, dir)["pods"].Error; !strings.Contains(e, "skipped 2 tar entries with unsafe names") {
		t.Errorf("pods failure = %q", e)
	}
}

func TestCollectClusterLayout(t *testing.T) {
	t.Parallel()
	f := fake.New()
	addMachine(f, "c1-cp-0")
	addMachine(f, "c1-md-0")
	f.AddContainer(fake.Container{
		ContainerDetails: runtime.ContainerDetails{Name: "c1-lb", Labels: map[string]string{
			runtime.LabelCluster: "c1", runtime.LabelRole: "external-load-balancer"}},
		Files:  map[string][]byte{"/usr/local/etc/haproxy/haproxy.cfg": []byte("frontend control-plane\n")},
		Stdout: []byte("haproxy up\n"),
	})
	f.AddContainer(fake.Container{ContainerDetails: runtime.ContainerDetails{Name: "c2-cp", Labels: map[string]string{runtime.LabelCluster: "c2"}}})
	f.SetExec(healthy().exec)
	dir := t.TempDir()

	if err := (&Collector{Runtime: f}).CollectCluster(t.Context(), "c1", dir); err != nil {
		t.Fatal(err)
	}
	assertFiles(t, dir, map[string]string{
		"machines/c1-cp-0/kern.log":                 "kernel: hello\n",
		"machines/c1-md-0/kubelet-version.txt":      "Kubernetes v1.36.3\n",
		"infrastructure/c1-lb/haproxy.cfg":          "frontend control-plane\n",
		"infrastructure/c1-lb/container-stdout.log": "haproxy up\n",
		"infrastructure/c1-lb/container-stderr.log": "",
	})
	assertAbsent(t, dir, "machines/c1-lb", "machines/c2-cp", "infrastructure/c1-lb/journal.log")

	if err := (&Collector{Runtime: f}).CollectCluster(t.Context(), "nope", t.TempDir()); err == nil {
		t.Error("want an error for a cluster without containers")
	}
}

// A second call collects only the containers that appeared since the
// first: a machine CAPD was still creating when the spec ended.
func TestCollectClusterExceptCollectsLateContainers(t *testing.T) {
	t.Parallel()
	f := fake.New()
	addMachine(f, "c1-cp-0")
	f.SetExec(healthy().exec)
	dir := t.TempDir()
	c := &Collector{Runtime: f}
	seen := map[string]bool{}

	if err := c.CollectClusterExcept(t.Context(), "c1", dir, seen); err != nil {
		t.Fatal(err)
	}
	if !seen["c1-cp-0"] || len(seen) != 1 {
		t.Fatalf("seen = %v, want c1-cp-0 only", seen)
	}
	// Mark the first collection's output: a second collection of the same
	// container would overwrite it.
	marker := filepath.Join(dir, "machines/c1-cp-0/kern.log")
	if err := os.WriteFile(marker, []byte("first pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addMachine(f, "c1-cp-1")

	if err := c.CollectClusterExcept(t.Context(), "c1", dir, seen); err != nil {
		t.Fatal(err)
	}
	assertFiles(t, dir, map[string]string{
		"machines/c1-cp-0/kern.log": "first pass\n",
		"machines/c1-cp-1/kern.log": "kernel: hello\n",
	})
	if !seen["c1-cp-1"] || len(seen) != 2 {
		t.Errorf("seen = %v, want c1-cp-0 and c1-cp-1", seen)
	}
	// Nothing new, and containers already seen: not an error.
	if err := c.CollectClusterExcept(t.Context(), "c1", dir, seen); err != nil {
		t.Errorf("third call: %v, want nil", err)
	}
	// No container at all and nothing seen: an error.
	if err := c.CollectClusterExcept(t.Context(), "nope", t.TempDir(), map[string]bool{}); err == nil {
		t.Error("want an error for a cluster without containers")
	}
}

func TestClusterLogCollectorMethods(t *testing.T) {
	t.Parallel()
	f := fake.New()
	addMachine(f, "c1-md-0-abc") // machine name already prefixed
	addMachine(f, "c1-cp-xyz")   // machine "cp-xyz" gets the prefix
	addMachine(f, "c1-mp-0-1")
	addMachine(f, "c1-mp-0-2")
	f.AddContainer(fake.Container{
		ContainerDetails: runtime.ContainerDetails{Name: "c1-lb"},
		Files:            map[string][]byte{"/usr/local/etc/haproxy/haproxy.cfg": []byte("cfg\n")},
	})
	f.SetExec(healthy().exec)
	c := &Collector{Runtime: f}
	dir := t.TempDir()

	for _, name := range []string{"c1-md-0-abc", "cp-xyz"} {
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1.MachineSpec{ClusterName: "c1"}}
		if err := c.CollectMachineLog(t.Context(), nil, m, filepath.Join(dir, "machines", name)); err != nil {
			t.Errorf("CollectMachineLog(%s): %v", name, err)
		}
		assertFiles(t, filepath.Join(dir, "machines", name), map[string]string{"kern.log": "kernel: hello\n"})
	}

	mp := &clusterv1.MachinePool{
		ObjectMeta: metav1.ObjectMeta{Name: "mp-0"},
		Spec:       clusterv1.MachinePoolSpec{ClusterName: "c1"},
		Status:     clusterv1.MachinePoolStatus{NodeRefs: []corev1.ObjectReference{{Name: "c1-mp-0-1"}, {Name: "mp-0-2"}}},
	}
	if err := c.CollectMachinePoolLog(t.Context(), nil, mp, filepath.Join(dir, "pools")); err != nil {
		t.Errorf("CollectMachinePoolLog: %v", err)
	}
	assertFiles(t, dir, map[string]string{
		"pools/c1-mp-0-1/kern.log": "kernel: hello\n",
		"pools/mp-0-2/kern.log":    "kernel: hello\n",
	})

	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	if err := c.CollectInfrastructureLogs(t.Context(), nil, cl, filepath.Join(dir, "infrastructure")); err != nil {
		t.Errorf("CollectInfrastructureLogs: %v", err)
	}
	assertFiles(t, dir, map[string]string{"infrastructure/c1-lb/haproxy.cfg": "cfg\n"})

	if err := c.CollectMachineLog(t.Context(), nil, nil, dir); err == nil {
		t.Error("nil Machine: want an error")
	}
}

func TestContainerName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cluster, machine, want string }{
		{"c1", "md-0-abc", "c1-md-0-abc"},
		{"c1", "c1-md-0-abc", "c1-md-0-abc"},
		// Upstream tests the bare prefix, not "<cluster>-": keep its rule.
		{"c1", "c1x", "c1x"},
	} {
		if got := ContainerName(tc.cluster, tc.machine); got != tc.want {
			t.Errorf("ContainerName(%q, %q) = %q, want %q", tc.cluster, tc.machine, got, tc.want)
		}
	}
	if got := LoadBalancerName("c1"); got != "c1-lb" {
		t.Errorf("LoadBalancerName = %q", got)
	}
}

func TestInvalidConfiguration(t *testing.T) {
	t.Parallel()
	f := fake.New()
	for _, c := range []*Collector{
		{},
		{Runtime: f, AdditionalLogs: []Command{{File: "../x", Cmd: []string{"true"}}}},
		{Runtime: f, AdditionalLogs: []Command{{File: "x"}}},
		{Runtime: f, AdditionalCopies: []Copy{{Path: "/etc", Dest: "/abs"}}},
	} {
		if err := c.CollectMachine(t.Context(), "m", t.TempDir()); err == nil {
			t.Errorf("%+v: want a configuration error", c)
		}
	}
}

func TestErrorsFileIsJSONArray(t *testing.T) {
	t.Parallel()
	f := fake.New()
	dir := t.TempDir()
	_ = (&Collector{Runtime: f}).CollectMachine(t.Context(), "ghost", dir)
	var v []map[string]any
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, ErrorsFile))), &v); err != nil || len(v) != 1 {
		t.Fatalf("errors file: %v, %v", v, err)
	}
	for _, k := range []string{"output", "error"} {
		if _, ok := v[0][k]; !ok {
			t.Errorf("entry lacks %q: %v", k, v[0])
		}
	}
}
