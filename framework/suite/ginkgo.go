package suite

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/logs"
	logsv1 "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"sigs.k8s.io/cluster-api/test/framework/ginkgoextensions"

	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/report"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/suite/selection"
)

// Options configure a Suite.
type Options struct {
	// DefaultConfig is the default of -e2e.config, relative to the suite's
	// package directory. Required.
	DefaultConfig string

	// Requirements returns what the specs carrying any of labels need of
	// the config (with no labels: every spec's); setup checks those of the
	// selected specs before it creates anything. capd-e2e's specs give
	// theirs with e2e/specs.Requirements. If nil, nothing is checked before
	// setup (each spec still fails clearly on what it lacks).
	Requirements func(labels ...string) []Requirement

	// SetupTimeout bounds the setup node: kind, the image load,
	// cert-manager, clusterctl init (wait-controllers) and the webhook
	// check. If zero, 45 minutes.
	SetupTimeout time.Duration

	// TeardownTimeout bounds the teardown node: the management cluster's
	// logs, its deletion and the leak check. If zero, 15 minutes.
	TeardownTimeout time.Duration
}

// Default timeouts of the setup and teardown nodes (Options).
const (
	defaultSetupTimeout    = 45 * time.Minute
	defaultTeardownTimeout = 15 * time.Minute
)

// Suite wires Setup and Teardown into a Ginkgo suite, with upstream's
// flags. A provider's suite is:
//
//	var e2eSuite = suite.New(flag.CommandLine, suite.Options{
//		DefaultConfig: "config/e2e.yaml",
//		Requirements:  specs.Requirements,
//	})
//
//	func TestE2E(t *testing.T) { e2eSuite.Run(t, "my-provider-e2e") }
//
//	var _ = e2eSuite.RegisterSetupAndTeardown()
//
//	var _ = Describe("Quick start", func() {
//		specs.QuickStartSpec(func() specs.QuickStartSpecInput {
//			return specs.QuickStartSpecInput{CommonInput: specs.CommonInputFrom(e2eSuite.Environment())}
//		})
//	})
type Suite struct {
	// ConfigPath is -e2e.config.
	ConfigPath string
	// ArtifactFolder is -e2e.artifacts-folder; the ARTIFACTS environment
	// variable takes precedence, as upstream.
	ArtifactFolder string
	// ClusterctlConfig is -e2e.clusterctl-config.
	ClusterctlConfig string
	// UseExistingCluster is -e2e.use-existing-cluster: the cluster of the
	// current kubeconfig ($KUBECONFIG, or ~/.kube/config).
	UseExistingCluster bool
	// SkipCleanup is -e2e.skip-resource-cleanup.
	SkipCleanup bool
	// AlsoLogToFile is -e2e.also-log-to-file: Ginkgo's output, with
	// timestamps, also goes to ginkgo-log.txt in the artifacts folder.
	AlsoLogToFile bool
	// JUnitReport is -e2e.junit-report: the JUnit report's name in the
	// artifacts folder, written with metadata.json and report.html after
	// the suite (framework/report). Empty: none of the three.
	JUnitReport string
	// Scheme, if set before the suite runs, is the management cluster
	// client's scheme (DefaultScheme plus the provider's types).
	Scheme *apiruntime.Scheme
	// SelectionFile is -e2e.selection: when set, the suite runs nothing;
	// it checks the config for the selected specs and writes them, with
	// the images they need, to this file (framework/suite/selection), for
	// `make images` to build only those.
	SelectionFile string

	opts       Options
	logOptions *logs.Options
	env        *Environment
	// watcher outlives the suite's process 1 (watch.go); nil under a
	// supervisor.
	watcher *watcher
	// requirements are those of the specs that will run, found by Run.
	requirements []Requirement
}

// New registers upstream's suite flags on fs (flag.CommandLine in a test
// binary) and returns the Suite they configure.
func New(fs *flag.FlagSet, opts Options) *Suite {
	if opts.SetupTimeout == 0 {
		opts.SetupTimeout = defaultSetupTimeout
	}
	if opts.TeardownTimeout == 0 {
		opts.TeardownTimeout = defaultTeardownTimeout
	}
	s := &Suite{opts: opts, logOptions: logs.NewOptions()}
	fs.StringVar(&s.ConfigPath, "e2e.config", opts.DefaultConfig, "path to the e2e config file (merged over the harness's config/e2e.yaml)")
	fs.StringVar(&s.ArtifactFolder, "e2e.artifacts-folder", "_artifacts", "folder for test artifacts; the ARTIFACTS environment variable takes precedence")
	fs.BoolVar(&s.AlsoLogToFile, "e2e.also-log-to-file", true, "also write Ginkgo's output, with timestamps, to ginkgo-log.txt in the artifacts folder")
	fs.BoolVar(&s.SkipCleanup, "e2e.skip-resource-cleanup", false, "keep clusters, namespaces and the kind management cluster after the tests")
	fs.StringVar(&s.ClusterctlConfig, "e2e.clusterctl-config", "", "clusterctl config to use; if empty, a local repository with its config is created in the artifacts folder")
	fs.BoolVar(&s.UseExistingCluster, "e2e.use-existing-cluster", false, "use the cluster of the current kubeconfig instead of creating a kind cluster")
	fs.StringVar(&s.SelectionFile, "e2e.selection", "", "run nothing: check the config for the specs the Ginkgo flags select and write them, with the images they need, to this file as JSON (what `make images` builds)")
	fs.StringVar(&s.JUnitReport, "e2e.junit-report", report.JUnitFile, "the JUnit report's name in the artifacts folder, written with each failure's phase, conditions and artifacts first, beside metadata.json and report.html; empty: none of them (use Ginkgo's --junit-report then)")
	logsv1.AddGoFlags(s.logOptions, fs)
	return s
}

// Run is the body of the suite's Test function: it applies the logging
// flags, settles the artifacts folder, starts ginkgo-log.txt and runs the
// specs.
func (s *Suite) Run(t *testing.T, description string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(logsv1.ValidateAndApply(s.logOptions, nil)).To(Succeed())
	ctrl.SetLogger(withoutCAPDDeprecations(klog.Background()))
	if s.SelectionFile != "" {
		g.Expect(s.writeSelection(description)).To(Succeed(), "-e2e.selection")
		return
	}
	if a := os.Getenv("ARTIFACTS"); a != "" {
		s.ArtifactFolder = a
	}
	var err error
	s.ArtifactFolder, err = filepath.Abs(s.ArtifactFolder)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(os.MkdirAll(s.ArtifactFolder, 0o755)).To(Succeed(), "cannot create the artifacts folder %q", s.ArtifactFolder)
	RegisterFailHandler(Fail)
	s.requirements = s.selectedRequirements(description)
	if s.AlsoLogToFile {
		w, err := ginkgoextensions.EnableFileLogging(filepath.Join(s.ArtifactFolder, "ginkgo-log.txt"))
		g.Expect(err).ToNot(HaveOccurred())
		defer w.Close()
	}
	RunSpecs(t, description)
}

// RegisterSetupAndTeardown registers the suite's SynchronizedBeforeSuite
// (Setup on process 1, Connect on the others) and SynchronizedAfterSuite
// (Teardown on process 1, after every process is done) and the
// ReportAfterSuite that writes the JUnit report, metadata.json and
// report.html. Teardown runs even when Setup failed half-way. Call it
// once, at package level
// (`var _ = s.RegisterSetupAndTeardown()`).
func (s *Suite) RegisterSetupAndTeardown() bool {
	SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
		// The run id first, for the watcher, which is started before
		// anything of the run exists.
		runID := os.Getenv(EnvRunID)
		if runID == "" {
			runID = runtime.NewRunID()
		}
		w, err := startWatcher(watchTask{RunID: runID, Artifacts: s.ArtifactFolder, JUnitFile: s.JUnitReport,
			SkipCleanup: s.SkipCleanup, SuitePID: os.Getpid(), Started: time.Now()})
		Expect(err).ToNot(HaveOccurred(), "start the suite's watcher (set %s=true only where a supervisor outlives the suite)", EnvSupervised)
		s.watcher = w
		in := SetupInput{
			RunID:                runID,
			ConfigPath:           s.ConfigPath,
			ArtifactFolder:       s.ArtifactFolder,
			ClusterctlConfigPath: s.ClusterctlConfig,
			SkipCleanup:          s.SkipCleanup,
			Scheme:               s.Scheme,
			Requirements:         s.requirements,
			// Each selected spec's Requirement says whether it needs the
			// test extension.
			OnlyRequiredExtensions: s.opts.Requirements != nil,
		}
		if s.UseExistingCluster {
			in.KubeconfigPath = currentKubeconfig()
		}
		env, err := Setup(ctx, in, logf)
		s.env = env
		addSetupSummary(s.ArtifactFolder)
		Expect(err).ToNot(HaveOccurred(), "suite setup")
		data, err := env.marshal()
		Expect(err).ToNot(HaveOccurred())
		return data
	}, func(data []byte) {
		if s.env != nil {
			return // process 1 set it up
		}
		env, err := connect(data, nil, s.Scheme)
		Expect(err).ToNot(HaveOccurred(), "connect to the suite's management cluster")
		s.env = env
	}, NodeTimeout(s.opts.SetupTimeout))

	SynchronizedAfterSuite(func(ctx SpecContext) {
		if GinkgoParallelProcess() != 1 {
			Expect(s.env.Close(ctx)).To(Succeed())
		}
	}, func(ctx SpecContext) {
		Expect(s.env.Teardown(ctx)).To(Succeed(), "suite teardown")
	}, NodeTimeout(s.opts.TeardownTimeout))
	s.registerReport()
	return true
}

// Environment returns the set-up environment: call it inside a spec's
// input function, which runs after setup. It fails the spec when setup
// did not run (RegisterSetupAndTeardown was not called).
func (s *Suite) Environment() *Environment {
	Expect(s.env).ToNot(BeNil(), "the suite's setup did not run (call RegisterSetupAndTeardown)")
	return s.env
}

// selectedRequirements walks the spec tree as the run will (Ginkgo's
// PreviewSpecs honours the label filter, focus and skip flags) and returns
// the requirements of the specs that will run, so that setup checks the
// config for them before it creates anything.
func (s *Suite) selectedRequirements(description string) []Requirement {
	if s.opts.Requirements == nil {
		return nil
	}
	report := PreviewSpecs(description)
	labels := []string{}
	for _, sr := range report.SpecReports {
		if sr.LeafNodeType == types.NodeTypeIt && sr.State == types.SpecStatePassed {
			labels = append(labels, sr.Labels()...)
		}
	}
	if len(labels) == 0 {
		return nil // only specs of the suite's own, or none
	}
	return s.opts.Requirements(labels...)
}

// writeSelection walks the spec tree as the run would (PreviewSpecs
// honours the label filter, focus and skip flags), checks the config for
// the selected specs as setup would (preflight) and writes them, with the
// images they need (imagesNeeded, which setup's image check uses too), to
// s.SelectionFile. Selecting no spec is an error, as --fail-on-empty makes
// it for a run.
func (s *Suite) writeSelection(description string) error {
	report := PreviewSpecs(description)
	var sel selection.Selection
	var reqs []Requirement
	for _, sr := range report.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt || sr.State != types.SpecStatePassed {
			continue
		}
		text := sr.FullText()
		sel.Specs = append(sel.Specs, text)
		var r []Requirement
		if s.opts.Requirements != nil {
			r = s.opts.Requirements(sr.Labels()...)
		}
		if len(r) == 0 {
			sel.Unknown = append(sel.Unknown, text)
			continue
		}
		reqs = append(reqs, r...)
	}
	if len(sel.Specs) == 0 {
		return errors.New("the label filter, focus and skip select no spec")
	}
	cfg, err := config.Load(s.ConfigPath)
	if err != nil {
		return err
	}
	if err := preflight(cfg, reqs, !s.UseExistingCluster); err != nil {
		return err
	}
	if s.opts.Requirements != nil {
		dropUnneeded(cfg, reqs)
	}
	sel.Images = imagesNeeded(cfg, reqs, !s.UseExistingCluster)
	return selection.Write(s.SelectionFile, sel)
}

func currentKubeconfig() string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if len(rules.Precedence) > 0 {
		return rules.Precedence[0]
	}
	return clientcmd.RecommendedHomeFile
}

func logf(format string, args ...any) {
	fmt.Fprintf(GinkgoWriter, "%s "+format+"\n", append([]any{time.Now().UTC().Format(time.RFC3339)}, args...)...)
}
