//go:build faults

package faults

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/capd-e2e/capd-e2e/framework/report"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
	"github.com/capd-e2e/capd-e2e/framework/secrets"
	"github.com/capd-e2e/capd-e2e/framework/suite"
)

// What scripts/test-faults.sh gives the tests.
var (
	// capdE2E and ginkgo are the tools (hack/tools/bin).
	capdE2E = os.Getenv("CAPD_E2E_BIN")
	ginkgo  = os.Getenv("GINKGO")
	// out is where each scenario's log and artifacts go, and results.md.
	out = os.Getenv("FAULTS_OUT")
)

// rows are the results table's rows, in the order the scenarios ran.
var rows []string

func TestMain(m *testing.M) {
	if capdE2E == "" || ginkgo == "" || out == "" {
		fmt.Fprintln(os.Stderr, "faults: run through scripts/test-faults.sh (make test-faults): CAPD_E2E_BIN, GINKGO and FAULTS_OUT must be set")
		os.Exit(2)
	}
	code := m.Run()
	var b bytes.Buffer
	b.WriteString("| scenario | phase | left in the engine | artifacts | JUnit | exit | cleanup after the signal | secrets in the artifacts | colour codes in the log | result |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	fmt.Print(b.String())
	if err := os.WriteFile(filepath.Join(out, "results.md"), b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		code = 1
	}
	os.Exit(code)
}

// repoRoot is this checkout's root (the tests run in internal/faults).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// engine opens the engine the runs use (DOCKER_HOST).
func engine(t *testing.T) *moby.Runtime {
	t.Helper()
	rt, err := moby.New(moby.Config{})
	if err != nil {
		t.Fatalf("the engine: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// objects lists every container, volume and network of the engine: what a
// scenario compares before and after. An engine that does not answer fails
// the scenario: what the run left would be unknown.
func objects(t *testing.T, rt runtime.Runtime) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := map[string]bool{}
	cs, err := rt.ListContainers(ctx, runtime.Filter{})
	if err != nil {
		t.Fatalf("list the engine's containers: %v", err)
	}
	for _, c := range cs {
		m["container "+c.Name] = true
	}
	vs, err := rt.ListVolumes(ctx, runtime.Filter{})
	if err != nil {
		t.Fatalf("list the engine's volumes: %v", err)
	}
	for _, v := range vs {
		m["volume "+v.Name] = true
	}
	ns, err := rt.ListNetworks(ctx, runtime.Filter{})
	if err != nil {
		t.Fatalf("list the engine's networks: %v", err)
	}
	for _, n := range ns {
		m["network "+n.Name] = true
	}
	return m
}

// run is one E2E run a scenario started.
type run struct {
	name, id, dir string
	cmd           *exec.Cmd
	log           *os.File
	exited        chan struct{}
}

func (r *run) artifacts() string { return filepath.Join(r.dir, "artifacts") }
func (r *run) logPath() string   { return filepath.Join(r.dir, "run.log") }

// start starts `capd-e2e run` on the PR-Blocking quick-start, under a run
// id of its own, with env added; its output goes to NAME/run.log.
func start(t *testing.T, name string, env ...string) *run {
	t.Helper()
	return startCmd(t, name, exec.Command(capdE2E, "run", "--ginkgo", ginkgo), env...)
}

func startCmd(t *testing.T, name string, cmd *exec.Cmd, env ...string) *run {
	t.Helper()
	r := &run{name: name, id: runtime.NewRunID(), dir: filepath.Join(out, name), cmd: cmd, exited: make(chan struct{})}
	if err := os.MkdirAll(r.artifacts(), 0o755); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(r.logPath())
	if err != nil {
		t.Fatal(err)
	}
	r.log = log
	if cmd.Dir == "" {
		cmd.Dir = repoRoot(t)
	}
	var base []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "SKIP_RESOURCE_CLEANUP", "CAPD_E2E_INJECT_FAULT", "GINKGO_FOCUS", "GINKGO_SKIP", "GINKGO_LABEL_FILTER", "CAPD_E2E_RUN_ID", "ARTIFACTS", suite.EnvSupervised:
			continue
		}
		base = append(base, kv)
	}
	cmd.Env = append(append(base, "GINKGO_LABEL_FILTER=PR-Blocking", "CAPD_E2E_RUN_ID="+r.id, "ARTIFACTS="+r.artifacts(), "CI=true"), env...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		close(r.exited)
	}()
	// Never left running by a scenario that failed early; killed, its
	// leftovers show in the scenario's check.
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			_ = cmd.Process.Kill()
			<-r.exited
		}
		_ = log.Close()
	})
	t.Logf("%s: run %s started (log %s)", name, r.id, r.logPath())
	return r
}

// waitLog waits until the run's log matches pattern; false when the run
// ended first or the time ran out: the fault could not be injected where
// the scenario says.
func (r *run) waitLog(t *testing.T, pattern string, timeout time.Duration) bool {
	t.Helper()
	re := regexp.MustCompile(pattern)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(r.logPath()); err == nil && re.Match(b) {
			return true
		}
		select {
		case <-r.exited:
			t.Errorf("%s: the run ended before %q appeared in its log", r.name, pattern)
			return false
		case <-time.After(time.Second):
		}
	}
	t.Errorf("%s: %q did not appear in the log within %s", r.name, pattern, timeout)
	return false
}

// wait waits for the run (at most timeout) and returns its exit code.
func (r *run) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-r.exited:
	case <-time.After(timeout):
		t.Errorf("%s: the run did not end within %s: killing it", r.name, timeout)
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
	return r.cmd.ProcessState.ExitCode()
}

// descendant returns the pid of the run's descendant process named comm
// (the suite's e2e.test), or 0: never another run's process.
func (r *run) descendant(comm string) int {
	children := map[int][]int{}
	names := map[int]string{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces.
		s := string(stat)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], pid)
		names[pid] = s[open+1 : close]
	}
	queue := []int{r.cmd.Process.Pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if names[p] == comm {
			return p
		}
		queue = append(queue, children[p]...)
	}
	return 0
}

// signalSuite waits until the run's log shows when, then sends sig to the
// suite's test process (e2e.test) under the run, and returns when; zero
// when the signal could not be sent where the scenario says (an error of
// the scenario's), with the kill's own error.
func (r *run) signalSuite(t *testing.T, when string, sig syscall.Signal) (time.Time, error) {
	t.Helper()
	if !r.waitLog(t, when, waitTimeout) {
		return time.Time{}, nil
	}
	pid := r.descendant("e2e.test")
	if pid == 0 {
		t.Errorf("%s: no e2e.test process under the run", r.name)
		return time.Time{}, nil
	}
	return time.Now(), syscall.Kill(pid, sig)
}

// signal sends sig to the run's process (capd-e2e run).
func (r *run) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Errorf("%s: signal %s: %v", r.name, sig, err)
	}
}

// outcome is what a scenario expects of a run.
type outcome struct {
	phase string
	// fail: the run must exit non-zero (and its JUnit report hold a
	// <failure>, metadata.json a failing phase); else zero.
	fail bool
	// signalled is when the scenario signalled the run (zero: never).
	signalled time.Time
	// artifacts are globs under the artifacts folder that must match.
	artifacts []string
	// logHas are regular expressions the run's log must match.
	logHas []string
	// suiteCase, if set, is the name of a test case the JUnit report must
	// hold: one only the suite's own report has, not the fallback capd-e2e
	// run writes when the suite wrote none (one test case, named after
	// the stage the job stopped in).
	suiteCase string
}

// check records the run's row and fails the scenario on what is wrong.
func check(t *testing.T, rt runtime.Runtime, before map[string]bool, r *run, code int, o outcome) {
	t.Helper()
	var problems []string
	left := leftover(t, rt, before)
	if len(left) > 0 {
		problems = append(problems, "left "+strings.Join(left, ", "))
	}
	artifacts := "yes"
	for _, g := range o.artifacts {
		if m, _ := filepath.Glob(filepath.Join(r.artifacts(), g)); len(m) == 0 {
			artifacts = "missing " + g
			problems = append(problems, artifacts)
		}
	}
	junit := "yes"
	ju, err := os.ReadFile(filepath.Join(r.artifacts(), report.JUnitFile))
	switch {
	case err != nil || !bytes.Contains(ju, []byte("<testsuite")):
		junit = "no"
	case o.fail && !bytes.Contains(ju, []byte("<failure")):
		junit = "no <failure>"
	case o.suiteCase != "" && !bytes.Contains(ju, []byte(`<testcase name="`+o.suiteCase+`"`)):
		junit = "not the suite's own (no test case " + o.suiteCase + ")"
	case o.fail:
		meta, _ := os.ReadFile(filepath.Join(r.artifacts(), report.MetadataFile))
		if !bytes.Contains(meta, []byte(`"`+report.MetaFailingPhase+`"`)) {
			junit = "no failing phase in metadata.json"
		}
	}
	if junit != "yes" {
		problems = append(problems, "JUnit: "+junit)
	}
	// An independent scan of what the run published.
	scan, err := secrets.ScanTree(r.artifacts())
	secretsCol := fmt.Sprintf("none in %d files", scan.Files)
	if err != nil || len(scan.Findings) > 0 {
		secretsCol = fmt.Sprintf("FOUND %v %v", scan.Findings, err)
		problems = append(problems, "secrets: "+secretsCol)
	}
	log, _ := os.ReadFile(r.logPath())
	colour := "none"
	if bytes.Contains(log, []byte("\x1b[")) {
		colour = "FOUND"
		problems = append(problems, "colour codes in the log")
	}
	for _, p := range o.logHas {
		if !regexp.MustCompile(p).Match(log) {
			problems = append(problems, fmt.Sprintf("the log lacks %q", p))
		}
	}
	exit := strconv.Itoa(code)
	if o.fail != (code != 0) {
		exit += map[bool]string{true: " (should fail)", false: " (should pass)"}[o.fail]
		problems = append(problems, "exit "+exit)
	}
	cleanup := "-"
	if !o.signalled.IsZero() {
		cleanup = time.Since(o.signalled).Round(time.Second).String()
	}
	result := "PASS"
	if len(problems) > 0 {
		result = "FAIL"
		t.Errorf("%s: %s", r.name, strings.Join(problems, "; "))
	}
	leftCol := "nothing"
	if len(left) > 0 {
		leftCol = strings.Join(left, " ")
	}
	rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | exit %s | %s | %s | %s | %s |", r.name, o.phase, leftCol, artifacts, junit, exit, cleanup, secretsCol, colour, result))
	t.Logf("%s: %s (left: %s; junit %s; artifacts %s; exit %s; cleanup %s)", r.name, result, leftCol, junit, artifacts, exit, cleanup)
}

// leftover is what the engine holds now that it did not before.
func leftover(t *testing.T, rt runtime.Runtime, before map[string]bool) []string {
	t.Helper()
	var left []string
	for o := range objects(t, rt) {
		if !before[o] {
			left = append(left, o)
		}
	}
	sort.Strings(left)
	return left
}

const (
	runTimeout  = 45 * time.Minute
	waitTimeout = 15 * time.Minute
	cpWait      = "wait for control plane initialized"
)

func TestFaults(t *testing.T) {
	rt := engine(t)
	scenarios := []struct {
		name string
		fn   func(t *testing.T, before map[string]bool)
	}{
		{"bad-config", func(t *testing.T, before map[string]bool) {
			r := start(t, "bad-config", "KUBERNETES_VERSION=v1.35.0")
			code := r.wait(t, runTimeout)
			check(t, rt, before, r, code, outcome{phase: "config check (before the engine)", fail: true,
				artifacts: []string{"localhost/images.log"},
				logHas:    []string{regexp.QuoteMeta(`variables.KUBERNETES_VERSION (environment): Invalid value: "v1.35.0" has no build.kubernetes entry`)}})
		}},
		{"setup-fail", func(t *testing.T, before map[string]bool) {
			r := start(t, "setup-fail", "CAPD_E2E_INJECT_FAULT=install cert-manager's CRDs")
			code := r.wait(t, runTimeout)
			check(t, rt, before, r, code, outcome{phase: "setup: cert-manager, after kind create", fail: true,
				artifacts: []string{"clusters/bootstrap/machines/*/journal.log", "clusters/bootstrap/containers.txt"}})
		}},
		{"interrupt-kind", interrupt(rt, "interrupt-kind", "Starting control-plane", "setup: kind create and image load", []string{"kind/*/journal.log"}, syscall.SIGTERM)},
		{"interrupt-nodes", interrupt(rt, "interrupt-nodes", "Preparing nodes", "setup: kind's node containers", []string{"localhost/engine-ps.txt"}, syscall.SIGTERM)},
		{"interrupt-cp", interrupt(rt, "interrupt-cp", cpWait, "spec: control-plane wait",
			[]string{"clusters/quick-start-*/summary.txt", "clusters/quick-start-*/machines/*/journal.log", "clusters/bootstrap/machines/*/journal.log"}, syscall.SIGTERM)},
		{"double-interrupt", interrupt(rt, "double-interrupt", cpWait, "spec: control-plane wait, twice", nil, syscall.SIGTERM, syscall.SIGTERM)},
		{"sigint-suite", func(t *testing.T, before map[string]bool) {
			r := start(t, "sigint-suite")
			at, err := r.signalSuite(t, cpWait, syscall.SIGINT)
			if err != nil {
				t.Error(err)
			}
			code := r.wait(t, runTimeout)
			check(t, rt, before, r, code, outcome{phase: "spec: control-plane wait (SIGINT to the test process)", fail: true, signalled: at,
				artifacts: []string{"clusters/quick-start-*/summary.txt", "clusters/bootstrap/machines/*/journal.log"}})
		}},
		{"killed-rerun", func(t *testing.T, before map[string]bool) {
			r := start(t, "killed-rerun")
			if r.waitLog(t, cpWait, waitTimeout) {
				pid := r.descendant("e2e.test")
				_ = r.cmd.Process.Kill() // the supervisor first, so that it does nothing after
				if pid != 0 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			r.wait(t, time.Minute)
			t.Logf("killed-rerun: killed run %s; %d objects left; re-running", r.id, len(leftover(t, rt, before)))
			at := time.Now()
			rerun := start(t, "killed-rerun-rerun")
			code := rerun.wait(t, runTimeout)
			check(t, rt, before, rerun, code, outcome{phase: "re-run after kill -9 of a run in the control-plane wait", signalled: at,
				artifacts: []string{"clusters/quick-start-*/summary.txt"},
				logHas:    []string{"run " + r.id + ` \(owner .*\) was gone: removed`}})
		}},
		{"killed-plain-ginkgo", func(t *testing.T, before map[string]bool) {
			// The suite under plain Ginkgo (no capd-e2e run), its test
			// process killed outright: the suite's watcher cleans up.
			root := repoRoot(t)
			suiteDir := filepath.Join(root, "e2e")
			bin := filepath.Join(suiteDir, "e2e.test") // make images compiled it
			if _, err := os.Stat(bin); err != nil {
				t.Fatalf("the suite is not compiled (scripts/test-faults.sh runs make images first): %v", err)
			}
			name := "killed-plain-ginkgo"
			cmd := exec.Command(ginkgo, "-v", "--no-color", "--label-filter=PR-Blocking", "--output-dir="+filepath.Join(out, name, "artifacts"), bin, "--",
				"-e2e.config="+filepath.Join(root, "config", "e2e.yaml"), "-e2e.artifacts-folder="+filepath.Join(out, name, "artifacts"))
			cmd.Dir = suiteDir
			r := startCmd(t, name, cmd)
			at, _ := r.signalSuite(t, cpWait, syscall.SIGKILL) // a test process gone already is no failure
			code := r.wait(t, 5*time.Minute)
			// The watcher outlives the suite: wait for its last line.
			watchLog := filepath.Join(r.artifacts(), suite.WatcherLog)
			deadline := time.Now().Add(15 * time.Minute)
			for {
				b, _ := os.ReadFile(watchLog)
				if strings.Contains(string(b), "watcher: done") {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("the suite's watcher did not finish within 15 minutes:\n%s", b)
					break
				}
				time.Sleep(2 * time.Second)
			}
			check(t, rt, before, r, code, outcome{phase: "kill -9 of the suite under plain ginkgo, in the control-plane wait", fail: true, signalled: at,
				artifacts: []string{suite.WatcherLog, report.HTMLFile}})
			if ju, _ := os.ReadFile(filepath.Join(r.artifacts(), report.JUnitFile)); !bytes.Contains(ju, []byte("the suite process died")) {
				t.Errorf("the watcher's JUnit report does not say the suite died:\n%s", ju)
			}
		}},
		{"artifacts-full", func(t *testing.T, before map[string]bool) {
			// The artifacts folder on a 3 MB tmpfs: the job fills it and
			// fails; the suite's own JUnit report must still be written
			// (the reserve capd-e2e run keeps; its setup's failure is in
			// the report's [SynchronizedBeforeSuite]), and a failed write
			// must not read as leftovers.
			dir := filepath.Join(out, "artifacts-full", "artifacts")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if b, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=3m", "capd-e2e-full", dir).CombinedOutput(); err != nil {
				t.Fatalf("mount a tmpfs (needs root): %v: %s", err, b)
			}
			t.Cleanup(func() {
				kept := dir + "-kept"
				_ = exec.Command("cp", "-a", dir, kept).Run()
				if b, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
					t.Errorf("umount %s: %v: %s", dir, err, b)
					return
				}
				_ = os.Remove(dir)
				_ = os.Rename(kept, dir)
			})
			r := start(t, "artifacts-full")
			code := r.wait(t, runTimeout)
			check(t, rt, before, r, code, outcome{phase: "artifacts folder full (3 MB tmpfs)", fail: true, suiteCase: "[SynchronizedBeforeSuite]"})
			if log, _ := os.ReadFile(r.logPath()); bytes.Contains(log, []byte("left nothing")) && bytes.Contains(log, []byte("the run left objects behind")) {
				t.Error("leftovers misreported")
			}
		}},
		{"concurrent", func(t *testing.T, before map[string]bool) {
			a, b := start(t, "concurrent-a"), start(t, "concurrent-b")
			ca, cb := a.wait(t, runTimeout), b.wait(t, runTimeout)
			re := regexp.MustCompile(`kind management cluster "[^"]*"`)
			la, _ := os.ReadFile(a.logPath())
			lb, _ := os.ReadFile(b.logPath())
			na, nb := re.Find(la), re.Find(lb)
			if na == nil || bytes.Equal(na, nb) {
				t.Errorf("the two runs' management clusters: %s / %s; want two", na, nb)
			}
			check(t, rt, before, a, ca, outcome{phase: "two quick-starts at once, a", artifacts: []string{"clusters/quick-start-*/summary.txt"}})
			check(t, rt, before, b, cb, outcome{phase: "two quick-starts at once, b", artifacts: []string{"clusters/quick-start-*/summary.txt"}})
		}},
		{"bad-clusterclass", badClusterClass(rt)},
		{"broken-dns", brokenDNS(rt)},
	}
	// FAULTS selects scenarios (space separated); they run in this
	// order.
	want := map[string]bool{}
	for _, f := range strings.Fields(os.Getenv("FAULTS")) {
		want[f] = true
	}
	if len(want) == 0 {
		t.Fatal("FAULTS names no scenario")
	}
	for _, s := range scenarios {
		if !want[s.name] {
			continue
		}
		delete(want, s.name)
		t.Run(s.name, func(t *testing.T) {
			s.fn(t, objects(t, rt))
		})
	}
	for f := range want {
		t.Errorf("FAULTS: no scenario %q", f)
	}
}

// interrupt is a scenario that signals the run (capd-e2e run) when its log
// shows when, once per signal, two seconds apart.
func interrupt(rt runtime.Runtime, name, when, phase string, artifacts []string, sigs ...syscall.Signal) func(*testing.T, map[string]bool) {
	return func(t *testing.T, before map[string]bool) {
		r := start(t, name)
		var at time.Time
		if r.waitLog(t, when, waitTimeout) {
			at = time.Now()
			for i, s := range sigs {
				if i > 0 {
					time.Sleep(2 * time.Second)
				}
				r.signal(t, s)
			}
		}
		code := r.wait(t, runTimeout)
		check(t, rt, before, r, code, outcome{phase: phase, fail: true, signalled: at, artifacts: artifacts})
	}
}

// badClusterClass runs a copy of this checkout whose ClusterClass takes
// the MachineDeployment's node image from a field of the preLoadImages
// variable, a list: the webhook accepts it (it does not execute
// templates), the topology controller cannot render it. wait-cluster is 1m
// there.
func badClusterClass(rt runtime.Runtime) func(*testing.T, map[string]bool) {
	return func(t *testing.T, before map[string]bool) {
		root := repoRoot(t)
		copyDir := filepath.Join(t.TempDir(), "capd-e2e")
		files, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard").Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range strings.Split(strings.TrimSpace(string(files)), "\n") {
			data, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				continue // listed, since removed
			}
			fi, _ := os.Stat(filepath.Join(root, f))
			dst := filepath.Join(copyDir, f)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, data, fi.Mode().Perm()); err != nil {
				t.Fatal(err)
			}
		}
		edit := func(rel, old, new string) {
			p := filepath.Join(copyDir, rel)
			b, err := os.ReadFile(p)
			if err != nil || !bytes.Contains(b, []byte(old)) {
				t.Fatalf("%s: %q not found (%v): the scenario no longer breaks the class", rel, old, err)
			}
			if err := os.WriteFile(p, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		edit("data/clusterclass-quick-start.yaml", ":{{ .builtin.machineDeployment.version }}", ":{{ .preLoadImages.tag }}")
		edit("config/e2e.yaml", "\nintervals:\n", "\nintervals:\n  quick-start/wait-cluster: [\"1m\", \"5s\"]\n")
		cmd := exec.Command(capdE2E, "run", "--ginkgo", ginkgo)
		cmd.Dir = copyDir
		r := startCmd(t, "bad-clusterclass", cmd)
		code := r.wait(t, runTimeout)
		check(t, rt, before, r, code, outcome{phase: "spec: a ClusterClass patch the topology controller cannot render", fail: true,
			artifacts: []string{"clusters/quick-start-*/summary.txt"},
			logHas:    []string{"TopologyReconciled False", regexp.QuoteMeta(".preLoadImages.tag"), "nodeImage", "ClusterClass quick-start-"}})
	}
}

// brokenDNS runs Kubernetes' DNS conformance tests (K8s-Install) on a
// cluster whose CoreDNS is scaled to zero when the suite starts: the run
// fails, its JUnit failure text names the failed DNS tests.
func brokenDNS(rt runtime.Runtime) func(*testing.T, map[string]bool) {
	return func(t *testing.T, before map[string]bool) {
		name := "broken-dns"
		kt := filepath.Join(out, name, "dns.yaml")
		if err := os.MkdirAll(filepath.Dir(kt), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(kt, []byte("ginkgo.focus: \\[sig-network\\] DNS .*\\[Conformance\\]\nginkgo.skip: \\[Serial\\]\nginkgo.no-color: \"true\"\ndisable-log-dump: \"true\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// Each DNS test waits up to 10 minutes for its lookups: all at once.
		r := start(t, name, "GINKGO_LABEL_FILTER=K8s-Install", "KUBETEST_CONFIGURATION="+kt, "KUBETEST_GINKGO_NODES=12")
		var at time.Time
		if r.waitLog(t, "run Kubernetes conformance", 40*time.Minute) {
			var kc string
			for i := 0; i < 60 && kc == ""; i++ {
				m, _ := filepath.Glob(filepath.Join(r.artifacts(), "clusters/k8s-conformance-*/kubetest/config/kubeconfig"))
				if len(m) > 0 {
					kc = m[0]
				} else {
					time.Sleep(time.Second)
				}
			}
			if kc == "" {
				t.Error("broken-dns: no workload kubeconfig for the conformance run")
			} else if err := scaleCoreDNS(kc); err != nil {
				t.Errorf("broken-dns: scale CoreDNS to zero: %v", err)
			} else {
				at = time.Now()
			}
		}
		code := r.wait(t, 90*time.Minute)
		check(t, rt, before, r, code, outcome{phase: "spec: conformance with CoreDNS gone", fail: true, signalled: at,
			artifacts: []string{"clusters/k8s-conformance-*/kubetest/e2e.log", "clusters/k8s-conformance-*/kubetest/junit_kubetest.*.xml", "junit.kubetest.*.xml"}})
		if ju, _ := os.ReadFile(filepath.Join(r.artifacts(), report.JUnitFile)); !bytes.Contains(ju, []byte("failed tests (")) || !bytes.Contains(ju, []byte("DNS should")) {
			t.Error("broken-dns: the JUnit report does not name the failed DNS tests")
		}
	}
}

func scaleCoreDNS(kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := cs.AppsV1().Deployments("kube-system").GetScale(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		return err
	}
	s.Spec.Replicas = 0
	_, err = cs.AppsV1().Deployments("kube-system").UpdateScale(ctx, "coredns", s, metav1.UpdateOptions{})
	return err
}
