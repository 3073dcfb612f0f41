package conformance

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
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
	image  bool
	junit  string
	output string
	code   int
	hang   bool

	mu      sync.Mutex
	spec    runtime.ContainerSpec
	removed []string
}

func (e *engine) InspectImage(_ context.Context, ref string) (runtime.Image, error) {
	if !e.image {
		return runtime.Image{}, runtime.ErrNotFound
	}
	return runtime.Image{RepoTags: []string{ref}}, nil
}

func (e *engine) RunContainer(_ context.Context, spec runtime.ContainerSpec) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.spec = spec
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

func (e *engine) RemoveContainer(_ context.Context, name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.removed = append(e.removed, name)
	return nil
}

// junitOneFailed is e2e.test's JUnit (ginkgo's reporter) of a run with a
// passed, a failed and a skipped test.
const junitOneFailed = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" disabled="0" errors="0" failures="1" time="12.5">
  <testsuite name="Kubernetes e2e suite" package="/usr/local/bin" tests="3" disabled="0" skipped="1" errors="0" failures="1" time="12.5">
    <testcase name="[sig-node] Pods should get a host IP [NodeConformance] [Conformance]" classname="Kubernetes e2e suite" status="passed" time="5.1"></testcase>
    <testcase name="[sig-network] DNS should provide DNS for services [Conformance]" classname="Kubernetes e2e suite" status="failed" time="7.4">
      <failure message="[FAILED] Unable to read agnhost from pod dns-test" type="failed">[FAILED] Unable to read agnhost from pod dns-test&#xA;In [It] at: dns_common.go:480&#xA;&#xA;line three&#xA;line four&#xA;line five&#xA;line six</failure>
    </testcase>
    <testcase name="[sig-storage] Volumes should be mountable [Serial]" classname="Kubernetes e2e suite" status="skipped" time="0"><skipped message="skipped"></skipped></testcase>
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
	want := []string{"--nodes=4", "--timeout=57s", "--no-color", "/usr/local/bin/e2e.test", "--",
		"--kubeconfig=/tmp/kubeconfig", "--provider=skeleton", "--report-dir=/output", "--e2e-output-dir=/output/e2e-output",
		"--dump-logs-on-failure=false", "--report-prefix=kubetest.c1.", "--num-nodes=2",
		"--disable-log-dump=true", `--ginkgo.focus=\[Conformance\]`, `--ginkgo.skip=\[Serial\]`}
	if !slices.Equal(got, want) {
		t.Errorf("args =\n%q\nwant\n%q", got, want)
	}
}

func TestGinkgoTimeout(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{time.Minute: 57 * time.Second, 90 * time.Minute: 88 * time.Minute, 3 * time.Second: 2850 * time.Millisecond} {
		if got := ginkgoTimeout(in); got != want {
			t.Errorf("ginkgoTimeout(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestRunNamesTheFailedTests(t *testing.T) {
	e := &engine{image: true, junit: junitOneFailed, output: "Running Suite: Kubernetes e2e suite\n", code: 1}
	in := input(t, e)
	res, err := Run(context.Background(), in)
	if err == nil {
		t.Fatal("Run succeeded with a failed test")
	}
	for _, want := range []string{
		"conformance: 1 of 2 tests failed (1 skipped):\n",
		"- [sig-network] DNS should provide DNS for services [Conformance]\n    [FAILED] Unable to read agnhost from pod dns-test\n",
		"line four\n",
		"log: " + filepath.Join(in.ArtifactsDir, "e2e.log"),
		"junit: " + filepath.Join(in.ArtifactsDir, "junit_kubetest.c1.01.xml"),
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "line six") {
		t.Errorf("error has more than %d lines of the message:\n%v", maxMessageLines, err)
	}
	if res.Tests != 3 || res.Passed != 1 || res.Failed != 1 || res.Skipped != 1 || len(res.Failures) != 1 || res.ExitCode != 1 {
		t.Errorf("result = %+v", res)
	}
	if log, _ := os.ReadFile(res.Log); string(log) != e.output {
		t.Errorf("log = %q, want the output", log)
	}
	if kc, _ := os.ReadFile(filepath.Join(in.ArtifactsDir, "config", "kubeconfig")); string(kc) != string(in.Kubeconfig) {
		t.Errorf("kubeconfig not written: %q", kc)
	}
	if len(e.removed) != 1 || e.removed[0] != e.spec.Name || !strings.HasPrefix(e.spec.Name, "capd-e2e-conformance-c1-") {
		t.Errorf("container %q, removed %v", e.spec.Name, e.removed)
	}
	if e.spec.Network != "kind" || e.spec.Labels["e2e.capd.x-k8s.io/cluster"] != "c1" || e.spec.Entrypoint[0] != "/usr/local/bin/ginkgo" ||
		!strings.HasSuffix(e.spec.Binds[0], "/config/kubeconfig:/tmp/kubeconfig:ro") || !strings.HasSuffix(e.spec.Binds[1], ":/output") {
		t.Errorf("container spec = %+v", e.spec)
	}
}

func TestRunPasses(t *testing.T) {
	passed := strings.Replace(junitOneFailed, `status="failed"`, `status="passed"`, 1)
	i, j := strings.Index(passed, "<failure"), strings.Index(passed, "</failure>")
	passed = passed[:i] + passed[j+len("</failure>"):]
	res, err := Run(context.Background(), input(t, &engine{image: true, junit: passed}))
	if err != nil || res.Passed != 2 || res.Failed != 0 {
		t.Errorf("Run = %+v, %v", res, err)
	}
}

func TestRunTimesOutAndRemovesItsContainer(t *testing.T) {
	e := &engine{image: true, output: "started\n", hang: true}
	in := input(t, e)
	in.Timeout = 200 * time.Millisecond
	_, err := Run(context.Background(), in)
	if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") {
		t.Fatalf("Run = %v, want a timeout", err)
	}
	if len(e.removed) != 1 {
		t.Errorf("removed %v, want the container", e.removed)
	}
	log, _ := os.ReadFile(filepath.Join(in.ArtifactsDir, "e2e.log"))
	if !strings.HasPrefix(string(log), "started\n") || !strings.Contains(string(log), "timed out") {
		t.Errorf("log = %q, want the output kept and the timeout said", log)
	}
}

func TestRunExitWithoutJUnit(t *testing.T) {
	e := &engine{image: true, output: "flag provided but not defined: -bogus\n", code: 1}
	_, err := Run(context.Background(), input(t, e))
	if err == nil || !strings.Contains(err.Error(), "exited with 1 and e2e.test wrote no JUnit") || !strings.Contains(err.Error(), "-bogus") {
		t.Errorf("Run = %v, want the exit code and the log's end", err)
	}
}

func TestRunBadInput(t *testing.T) {
	e := &engine{image: true}
	in := input(t, e)
	in.Image, in.Labels, in.Timeout = "", nil, 0
	_, err := Run(context.Background(), in)
	if err == nil || err.Error() != "conformance: RunInput needs Image, Labels, Timeout" {
		t.Errorf("Run = %v", err)
	}
	in = input(t, &engine{})
	_, err = Run(context.Background(), in)
	if err == nil || !strings.Contains(err.Error(), "image registry.k8s.io/conformance:v1.37.2 is not in the engine") {
		t.Errorf("Run without the image = %v", err)
	}
	if e.spec.Name != "" {
		t.Errorf("a container was started: %+v", e.spec)
	}
}

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	flat := filepath.Join(dir, "flat.yaml")
	if err := os.WriteFile(flat, []byte("ginkgo.focus: \\[Conformance\\]\ndisable-log-dump: true\nginkgo.flake-attempts: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadConfig(flat)
	if err != nil || got["ginkgo.focus"] != `\[Conformance\]` || got["disable-log-dump"] != "true" || got["ginkgo.flake-attempts"] != "3" {
		t.Errorf("ReadConfig = %v, %v", got, err)
	}
	nested := filepath.Join(dir, "nested.yaml")
	if err := os.WriteFile(nested, []byte("ginkgo:\n  focus: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadConfig(nested); err == nil || !strings.Contains(err.Error(), "ginkgo: a flag's value must be a string") {
		t.Errorf("ReadConfig of a nested map = %v", err)
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
}
