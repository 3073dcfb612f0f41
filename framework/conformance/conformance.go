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
//
// It must not pull the conformance image (a run never waits on a
// registry: the image is built beforehand) and must not leave its
// container behind, whatever the outcome.
package conformance

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/util/validation/field"

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

// DefaultNetwork is the engine network CAPD puts machines and load
// balancers on, and the run's container joins by default.
const DefaultNetwork = "kind"

// Paths inside the container, upstream's.
const (
	ginkgoPath     = "/usr/local/bin/ginkgo"
	e2eTestPath    = "/usr/local/bin/e2e.test"
	kubeconfigPath = "/tmp/kubeconfig"
	outputDir      = "/output"
	// LogFile is the run's output, in RunInput.ArtifactsDir.
	LogFile = "e2e.log"
	// ReportFile is ginkgo's JSON report, in RunInput.ArtifactsDir: every
	// spec's attempts, which the JUnit does not say (a test that failed,
	// then passed on a retry of ginkgo.flake-attempts, is "passed" there).
	ReportFile = "ginkgo-report.json"
)

// removeTimeout bounds the removal of the container once the run ended,
// on a context of its own: the run's may be the reason it ended.
const removeTimeout = time.Minute

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
	// Network is the engine network the container joins. If unset,
	// DefaultNetwork, where CAPD puts the cluster's load balancer.
	Network string
	// ArtifactsDir receives the output (LogFile), e2e.test's JUnit and
	// e2e-output/. Required; created. The kubeconfig is not put there
	// (upstream's runner writes it to config/): it holds the cluster's
	// admin key, and a CI system publishes the artifacts.
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
	// KUBE_TEST_REPO_LIST, naming a file the image holds).
	Env []string
	// Output, if set, also receives the output as it runs (GinkgoWriter).
	Output io.Writer
}

// containerNameRE is what a cluster name must be to name the container
// and the report files: a Docker container name's characters, no path.
var containerNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// validate checks the input before anything is created, naming each
// field that is wrong.
func (in RunInput) validate() error {
	var errs field.ErrorList
	required := func(f string, unset bool) {
		if unset {
			errs = append(errs, field.Required(field.NewPath(f), ""))
		}
	}
	required("Runtime", in.Runtime == nil)
	required("Image", in.Image == "")
	if in.Image != "" {
		if _, err := name.ParseReference(in.Image, name.WeakValidation); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("Image"), in.Image, err.Error()))
		}
	}
	required("Kubeconfig", len(in.Kubeconfig) == 0)
	required("ArtifactsDir", in.ArtifactsDir == "")
	required("ClusterName", in.ClusterName == "")
	if in.ClusterName != "" && !containerNameRE.MatchString(in.ClusterName) {
		errs = append(errs, field.Invalid(field.NewPath("ClusterName"), in.ClusterName, "must match "+containerNameRE.String()))
	}
	if in.GinkgoNodes < 0 {
		errs = append(errs, field.Invalid(field.NewPath("GinkgoNodes"), in.GinkgoNodes, "must not be negative"))
	}
	required("NumberOfNodes", in.NumberOfNodes <= 0)
	required("Labels", len(in.Labels) == 0)
	required("Timeout", in.Timeout <= 0)
	if len(errs) > 0 {
		return fmt.Errorf("conformance: RunInput: %w", errs.ToAggregate())
	}
	return nil
}

// Result is what a run left.
type Result struct {
	// Tests counts the specs in the JUnit (not the suite's setup and
	// teardown nodes, which ginkgo reports beside them); Passed, Failed
	// (failed, timed out, interrupted, panicked) and Skipped (the specs
	// the focus left out are among them) split it.
	Tests, Passed, Failed, Skipped int
	// Failures are the failed specs and setup nodes, in the JUnit's order.
	Failures []Failure
	// Flaked are the specs that failed, then passed on a retry (the
	// configuration's ginkgo.flake-attempts), from ginkgo's JSON report;
	// they count as passed. Nil when there was no report to read
	// (FlakesUnknown says why).
	Flaked []Flake
	// FlakesUnknown, if set, is why the flaked specs are not known.
	FlakesUnknown string
	// Duration is how long the container ran.
	Duration time.Duration
	// JUnit is e2e.test's JUnit report, "" if it wrote none.
	JUnit string
	// Log is the output.
	Log string
	// ExitCode is ginkgo's; -1 if it did not run to its end (it did not
	// start, timed out or was cancelled).
	ExitCode int
}

// Run runs the suite and returns what it left, with an error when the run
// could not start, did not end within the timeout, or any test failed
// (the error names each failed test). The container is removed whatever
// happens; the output and JUnit stay in in.ArtifactsDir.
func Run(ctx context.Context, in RunInput) (_ Result, err error) {
	if err := in.validate(); err != nil {
		return Result{}, err
	}
	if _, err := in.Runtime.InspectImage(ctx, in.Image); err != nil {
		if errors.Is(err, runtime.ErrNotFound) {
			return Result{}, fmt.Errorf("conformance: image %s is not in the engine: build it first (make images, with a conformance spec selected); it is never pulled", in.Image)
		}
		return Result{}, fmt.Errorf("conformance: %w", err)
	}
	abs, err := filepath.Abs(in.ArtifactsDir)
	if err != nil {
		return Result{}, fmt.Errorf("conformance: %w", err)
	}
	// Upstream's layout; e2e.test writes into e2e-output but does not
	// create it.
	if err := os.MkdirAll(filepath.Join(abs, "e2e-output"), 0o755); err != nil {
		return Result{}, fmt.Errorf("conformance: %w", err)
	}
	// The kubeconfig, with the cluster's admin key, goes to a private
	// folder outside the artifacts, mounted read-only, and is removed
	// when the run ends (after the container: defers run last first).
	private, err := os.MkdirTemp("", "capd-e2e-conformance-")
	if err != nil {
		return Result{}, fmt.Errorf("conformance: %w", err)
	}
	defer os.RemoveAll(private)
	kubeconfig := filepath.Join(private, "kubeconfig")
	if err := os.WriteFile(kubeconfig, in.Kubeconfig, 0o600); err != nil {
		return Result{}, fmt.Errorf("conformance: %w", err)
	}
	// A report left by an earlier run in the same folder must not pass
	// for this one's.
	for _, p := range []string{in.junitPath(), in.reportPath()} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return Result{}, fmt.Errorf("conformance: %w", err)
		}
	}
	res := Result{Log: filepath.Join(in.ArtifactsDir, LogFile), ExitCode: -1}
	logf, err := os.Create(res.Log)
	if err != nil {
		return res, fmt.Errorf("conformance: %w", err)
	}
	defer logf.Close()
	// Written as it comes (an os.File does not buffer), so that a killed
	// harness leaves what the run printed.
	var out io.Writer = logf
	if in.Output != nil {
		out = io.MultiWriter(logf, in.Output)
	}

	network := in.Network
	if network == "" {
		network = DefaultNetwork
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
			kubeconfig + ":" + kubeconfigPath + ":ro",
			abs + ":" + outputDir,
		},
	}
	// The container goes whatever happens (RemoveContainer kills it if it
	// runs), with a context of its own: the caller's may have ended.
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
		defer cancel()
		if rerr := in.Runtime.RemoveContainer(rctx, name); rerr != nil {
			fmt.Fprintf(out, "\ncapd-e2e: remove the conformance container: %v\n", rerr)
			err = errors.Join(err, fmt.Errorf("conformance: remove container %q: %w", name, rerr))
		}
	}()
	runCtx, cancel := context.WithTimeout(ctx, in.Timeout)
	defer cancel()
	start := time.Now()
	if _, err := in.Runtime.RunContainer(runCtx, spec); err != nil {
		return res, fmt.Errorf("conformance: start %s: %w", in.Image, err)
	}
	ferr := in.Runtime.FollowLogs(runCtx, name, out, out)
	code, werr := in.Runtime.Wait(runCtx, name)
	res.Duration = time.Since(start)
	if werr != nil {
		if runCtx.Err() == nil {
			return res, fmt.Errorf("conformance: wait for container %q: %w (log: %s)", name, werr, res.Log)
		}
		why := "timed out after " + in.Timeout.String()
		if ctx.Err() != nil {
			why = "was cancelled (" + context.Cause(ctx).Error() + ")"
		}
		fmt.Fprintf(out, "\ncapd-e2e: the conformance run %s; its container is removed\n", why)
		where := "log: " + res.Log
		// A report is there only if e2e.test got to write it.
		if res.readJUnit(in.junitPath()) == nil {
			where += ", junit: " + res.JUnit
		}
		return res, fmt.Errorf("conformance: the run %s (%s)", why, where)
	}
	res.ExitCode = code
	if ferr != nil {
		fmt.Fprintf(out, "\ncapd-e2e: following the output broke: %v\n", ferr)
	}
	jerr := res.readJUnit(in.junitPath())
	if ferr := res.readFlakes(in.reportPath()); ferr != nil {
		res.FlakesUnknown = ferr.Error()
		fmt.Fprintf(out, "\ncapd-e2e: which tests flaked is not known: %v\n", ferr)
	}
	switch {
	case jerr != nil && code != 0:
		return res, fmt.Errorf("conformance: ginkgo exited with %d and left no JUnit report to read (%v); the log's last lines:\n%s\nlog: %s",
			code, jerr, tail(res.Log, 20), res.Log)
	case jerr != nil:
		return res, fmt.Errorf("conformance: %w (log: %s)", jerr, res.Log)
	case len(res.Failures) > 0:
		return res, res.failureError()
	case code != 0:
		return res, fmt.Errorf("conformance: ginkgo exited with %d though no test failed; the log's last lines:\n%s\nlog: %s, junit: %s",
			code, tail(res.Log, 20), res.Log, res.JUnit)
	case res.Passed == 0:
		return res, fmt.Errorf("conformance: no test ran (the configuration's focus and skip select none?) (log: %s, junit: %s)", res.Log, res.JUnit)
	}
	return res, nil
}

// reportPrefix is e2e.test's --report-prefix, upstream's.
func (in RunInput) reportPrefix() string { return "kubetest." + in.ClusterName + "." }

// junitPath is where e2e.test writes its JUnit: "junit_" + the report
// prefix + "01.xml" in the report dir (k8s.io/kubernetes
// test/e2e/framework/test_context.go), one file however many ginkgo
// nodes ran, as ginkgo v2 merges their reports.
func (in RunInput) junitPath() string {
	return filepath.Join(in.ArtifactsDir, "junit_"+in.reportPrefix()+"01.xml")
}

// reportPath is where ginkgo writes its JSON report (ReportFile).
func (in RunInput) reportPath() string {
	return filepath.Join(in.ArtifactsDir, ReportFile)
}

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
		// Every spec's attempts, for the flaked ones (readFlakes); the
		// CLI merges its processes' reports into one file.
		"--json-report=" + ReportFile,
		"--output-dir=" + outputDir,
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
