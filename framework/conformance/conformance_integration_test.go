package conformance

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/runtimetest"
)

// fakeGinkgo stands in for the conformance image's ginkgo: it prints its
// arguments, its user and the kubeconfig's first line, then with
// MODE=hang prints and waits; otherwise it writes a JUnit report (as
// e2e.test's, with the suite's setup nodes) with a passed and a failed
// test where e2e.test writes it, and a JSON report (as ginkgo's, where
// its --output-dir and --json-report say) where the passed one took two
// attempts, and exits 1, as ginkgo does when a test failed.
const fakeGinkgo = `#!/bin/sh
echo "fake ginkgo $*"
echo "uid=$(id -u) gid=$(id -g) kubeconfig=$(head -n 1 /tmp/kubeconfig)"
for a in "$@"; do case "$a" in
  --report-prefix=*) p="${a#--report-prefix=}";;
  --output-dir=*) od="${a#--output-dir=}";;
  --json-report=*) jr="${a#--json-report=}";;
esac; done
if [ "$MODE" = hang ]; then echo hanging; exec sleep 600; fi
cat > "/output/junit_${p}01.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
  <testsuites tests="4" disabled="0" errors="0" failures="1" time="12.5">
      <testsuite name="Kubernetes e2e suite" package="/usr/local/bin" tests="4" disabled="0" skipped="0" errors="0" failures="1" time="12.5">
          <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="0.5"></testcase>
          <testcase name="[It] [sig-network] Services should serve a basic endpoint from pods  [Conformance]" classname="Kubernetes e2e suite" status="failed" time="7.4">
              <failure message="" type="failed">[FAILED] service not reachable&#xA;In [It] at: k8s.io/kubernetes/test/e2e/network/service.go:100 @ 12/05/26 14:16:46.652&#xA;</failure>
          </testcase>
          <testcase name="[It] [sig-node] Pods should get a host IP [NodeConformance] [Conformance]" classname="Kubernetes e2e suite" status="passed" time="4.6"></testcase>
          <testcase name="[SynchronizedAfterSuite]" classname="Kubernetes e2e suite" status="passed" time="0"></testcase>
      </testsuite>
  </testsuites>
EOF
cat > "$od/$jr" <<EOF
[{"SuiteDescription": "Kubernetes e2e suite", "SpecReports": [
  {"ContainerHierarchyTexts": ["[sig-node] Pods"], "LeafNodeType": "It", "LeafNodeText": "should get a host IP [NodeConformance] [Conformance]",
   "State": "passed", "NumAttempts": 2, "MaxFlakeAttempts": 3,
   "AdditionalFailures": [{"State": "failed", "Failure": {"Message": "Failure recorded during attempt 1:\\nno host IP"}}]}]}]
EOF
echo "Ran 2 of 2 Specs"
exit 1
`

// conformanceImage makes an image with fakeGinkgo at ginkgo's path, from
// the registry-free test image.
func conformanceImage(t *testing.T, ctx context.Context, rt runtime.Runtime, runID string) string {
	t.Helper()
	base, err := runtimetest.EnsureImage(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	name := "capd-e2e-it-conformance-" + runID
	if _, err := rt.RunContainer(ctx, runtime.ContainerSpec{Name: name, Image: base, Labels: runtime.RunLabels(runID, "integration-test", nil)}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rt.RemoveContainer(context.WithoutCancel(ctx), name) }()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "ginkgo", Mode: 0o755, Size: int64(len(fakeGinkgo))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(fakeGinkgo)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Output(ctx, rt, name, "mkdir", "-p", "/usr/local/bin"); err != nil {
		t.Fatal(err)
	}
	if err := rt.CopyTo(ctx, name, "/usr/local/bin", &buf); err != nil {
		t.Fatal(err)
	}
	ref := "capd-e2e.local/conformance-test:" + runID
	if _, err := rt.Commit(ctx, name, runtime.CommitOptions{Ref: ref}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.RemoveImage(context.Background(), ref) })
	return ref
}

// TestIntegrationRun runs the runner against the real engine: a failed
// test is named, the output and the JUnit are kept, the container is
// gone; a run past its timeout ends at it, keeps what it printed and
// leaves nothing.
func TestIntegrationRun(t *testing.T) {
	rt := runtimetest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runID := runtime.NewRunID()
	image := conformanceImage(t, ctx, rt, runID)
	// Whatever a failed assertion leaves (containers, the network) goes
	// at the end; the checks below look for leftovers before it runs.
	runtimetest.RemoveRunOnCleanup(t, rt, runID)
	network := "capd-e2e-it-conformance-" + runID
	if _, err := rt.CreateNetwork(ctx, network, runtime.RunLabels(runID, "integration-test", nil)); err != nil {
		t.Fatal(err)
	}
	cluster := "it-" + runID
	labels := runtime.RunLabels(runID, "integration-test", map[string]string{leak.LabelTrackedCluster: cluster})
	left := func() []runtime.Container {
		cs, err := rt.ListContainers(ctx, runtime.Filter{Labels: map[string]string{runtime.LabelRunID: runID, leak.LabelTrackedCluster: cluster}})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	in := RunInput{
		Runtime: rt, Image: image, Kubeconfig: []byte("apiVersion: v1\nkind: Config\n"), Network: network,
		ArtifactsDir: filepath.Join(t.TempDir(), "kubetest", cluster), ClusterName: cluster,
		Config:      map[string]string{"ginkgo.skip": `\[Serial\]`, "ginkgo.focus": `\[Conformance\]`},
		GinkgoNodes: 2, NumberOfNodes: 2, Labels: labels, Timeout: time.Minute,
	}

	res, err := Run(ctx, in)
	if err == nil || !strings.HasPrefix(err.Error(), "conformance: 1 of 2 tests failed (0 skipped):\n"+
		"- [It] [sig-network] Services should serve a basic endpoint from pods  [Conformance]\n    [FAILED] service not reachable\n") {
		t.Errorf("Run = %v, want the failed test named", err)
	}
	log, _ := os.ReadFile(res.Log)
	for _, want := range []string{
		"fake ginkgo --nodes=2 --timeout=57s --no-color --json-report=ginkgo-report.json --output-dir=/output /usr/local/bin/e2e.test -- --kubeconfig=/tmp/kubeconfig",
		`--num-nodes=2 --ginkgo.focus=\[Conformance\] --ginkgo.skip=\[Serial\]` + "\n",
		fmt.Sprintf("uid=%d gid=%d kubeconfig=apiVersion: v1\n", os.Getuid(), os.Getgid()),
		"Ran 2 of 2 Specs\n",
	} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if res.Tests != 2 || res.Passed != 1 || res.Failed != 1 || res.ExitCode != 1 {
		t.Errorf("result = %+v", res)
	}
	wantFlaked := []Flake{{Name: "[It] [sig-node] Pods should get a host IP [NodeConformance] [Conformance]", Attempts: 2, Message: "no host IP"}}
	if !slices.Equal(res.Flaked, wantFlaked) {
		t.Errorf("flaked = %+v, want %+v", res.Flaked, wantFlaked)
	}
	// The JUnit is kept, and is the caller's.
	if fi, err := os.Stat(res.JUnit); err != nil || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
		t.Errorf("JUnit %q: %v, want a file of uid %d", res.JUnit, err, os.Getuid())
	}
	if cs := left(); len(cs) != 0 {
		t.Errorf("containers left after the run: %+v", cs)
	}

	in.Env, in.Timeout = []string{"MODE=hang"}, 5*time.Second
	start := time.Now()
	res, err = Run(ctx, in)
	if err == nil || err.Error() != "conformance: the run timed out after 5s (log: "+res.Log+")" {
		t.Errorf("Run past its timeout = %v", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the timed-out run took %s", took)
	}
	log, _ = os.ReadFile(res.Log)
	if !strings.Contains(string(log), "hanging\n") || !strings.Contains(string(log), "capd-e2e: the conformance run timed out after 5s") {
		t.Errorf("log of the timed-out run = %q", log)
	}
	if cs := left(); len(cs) != 0 {
		t.Errorf("containers left after the timeout: %+v", cs)
	}
}
