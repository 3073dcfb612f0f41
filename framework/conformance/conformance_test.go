package conformance

import (
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// engine is a test double of Engine: the "container" writes junit (when
// set) into the bind-mounted report folder, prints output, and exits
// with code; with hang, it runs until the context ends.
type engine struct {
	image     bool
	junit     string
	report    []byte
	output    string
	code      int
	hang      bool
	removeErr error

	mu      sync.Mutex
	spec    runtime.ContainerSpec
	started bool
	removed []string
	// kubeconfig is what the container's kubeconfig mount held when it
	// started.
	kubeconfig []byte
}

var _ Engine = (*engine)(nil)

func (e *engine) InspectImage(_ context.Context, ref string) (runtime.Image, error) {
	if !e.image {
		return runtime.Image{}, runtime.ErrNotFound
	}
	return runtime.Image{RepoTags: []string{ref}}, nil
}

func (e *engine) RunContainer(_ context.Context, spec runtime.ContainerSpec) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.spec, e.started = spec, true
	if len(spec.Binds) > 0 {
		host, _, _ := strings.Cut(spec.Binds[0], ":")
		e.kubeconfig, _ = os.ReadFile(host)
	}
	if e.junit != "" {
		host, _, _ := strings.Cut(spec.Binds[1], ":")
		prefix := ""
		for _, a := range spec.Cmd {
			if p, ok := strings.CutPrefix(a, "--report-prefix="); ok {
				prefix = p
			}
		}
		if err := os.WriteFile(filepath.Join(host, "junit_"+prefix+"01.xml"), []byte(e.junit), 0o644); err != nil {
			return "", err
		}
	}
	if e.report != nil {
		host, _, _ := strings.Cut(spec.Binds[1], ":")
		if err := os.WriteFile(filepath.Join(host, ReportFile), e.report, 0o644); err != nil {
			return "", err
		}
	}
	return "id", nil
}

func (e *engine) FollowLogs(ctx context.Context, _ string, stdout, _ io.Writer) error {
	if _, err := io.WriteString(stdout, e.output); err != nil {
		return err
	}
	if e.hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (e *engine) Wait(ctx context.Context, _ string) (int, error) {
	if e.hang {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return e.code, nil
}

func (e *engine) RemoveContainer(ctx context.Context, name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	e.removed = append(e.removed, name)
	return e.removeErr
}

// fixture is e2e.test's JUnit of a run (ginkgo v2.32.0's JUnit reporter
// with Kubernetes' configuration, test/e2e/framework/internal/junit): the
// suite's setup and teardown nodes, then a timed-out, a failed, a passed
// and a skipped spec.
func fixture(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "junit_kubetest.c1.01.xml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

const (
	dnsTest        = "[It] [sig-network] DNS should provide DNS for services  [Conformance]"
	deploymentTest = "[It] [sig-apps] Deployment should run the lifecycle of a Deployment [Conformance]"
)

// junitPassed is a run where every spec passed.
const junitPassed = `<?xml version="1.0" encoding="UTF-8"?>
  <testsuites tests="3" disabled="0" errors="0" failures="0" time="5.2">
      <testsuite name="Kubernetes e2e suite" package="/usr/local/bin" tests="3" disabled="0" skipped="0" errors="0" failures="0" time="5.2">
          <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="0.1"></testcase>
          <testcase name="[It] [sig-node] Pods should get a host IP [NodeConformance] [Conformance]" classname="Kubernetes e2e suite" status="passed" time="5.1"></testcase>
          <testcase name="[SynchronizedAfterSuite]" classname="Kubernetes e2e suite" status="passed" time="0"></testcase>
      </testsuite>
  </testsuites>`

func input(t *testing.T, e *engine) RunInput {
	return RunInput{
		Runtime: e, Image: "registry.k8s.io/conformance:v1.37.2", Kubeconfig: []byte("apiVersion: v1\n"),
		ArtifactsDir: filepath.Join(t.TempDir(), "kubetest", "c1"), ClusterName: "c1",
		Config:      map[string]string{"ginkgo.skip": `\[Serial\]`, "ginkgo.focus": `\[Conformance\]`, "disable-log-dump": "true"},
		GinkgoNodes: 4, NumberOfNodes: 2, Labels: map[string]string{"e2e.capd.x-k8s.io/cluster": "c1"}, Timeout: time.Minute,
	}
}

func TestArgs(t *testing.T) {
	in := input(t, &engine{})
	got := in.args()
	want := []string{"--nodes=4", "--timeout=57s", "--no-color", "--json-report=ginkgo-report.json", "--output-dir=/output", "/usr/local/bin/e2e.test", "--",
		"--kubeconfig=/tmp/kubeconfig", "--provider=skeleton", "--report-dir=/output", "--e2e-output-dir=/output/e2e-output",
		"--dump-logs-on-failure=false", "--report-prefix=kubetest.c1.", "--num-nodes=2",
		"--disable-log-dump=true", `--ginkgo.focus=\[Conformance\]`, `--ginkgo.skip=\[Serial\]`}
	if !slices.Equal(got, want) {
		t.Errorf("args =\n%q\nwant\n%q", got, want)
	}
	in.GinkgoNodes, in.Config = 0, nil
	if got := in.args(); got[0] != "--nodes=1" || got[len(got)-1] != "--num-nodes=2" {
		t.Errorf("args without nodes and config = %q", got)
	}
}

func TestGinkgoTimeout(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{time.Minute: 57 * time.Second, 90 * time.Minute: 88 * time.Minute, 3 * time.Second: 2850 * time.Millisecond} {
		if got := ginkgoTimeout(in); got != want {
			t.Errorf("ginkgoTimeout(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestReadJUnit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(path, []byte(fixture(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := r.readJUnit(path); err != nil {
		t.Fatal(err)
	}
	// The four setup and teardown nodes are not tests.
	if r.Tests != 4 || r.Passed != 1 || r.Failed != 2 || r.Skipped != 1 || r.JUnit != path {
		t.Errorf("counts = %+v, want 4 tests: 1 passed, 2 failed, 1 skipped", r)
	}
	want := []Failure{
		{Name: deploymentTest, Message: "[TIMEDOUT] A spec timeout occurred\n" +
			"In [It] at: k8s.io/kubernetes/test/e2e/apps/deployment.go:184 @ 12/05/26 14:16:46.651\n" +
			"This is the Progress Report generated when the spec timeout occurred:\n" +
			"[sig-apps] Deployment should run the lifecycle of a Deployment [Conformance] (Spec Runtime: 101ms)\n" +
			"k8s.io/kubernetes/test/e2e/apps/deployment.go:184"},
		{Name: dnsTest, Message: "[FAILED] Unable to read agnhost from pod dns-8641/dns-test\n" +
			"Expected\n<string>: no answer\nto equal\n<string>: 10.96.0.10"},
	}
	if !slices.Equal(r.Failures, want) {
		t.Errorf("failures =\n%q\nwant\n%q", r.Failures, want)
	}

	if err := os.WriteFile(path, []byte("<testsuites><testsuite"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := (&Result{}).readJUnit(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("readJUnit of a broken file = %v, want an error naming it", err)
	}
}

func TestSuiteNode(t *testing.T) {
	for name, want := range map[string]bool{
		"[SynchronizedBeforeSuite]":                      true,
		"[ReportAfterSuite] Kubernetes e2e suite report": true,
		"[DeferCleanup (Suite)]":                         true,
		"[It] [sig-node] Pods should get a host IP":      false,
		// The reporter's OmitLeafNodeType leaves the spec's own tags first.
		"[sig-node] Pods should get a host IP": false,
		"Pods":                                 false,
	} {
		if got := suiteNode(name); got != want {
			t.Errorf("suiteNode(%q) = %t, want %t", name, got, want)
		}
	}
}

func TestRunNamesTheFailedTests(t *testing.T) {
	e := &engine{image: true, junit: fixture(t), output: "Running Suite: Kubernetes e2e suite\n", code: 1}
	in := input(t, e)
	res, err := Run(context.Background(), in)
	if err == nil {
		t.Fatal("Run succeeded with a failed test")
	}
	for _, want := range []string{
		"conformance: 2 of 3 tests failed (1 skipped):\n- " + deploymentTest + "\n    [TIMEDOUT] A spec timeout occurred\n",
		"- " + dnsTest + "\n    [FAILED] Unable to read agnhost from pod dns-8641/dns-test\n    Expected\n    <string>: no answer\n    to equal\n    <string>: 10.96.0.10\nlog: ",
		"log: " + filepath.Join(in.ArtifactsDir, "e2e.log") + ", junit: " + filepath.Join(in.ArtifactsDir, "junit_kubetest.c1.01.xml"),
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if res.Tests != 4 || res.Passed != 1 || res.Failed != 2 || res.Skipped != 1 || len(res.Failures) != 2 || res.ExitCode != 1 {
		t.Errorf("result = %+v", res)
	}
	if log, _ := os.ReadFile(res.Log); !strings.HasPrefix(string(log), e.output) {
		t.Errorf("log = %q, want the output first", log)
	}
	// The container got the kubeconfig; the artifacts never hold it (its
	// admin key would be published), and its private copy is gone.
	if string(e.kubeconfig) != string(in.Kubeconfig) {
		t.Errorf("the container's kubeconfig = %q, want the input's", e.kubeconfig)
	}
	mounted, _, _ := strings.Cut(e.spec.Binds[0], ":")
	if _, err := os.Stat(mounted); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the mounted kubeconfig %s is left after the run: %v", mounted, err)
	}
	if _, err := os.Stat(filepath.Join(in.ArtifactsDir, "config")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the artifacts have a config folder: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(in.ArtifactsDir, "e2e-output")); err != nil || !fi.IsDir() {
		t.Errorf("e2e-output not created: %v", err)
	}
	if len(e.removed) != 1 || e.removed[0] != e.spec.Name || !strings.HasPrefix(e.spec.Name, "capd-e2e-conformance-c1-") {
		t.Errorf("container %q, removed %v", e.spec.Name, e.removed)
	}
	abs, _ := filepath.Abs(in.ArtifactsDir)
	wantBinds := []string{mounted + ":/tmp/kubeconfig:ro", abs + ":/output"}
	if strings.HasPrefix(mounted, abs) {
		t.Errorf("the kubeconfig is mounted from %s, inside the artifacts %s", mounted, abs)
	}
	if e.spec.Network != "kind" || e.spec.Labels["e2e.capd.x-k8s.io/cluster"] != "c1" || !slices.Equal(e.spec.Entrypoint, []string{"/usr/local/bin/ginkgo"}) ||
		!slices.Equal(e.spec.Binds, wantBinds) || e.spec.Privileged || !slices.Equal(e.spec.Cmd, in.args()) {
		t.Errorf("container spec = %+v", e.spec)
	}
	if want := strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid()); e.spec.User != want {
		t.Errorf("container user %q, want the caller's %q", e.spec.User, want)
	}
}

func TestRunNamesTheFlakedTests(t *testing.T) {
	// ginkgo v2.32.0's JSON report of three specs run with
	// --ginkgo.flake-attempts=3: one failed once then passed, one passed,
	// one failed all three times.
	report, err := os.ReadFile(filepath.Join("testdata", "ginkgo-report.json"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), input(t, &engine{image: true, junit: junitPassed, report: report}))
	if err != nil {
		t.Fatal(err)
	}
	want := []Flake{{
		Name:     "[It] [sig-network] Services should be able to change the type from NodePort to ExternalName [Conformance]",
		Attempts: 2,
		Message:  "Unexpected error:\n<*errors.errorString>: nslookup failed\noccurred",
	}}
	if !slices.Equal(res.Flaked, want) || res.FlakesUnknown != "" {
		t.Errorf("flaked = %+v (unknown %q), want %+v", res.Flaked, res.FlakesUnknown, want)
	}
	// A run that left no report: the flakes are unknown, not none.
	res, err = Run(context.Background(), input(t, &engine{image: true, junit: junitPassed}))
	if err != nil || res.Flaked != nil || !strings.Contains(res.FlakesUnknown, "ginkgo-report.json: no such file") {
		t.Errorf("without a report: %+v, %v", res, err)
	}
	log, _ := os.ReadFile(res.Log)
	if !strings.Contains(string(log), "capd-e2e: which tests flaked is not known") {
		t.Errorf("log = %q, want the unknown flakes said", log)
	}
	// A broken report is said too.
	res, _ = Run(context.Background(), input(t, &engine{image: true, junit: junitPassed, report: []byte("{")}))
	if !strings.Contains(res.FlakesUnknown, "read ginkgo's JSON report") || res.Flaked != nil {
		t.Errorf("with a broken report: %+v", res)
	}
}

func TestRunSetupFailed(t *testing.T) {
	// The suite's setup failed, so every spec was skipped.
	junit := strings.Replace(junitPassed,
		`<testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="0.1"></testcase>`,
		`<testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="failed" time="0.1"><failure message="" type="failed">[FAILED] error waiting for all pods to be running and ready&#xA;In [SynchronizedBeforeSuite] at: k8s.io/kubernetes/test/e2e/e2e.go:249</failure></testcase>`, 1)
	junit = strings.Replace(junit, `status="passed" time="5.1"></testcase>`, `status="skipped" time="0"><skipped message="skipped"></skipped></testcase>`, 1)
	res, err := Run(context.Background(), input(t, &engine{image: true, junit: junit, code: 1}))
	if err == nil || !strings.HasPrefix(err.Error(), "conformance: 0 of 0 tests failed, and 1 of the suite's setup and teardown nodes (1 skipped):\n- [SynchronizedBeforeSuite]\n    [FAILED] error waiting") {
		t.Errorf("Run = %v, want the setup node named", err)
	}
	if res.Tests != 1 || res.Skipped != 1 || len(res.Failures) != 1 {
		t.Errorf("result = %+v", res)
	}
}

func TestRunPasses(t *testing.T) {
	res, err := Run(context.Background(), input(t, &engine{image: true, junit: junitPassed}))
	if err != nil || res.Tests != 1 || res.Passed != 1 || res.Failed != 0 || res.ExitCode != 0 || res.JUnit == "" {
		t.Errorf("Run = %+v, %v", res, err)
	}
}

func TestRunSelectsNoTest(t *testing.T) {
	junit := strings.Replace(junitPassed, `status="passed" time="5.1"></testcase>`, `status="skipped" time="0"><skipped message="skipped"></skipped></testcase>`, 1)
	_, err := Run(context.Background(), input(t, &engine{image: true, junit: junit}))
	if err == nil || !strings.Contains(err.Error(), "no test ran") {
		t.Errorf("Run with only skipped tests = %v", err)
	}
}

func TestRunTimesOutAndRemovesItsContainer(t *testing.T) {
	e := &engine{image: true, output: "started\n", hang: true}
	in := input(t, e)
	in.Timeout = 200 * time.Millisecond
	res, err := Run(context.Background(), in)
	if err == nil || err.Error() != "conformance: the run timed out after 200ms (log: "+res.Log+")" {
		t.Fatalf("Run = %v, want a timeout naming the log", err)
	}
	if len(e.removed) != 1 {
		t.Errorf("removed %v, want the container", e.removed)
	}
	if res.ExitCode != -1 {
		t.Errorf("exit code %d, want -1", res.ExitCode)
	}
	log, _ := os.ReadFile(filepath.Join(in.ArtifactsDir, "e2e.log"))
	if !strings.HasPrefix(string(log), "started\n") || !strings.Contains(string(log), "timed out") {
		t.Errorf("log = %q, want the output kept and the timeout said", log)
	}
}

func TestRunCancelledRemovesItsContainer(t *testing.T) {
	e := &engine{image: true, hang: true}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := Run(ctx, input(t, e))
	if err == nil || !strings.Contains(err.Error(), "the run was cancelled (context canceled)") {
		t.Errorf("Run = %v, want cancelled", err)
	}
	// Removed on a context of its own: the caller's had ended.
	if len(e.removed) != 1 {
		t.Errorf("removed %v, want the container", e.removed)
	}
}

func TestRunReportsAFailedRemoval(t *testing.T) {
	e := &engine{image: true, junit: junitPassed, removeErr: errors.New("engine gone")}
	_, err := Run(context.Background(), input(t, e))
	if err == nil || !strings.Contains(err.Error(), "remove container \"capd-e2e-conformance-c1-") || !strings.Contains(err.Error(), "engine gone") {
		t.Errorf("Run = %v, want the removal's error", err)
	}
}

func TestRunExitWithoutJUnit(t *testing.T) {
	e := &engine{image: true, output: "flag provided but not defined: -bogus\n", code: 1}
	in := input(t, e)
	// An earlier run's report in the same folder is not this one's.
	if err := os.MkdirAll(in.ArtifactsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in.junitPath(), []byte(junitPassed), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), in)
	if err == nil || !strings.Contains(err.Error(), "exited with 1 and left no JUnit report") || !strings.Contains(err.Error(), "-bogus") {
		t.Errorf("Run = %v, want the exit code and the log's end", err)
	}
}

func TestRunBadInput(t *testing.T) {
	e := &engine{image: true}
	in := input(t, e)
	in.Image, in.Labels, in.Timeout, in.ClusterName = "", nil, 0, "a/b"
	_, err := Run(context.Background(), in)
	want := `conformance: RunInput: [Image: Required value, ClusterName: Invalid value: "a/b": must match ^[a-zA-Z0-9][a-zA-Z0-9_.-]*$, Labels: Required value, Timeout: Required value]`
	if err == nil || err.Error() != want {
		t.Errorf("Run = %v\nwant %s", err, want)
	}
	if e.started {
		t.Errorf("a container was started: %+v", e.spec)
	}
	if _, err := os.Stat(in.ArtifactsDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the artifacts folder was made before the input was checked: %v", err)
	}

	in = input(t, e)
	in.Image, in.GinkgoNodes = "registry.k8s.io/Conformance:v1", -1
	if _, err := Run(context.Background(), in); err == nil || !strings.Contains(err.Error(), `Image: Invalid value: "registry.k8s.io/Conformance:v1"`) ||
		!strings.Contains(err.Error(), "GinkgoNodes: Invalid value: -1: must not be negative") {
		t.Errorf("Run with a bad image reference and ginkgo nodes = %v", err)
	}

	e = &engine{}
	_, err = Run(context.Background(), input(t, e))
	if err == nil || !strings.Contains(err.Error(), "image registry.k8s.io/conformance:v1.37.2 is not in the engine: build it first (make images") {
		t.Errorf("Run without the image = %v", err)
	}
	if e.started {
		t.Errorf("a container was started without its image: %+v", e.spec)
	}
}

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := ReadConfig(write("flat.yaml", "ginkgo.focus: \\[Conformance\\]\ndisable-log-dump: true\nginkgo.flake-attempts: 3\nginkgo.seed: 10000000\nempty:\n"))
	want := map[string]string{"ginkgo.focus": `\[Conformance\]`, "disable-log-dump": "true", "ginkgo.flake-attempts": "3", "ginkgo.seed": "10000000", "empty": ""}
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("ReadConfig = %q, %v\nwant %q", got, err, want)
	}
	if _, err := ReadConfig(write("nested.yaml", "ginkgo:\n  focus: x\n")); err == nil || !strings.Contains(err.Error(), "ginkgo: a flag's value must be a string, not a map") {
		t.Errorf("ReadConfig of a nested map = %v", err)
	}
	if _, err := ReadConfig(write("list.yaml", "a: b\nskip: [x, y]\n")); err == nil || !strings.Contains(err.Error(), "skip: a flag's value must be a string, not a list") {
		t.Errorf("ReadConfig of a list = %v", err)
	}
	if got, err := ReadConfig(write("empty.yaml", "")); err != nil || got == nil || len(got) != 0 {
		t.Errorf("ReadConfig of an empty file = %v, %v", got, err)
	}
	if _, err := ReadConfig(filepath.Join(dir, "nope.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadConfig of a missing file = %v", err)
	}
}

func TestGatherJUnit(t *testing.T) {
	root, report := t.TempDir(), t.TempDir()
	for _, f := range []string{"junit_kubetest.c1.01.xml", "e2e.log"} {
		if err := os.WriteFile(filepath.Join(report, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := GatherJUnit(root, report); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 || entries[0].Name() != "junit.kubetest.c1.01.xml" {
		t.Errorf("gathered %v", entries)
	}
	if _, err := os.Stat(filepath.Join(report, "junit_kubetest.c1.01.xml")); err != nil {
		t.Errorf("the report folder lost its JUnit: %v", err)
	}
	if err := GatherJUnit(root, filepath.Join(report, "nope")); err != nil {
		t.Errorf("GatherJUnit of a run that made no folder = %v", err)
	}
}
