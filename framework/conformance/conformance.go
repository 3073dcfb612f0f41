// Package conformance runs Kubernetes' conformance suite against a
// workload cluster: the ginkgo CLI driving e2e.test, both in a
// conformance image (registry.k8s.io/conformance:<version>, which the
// image factory builds), in a container of the engine made through
// framework/runtime, so on Podman's Docker-API service too.
//
// It does what Cluster API's kubetest.Run (sigs.k8s.io/cluster-api/test
// v1.14.2, framework/kubetest) does, with the same command line, mounts and
// report layout, and is ours because that one falls short for a harness
// that must leave nothing behind and say what failed: it runs through
// CAPD's own Docker client, not our runtime; it puts no label on its
// container and never removes it; it streams the output only to the
// Ginkgo writer, not to a file as it runs; it has no deadline of its own;
// and its failure is an exit code, without the failed tests' names. Its
// flags also come in map order, so two runs of one configuration differ.
package conformance

import (
	"bufio"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/reporters"
	"sigs.k8s.io/yaml"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Engine is what a run needs of the container engine.
type Engine interface {
	InspectImage(ctx context.Context, ref string) (runtime.Image, error)
	RunContainer(ctx context.Context, spec runtime.ContainerSpec) (string, error)
	FollowLogs(ctx context.Context, nameOrID string, stdout, stderr io.Writer) error
	Wait(ctx context.Context, nameOrID string) (int, error)
	RemoveContainer(ctx context.Context, nameOrID string) error
}

var _ Engine = runtime.Runtime(nil)

// Paths inside the container, upstream's.
const (
	ginkgoPath     = "/usr/local/bin/ginkgo"
	e2eTestPath    = "/usr/local/bin/e2e.test"
	kubeconfigPath = "/tmp/kubeconfig"
	outputDir      = "/output"
	// LogFile is the run's output, in RunInput.ArtifactsDir.
	LogFile = "e2e.log"
)

// RunInput is one run of the conformance suite.
type RunInput struct {
	// Runtime starts the container. Required.
	Runtime Engine
	// Image is the conformance image, which must be in the engine: it is
	// never pulled (make images builds it). Required.
	Image string
	// Kubeconfig is the workload cluster's kubeconfig; its server must be
	// reachable from Network. Required.
	Kubeconfig []byte
	// Network is the engine network the container joins. If unset, "kind",
	// where CAPD puts the cluster's load balancer.
	Network string
	// ArtifactsDir receives the output (LogFile), e2e.test's JUnit and
	// e2e-output/, and the kubeconfig under config/. Required; created.
	ArtifactsDir string
	// ClusterName names the report (e2e.test's report prefix
	// "kubetest.<ClusterName>.") and the container. Required.
	ClusterName string
	// Config are e2e.test's flags, from a configuration file (ReadConfig):
	// each becomes --key=value, in key order, after the runner's own.
	Config map[string]string
	// GinkgoNodes is how many ginkgo processes run the tests at once. If
	// unset, 1.
	GinkgoNodes int
	// NumberOfNodes is e2e.test's --num-nodes: the schedulable nodes.
	// Required.
	NumberOfNodes int
	// Labels are put on the container, so that a leak check finds it.
	// Required.
	Labels map[string]string
	// Timeout bounds the run, from the container's start to its end.
	// Required.
	Timeout time.Duration
	// Env is added to the container's environment (e.g.
	// KUBE_TEST_REPO_LIST).
	Env []string
	// Output, if set, also receives the output as it runs (GinkgoWriter).
	Output io.Writer
}

// Failure is one failed test.
type Failure struct {
	// Name is the test's full text, e.g. "[sig-network] DNS should
	// provide DNS for services [Conformance]".
	Name string
	// Message is the start of its failure message (maxMessageLines
	// non-empty lines).
	Message string
}

// Result is what a run left.
type Result struct {
	// Tests counts the JUnit's test cases; Passed, Failed (failures and
	// errors) and Skipped (the tests the focus left out are among them)
	// split it.
	Tests, Passed, Failed, Skipped int
	// Failures are the failed tests, in the JUnit's order.
	Failures []Failure
	// Duration is how long the container ran.
	Duration time.Duration
	// JUnit is e2e.test's JUnit report, "" if it wrote none.
	JUnit string
	// Log is the output.
	Log string
	// ExitCode is ginkgo's.
	ExitCode int
}

const maxMessageLines = 5

// Run runs the suite and returns what it left, with an error when the run
// could not start, did not end within the timeout, or any test failed
// (the error names each failed test). The container is removed whatever
// happens; the output and JUnit stay in in.ArtifactsDir.
func Run(ctx context.Context, in RunInput) (Result, error) {
	if err := in.validate(); err != nil {
		return Result{}, err
	}
	if _, err := in.Runtime.InspectImage(ctx, in.Image); err != nil {
		if errors.Is(err, runtime.ErrNotFound) {
			return Result{}, fmt.Errorf("conformance: image %s is not in the engine: build it first (make images, with a conformance spec selected)", in.Image)
		}
		return Result{}, fmt.Errorf("conformance: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(in.ArtifactsDir, "config"), 0o755); err != nil {
		return Result{}, fmt.Errorf("conformance: %w", err)
	}
	kubeconfig := filepath.Join(in.ArtifactsDir, "config", "kubeconfig")
	if err := os.WriteFile(kubeconfig, in.Kubeconfig, 0o600); err != nil {
		return Result{}, fmt.Errorf("conformance: %w", err)
	}
	abs, err := filepath.Abs(in.ArtifactsDir)
	if err != nil {
		return Result{}, fmt.Errorf("conformance: %w", err)
	}
	res := Result{Log: filepath.Join(in.ArtifactsDir, LogFile)}
	logf, err := os.Create(res.Log)
	if err != nil {
		return res, fmt.Errorf("conformance: %w", err)
	}
	defer logf.Close()

	network := in.Network
	if network == "" {
		network = "kind"
	}
	name := "capd-e2e-conformance-" + in.ClusterName + "-" + runtime.NewRunID()[:6]
	spec := runtime.ContainerSpec{
		Name:       name,
		Image:      in.Image,
		Entrypoint: []string{ginkgoPath},
		Cmd:        in.args(),
		Env:        in.Env,
		Labels:     in.Labels,
		Network:    network,
		// The files it writes are the caller's.
		User: fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
		Binds: []string{
			filepath.Join(abs, "config", "kubeconfig") + ":" + kubeconfigPath + ":ro",
			abs + ":" + outputDir,
		},
	}
	// The container goes whatever happens, with a context of its own: the
	// caller's may have ended.
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = in.Runtime.RemoveContainer(rctx, name)
	}()
	runCtx, cancel := context.WithTimeout(ctx, in.Timeout)
	defer cancel()
	start := time.Now()
	if _, err := in.Runtime.RunContainer(runCtx, spec); err != nil {
		return res, fmt.Errorf("conformance: start %s: %w", in.Image, err)
	}
	// Written as it comes (a file is not buffered), so that a killed run
	// leaves what it printed.
	var out io.Writer = logf
	if in.Output != nil {
		out = io.MultiWriter(logf, in.Output)
	}
	ferr := in.Runtime.FollowLogs(runCtx, name, out, out)
	code, werr := in.Runtime.Wait(runCtx, name)
	res.Duration = time.Since(start)
	res.ExitCode = code
	if runCtx.Err() != nil {
		why := "timed out after " + in.Timeout.String()
		if ctx.Err() != nil {
			why = "was cancelled (" + context.Cause(ctx).Error() + ")"
		}
		fmt.Fprintf(logf, "\ncapd-e2e: the conformance run %s; its container is removed\n", why)
		res.JUnit, _ = res.readJUnit(in)
		return res, fmt.Errorf("conformance: the run %s (log: %s)", why, res.Log)
	}
	if werr != nil {
		return res, fmt.Errorf("conformance: wait for %s: %w (log: %s)", name, werr, res.Log)
	}
	if ferr != nil {
		fmt.Fprintf(logf, "\ncapd-e2e: following the output broke: %v\n", ferr)
	}
	junit, jerr := res.readJUnit(in)
	res.JUnit = junit
	switch {
	case jerr != nil && code != 0:
		return res, fmt.Errorf("conformance: ginkgo exited with %d and e2e.test wrote no JUnit (%v); the log's last lines:\n%s\nlog: %s",
			code, jerr, tail(res.Log, 20), res.Log)
	case jerr != nil:
		return res, fmt.Errorf("conformance: %w (log: %s)", jerr, res.Log)
	case res.Failed > 0:
		return res, res.failureError()
	case code != 0:
		return res, fmt.Errorf("conformance: ginkgo exited with %d though no test failed; the log's last lines:\n%s\nlog: %s, junit: %s",
			code, tail(res.Log, 20), res.Log, res.JUnit)
	case res.Passed == 0:
		return res, fmt.Errorf("conformance: no test ran (the configuration's focus and skip select none?) (log: %s, junit: %s)", res.Log, res.JUnit)
	}
	return res, nil
}

func (in RunInput) validate() error {
	var missing []string
	for field, unset := range map[string]bool{
		"Runtime": in.Runtime == nil, "Image": in.Image == "", "Kubeconfig": len(in.Kubeconfig) == 0,
		"ArtifactsDir": in.ArtifactsDir == "", "ClusterName": in.ClusterName == "",
		"NumberOfNodes": in.NumberOfNodes <= 0, "Labels": len(in.Labels) == 0, "Timeout": in.Timeout <= 0,
	} {
		if unset {
			missing = append(missing, field)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("conformance: RunInput needs %s", strings.Join(missing, ", "))
	}
	if in.GinkgoNodes < 0 {
		return fmt.Errorf("conformance: RunInput.GinkgoNodes is %d", in.GinkgoNodes)
	}
	return nil
}

// reportPrefix is e2e.test's --report-prefix, upstream's.
func (in RunInput) reportPrefix() string { return "kubetest." + in.ClusterName + "." }

// args are ginkgo's arguments: its own, e2e.test, then e2e.test's after
// "--": the runner's, then in.Config's in key order.
func (in RunInput) args() []string {
	nodes := max(in.GinkgoNodes, 1)
	args := []string{
		fmt.Sprintf("--nodes=%d", nodes),
		// ginkgo's own default suite timeout is an hour. A little less
		// than the run's: at its timeout ginkgo stops the tests, reports
		// those that were running and e2e.test writes its JUnit, before
		// the runner's deadline removes the container.
		"--timeout=" + ginkgoTimeout(in.Timeout).String(),
		// The output goes to files and CI logs, not a terminal.
		"--no-color",
		e2eTestPath, "--",
		"--kubeconfig=" + kubeconfigPath,
		"--provider=skeleton",
		"--report-dir=" + outputDir,
		"--e2e-output-dir=" + outputDir + "/e2e-output",
		"--dump-logs-on-failure=false",
		"--report-prefix=" + in.reportPrefix(),
		fmt.Sprintf("--num-nodes=%d", in.NumberOfNodes),
	}
	for _, k := range slices.Sorted(maps.Keys(in.Config)) {
		args = append(args, "--"+k+"="+in.Config[k])
	}
	return args
}

// ginkgoTimeout is ginkgo's suite timeout within a run of timeout: 95%
// of it, at most two minutes less.
func ginkgoTimeout(timeout time.Duration) time.Duration {
	return timeout - min(timeout/20, 2*time.Minute)
}

// readJUnit reads e2e.test's JUnit into r's counts and failures and
// returns its path.
func (r *Result) readJUnit(in RunInput) (string, error) {
	path := filepath.Join(in.ArtifactsDir, "junit_"+in.reportPrefix()+"01.xml")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read e2e.test's JUnit: %w", err)
	}
	var suites reporters.JUnitTestSuites
	if err := xml.Unmarshal(data, &suites); err != nil {
		return path, fmt.Errorf("read e2e.test's JUnit %s: %w", path, err)
	}
	for _, s := range suites.TestSuites {
		for _, tc := range s.TestCases {
			r.Tests++
			switch {
			case tc.Failure != nil:
				r.Failed++
				r.Failures = append(r.Failures, Failure{Name: tc.Name, Message: firstLines(tc.Failure.Message + "\n" + tc.Failure.Description)})
			case tc.Error != nil:
				r.Failed++
				r.Failures = append(r.Failures, Failure{Name: tc.Name, Message: firstLines(tc.Error.Message + "\n" + tc.Error.Description)})
			case tc.Skipped != nil:
				r.Skipped++
			default:
				r.Passed++
			}
		}
	}
	return path, nil
}

// failureError names each failed test with the start of its message.
func (r Result) failureError() error {
	var b strings.Builder
	fmt.Fprintf(&b, "conformance: %d of %d tests failed (%d skipped):\n", r.Failed, r.Passed+r.Failed, r.Skipped)
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "- %s\n", f.Name)
		for _, l := range strings.Split(f.Message, "\n") {
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	fmt.Fprintf(&b, "log: %s, junit: %s", r.Log, r.JUnit)
	return errors.New(b.String())
}

// firstLines returns the first maxMessageLines non-empty lines of s.
func firstLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
			if len(out) == maxMessageLines {
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// ReadConfig reads a configuration file in upstream's
// KUBETEST_CONFIGURATION format: a flat YAML map of e2e.test flags to
// their values. A nested value is an error naming its key.
func ReadConfig(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("conformance configuration: %w", err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("conformance configuration %s: %w", path, err)
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		switch v := v.(type) {
		case map[string]any, []any:
			return nil, fmt.Errorf("conformance configuration %s: %s: a flag's value must be a string, not a %T", path, k, v)
		case nil:
			out[k] = ""
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	return out, nil
}

// GatherJUnit copies the JUnit files at the top of reportDir to
// artifactsRoot, each "_" in their names turned into ".", as upstream's
// GatherJUnitReports leaves them (junit.kubetest.<cluster>.01.xml), where
// Prow shows each test case. Copied, not moved: the run's folder keeps
// its own.
func GatherJUnit(artifactsRoot, reportDir string) error {
	entries, err := os.ReadDir(reportDir)
	if err != nil {
		return fmt.Errorf("gather JUnit: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, "junit") || filepath.Ext(name) != ".xml" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(reportDir, name))
		if err != nil {
			return fmt.Errorf("gather JUnit: %w", err)
		}
		if err := os.WriteFile(filepath.Join(artifactsRoot, strings.ReplaceAll(name, "_", ".")), data, 0o644); err != nil {
			return fmt.Errorf("gather JUnit: %w", err)
		}
	}
	return nil
}
