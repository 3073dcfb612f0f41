// Package suite is the reusable setup and teardown of an E2E suite that
// runs capd-e2e's specs (e2e/specs): a kind management cluster from the
// harness's node image, the images the providers need loaded into it,
// cert-manager's CRDs and the harness's substitute controller, the local
// clusterctl repository and `clusterctl init`, a check that every provider
// webhook serves a certificate its caBundle trusts and that the API server
// calls it, log collection and cleanup. capd-e2e's own suite (e2e/) and a
// provider's suite (see examples/) are thin layers over it.
//
// Setup and Teardown are plain functions over an input struct, usable from
// any Ginkgo suite; Suite (ginkgo.go) wires them to Ginkgo with upstream's
// flags, so that a provider's whole suite is a few dozen lines.
//
// A provider's config file names only what is its own and is merged over
// the harness's config (config.Load). Setup renders the built-in providers'
// components (Cluster API's, from a release or a working tree) and the CNI
// manifest itself; the provider's own components come from its config
// (type url, or type kustomize built with the harness's kustomize, as
// upstream's CreateRepository does).
//
// This package builds no image (`make images` does) and never pulls one
// except through build.registry's mirror or policy.
package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
	infrav1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"

	"github.com/capd-e2e/capd-e2e/e2e/specs"
	"github.com/capd-e2e/capd-e2e/framework/bootstrap"
	"github.com/capd-e2e/capd-e2e/framework/ccm"
	"github.com/capd-e2e/capd-e2e/framework/certmanager/manifests"
	"github.com/capd-e2e/capd-e2e/framework/certmanager/webhookcheck"
	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/config/upstream"
	"github.com/capd-e2e/capd-e2e/framework/controllerlogs"
	"github.com/capd-e2e/capd-e2e/framework/images"
	"github.com/capd-e2e/capd-e2e/framework/leak"
	capdlogs "github.com/capd-e2e/capd-e2e/framework/logs"
	"github.com/capd-e2e/capd-e2e/framework/repository"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
	"github.com/capd-e2e/capd-e2e/framework/secrets"
	"github.com/capd-e2e/capd-e2e/framework/snapshot"
)

// SetupInput is the input of Setup.
type SetupInput struct {
	// ConfigPath is the e2e config: the harness's config/e2e.yaml, or a
	// provider's file that config.Load merges over it. Required.
	ConfigPath string

	// ArtifactFolder receives everything the suite writes, in upstream's
	// layout. Required; created if missing.
	ArtifactFolder string

	// ClusterctlConfigPath, if set, is an existing clusterctl config (and
	// repository) used as is; if unset, a local repository is created in
	// ArtifactFolder/repository.
	ClusterctlConfigPath string

	// KubeconfigPath, if set, is the management cluster to use instead of
	// creating a kind cluster (upstream's -e2e.use-existing-cluster uses
	// the current kubeconfig). Images are then not loaded: the cluster
	// must be able to get them.
	KubeconfigPath string

	// SkipCleanup keeps the management cluster after Teardown.
	SkipCleanup bool

	// Runtime is the container engine. If unset, moby.New(moby.Config{})
	// (DOCKER_HOST), closed by Teardown.
	Runtime runtime.Runtime

	// Scheme is the management cluster client's scheme. If unset,
	// DefaultScheme: client-go's, Cluster API's and CAPD's types. A
	// provider adds its own types to DefaultScheme().
	Scheme *apiruntime.Scheme

	// Specs are the requirements of the specs the suite will run
	// (specs.Requirements of their labels; Suite finds them with Ginkgo's
	// PreviewSpecs): checked against the config before anything is
	// created. If nil, every spec of e2e/specs is checked.
	Specs []specs.Requirement

	// RunID labels what the run creates and suffixes the management
	// cluster's name. If unset, $CAPD_E2E_RUN_ID (scripts/ci-e2e.sh sets
	// it, to check for leftovers by it afterwards), else a new
	// runtime.NewRunID().
	RunID string
}

// EnvRunID is the environment variable that gives a run its id.
const EnvRunID = "CAPD_E2E_RUN_ID"

// EnvInjectFault makes the setup phase whose name contains its value fail
// instead of running, for the fault-injection tests (make test-faults):
// the failure path of every later phase is then the real one.
const EnvInjectFault = "CAPD_E2E_INJECT_FAULT"

// Environment is a set-up management cluster and everything the specs
// need to use it.
type Environment struct {
	// Config is the merged config; E2EConfig upstream's view of it, with
	// the built-in providers added.
	Config    *config.Config
	E2EConfig *clusterctl.E2EConfig
	// ClusterctlConfigPath is the clusterctl config of the local
	// repository.
	ClusterctlConfigPath string
	// BootstrapClusterProxy is the management cluster.
	BootstrapClusterProxy framework.ClusterProxy
	// Runtime is the container engine.
	Runtime runtime.Runtime
	// ArtifactFolder is where artifacts go.
	ArtifactFolder string
	// SkipCleanup is SetupInput.SkipCleanup.
	SkipCleanup bool
	// RunID is the run's id.
	RunID string
	// ManagementClusterName is the kind cluster's name: the config's
	// managementClusterName with the run id appended.
	ManagementClusterName string

	kind        *bootstrap.KindCluster
	tracker     *leak.Tracker
	privateDir  string
	log         func(string, ...any)
	ownRuntime  bool
	stopWatches context.CancelFunc
}

var runIDRE = regexp.MustCompile(`^[a-z0-9]{1,12}$`)

// DefaultScheme returns a scheme with client-go's types (the webhook check
// reads EndpointSlices), Cluster API's and CAPD's.
func DefaultScheme() *apiruntime.Scheme {
	sc := apiruntime.NewScheme()
	framework.TryAddDefaultSchemes(sc)
	_ = clientgoscheme.AddToScheme(sc)
	_ = infrav1.AddToScheme(sc)
	return sc
}

// CommonInput returns the specs' CommonInput for this environment.
func (e *Environment) CommonInput() specs.CommonInput {
	var cloud specs.CloudControllerManager
	if e.Config != nil && e.Config.CloudProviderExternal() {
		cloud = ccm.Installer{
			Image:             e.Config.Build.CloudControllerManager.Image,
			LoadBalancerImage: e.Config.Build.LoadBalancer.Image,
			RunID:             e.RunID,
			Engine:            e.Runtime,
		}
	}
	return specs.CommonInput{
		CloudControllerManager: cloud,
		E2EConfig:              e.E2EConfig,
		ClusterctlConfigPath:   e.ClusterctlConfigPath,
		BootstrapClusterProxy:  e.BootstrapClusterProxy,
		ArtifactFolder:         e.ArtifactFolder,
		Runtime:                e.Runtime,
		SkipCleanup:            e.SkipCleanup,
		Tracker:                e.tracker,
	}
}

// LoadConfig loads the config at path (merged over the harness's) and
// upstream's view of it, with the built-in providers' repository entries
// pointing into renderDir (see config.RepositoryProviders).
func LoadConfig(path, renderDir string) (*config.Config, *clusterctl.E2EConfig, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, nil, err
	}
	e2e, err := upstream.E2EConfig(cfg, renderDir)
	if err != nil {
		return nil, nil, err
	}
	return cfg, e2e, nil
}

// Setup sets up the management cluster, phase by phase, each logged with
// its duration to log. On failure it returns the error together with the
// Environment as far as it got, which Teardown cleans up: call Teardown
// whatever Setup returned.
func Setup(ctx context.Context, in SetupInput, log func(format string, args ...any)) (*Environment, error) {
	if log == nil {
		log = func(string, ...any) {}
	}
	env := &Environment{RunID: in.RunID, SkipCleanup: in.SkipCleanup, Runtime: in.Runtime, log: log}
	if env.RunID == "" {
		env.RunID = os.Getenv(EnvRunID)
	}
	if env.RunID == "" {
		env.RunID = runtime.NewRunID()
	}
	if !runIDRE.MatchString(env.RunID) {
		return env, fmt.Errorf("suite setup: run id %q: want 1 to 12 lower-case letters and digits", env.RunID)
	}
	start := time.Now()
	inject := os.Getenv(EnvInjectFault)
	phase := func(name string, f func() error) error {
		t0 := time.Now()
		log("setup: %s", name)
		var err error
		if inject != "" && strings.Contains(name, inject) {
			err = fmt.Errorf("fault injected by %s=%q", EnvInjectFault, inject)
		} else {
			err = f()
		}
		if err != nil {
			log("setup: %s failed after %s: %v", name, time.Since(t0).Round(time.Millisecond), err)
			return fmt.Errorf("%s: %w", name, err)
		}
		log("setup: %s done in %s", name, time.Since(t0).Round(time.Millisecond))
		return nil
	}
	if in.ArtifactFolder == "" || in.ConfigPath == "" {
		return env, errors.New("suite setup: SetupInput.ArtifactFolder and ConfigPath are required")
	}
	var err error
	if env.ArtifactFolder, err = filepath.Abs(in.ArtifactFolder); err != nil {
		return env, err
	}
	if err := os.MkdirAll(env.ArtifactFolder, 0o755); err != nil {
		return env, fmt.Errorf("suite setup: create the artifacts folder: %w", err)
	}
	renderDir, err := os.MkdirTemp("", "capd-e2e-render-")
	if err != nil {
		return env, err
	}
	defer os.RemoveAll(renderDir)

	if err := phase("load config", func() error {
		env.Config, env.E2EConfig, err = LoadConfig(in.ConfigPath, renderDir)
		return err
	}); err != nil {
		return env, err
	}
	cfg := env.Config
	env.ManagementClusterName = cfg.ManagementClusterName + "-" + env.RunID
	reqs := in.Specs
	if reqs == nil {
		reqs = specs.Requirements()
	}
	if err := phase("check the config against the specs to run", func() error {
		return Preflight(cfg, reqs, in.KubeconfigPath == "")
	}); err != nil {
		return env, err
	}

	if env.Runtime == nil {
		if env.Runtime, err = moby.New(moby.Config{}); err != nil {
			return env, fmt.Errorf("suite setup: %w", err)
		}
		env.ownRuntime = true
	}
	if err := phase("check the engine", func() error {
		_, err := env.Runtime.Info(ctx)
		return err
	}); err != nil {
		return env, err
	}

	// Preflight made sure these exist.
	mgmtVersion, _ := cfg.LookupVariable(config.VarKubernetesVersionManagement)
	k8s, _ := cfg.Build.KubernetesVersion(mgmtVersion)
	if err := phase("check images", func() error {
		// What CAPD runs on the host (machines, load balancers) must be
		// there, or it would try to pull; so must the management
		// cluster's, unless an existing cluster gets its own.
		refs := []string{cfg.Build.LoadBalancer.Image}
		for _, r := range reqs {
			for _, v := range r.KubernetesVersions {
				version, _ := cfg.LookupVariable(v)
				if k, err := cfg.Build.KubernetesVersion(version); err == nil {
					refs = append(refs, k.NodeImage)
				}
			}
		}
		if in.KubeconfigPath == "" {
			refs = append(refs, k8s.NodeImage)
			for _, img := range cfg.ManagementImages() {
				refs = append(refs, img.Name)
			}
		}
		return images.Ensure(ctx, env.Runtime, cfg.Build.Registry, slices.Compact(slices.Sorted(slices.Values(refs))), prefixed(log, "setup: "))
	}); err != nil {
		return env, err
	}

	// Before anything is created: what runs killed earlier left behind
	// (never a live run's).
	if err := phase("remove what dead runs left", func() error {
		reaped, err := leak.Reap(ctx, env.Runtime)
		for _, r := range reaped {
			log("setup: run %s (owner %s) was gone: removed %s", r.Run.ID, r.Run.Owner, r.Report)
			err = errors.Join(err, r.Err)
		}
		return err
	}); err != nil {
		return env, err
	}
	env.tracker = leak.NewTracker(env.Runtime, env.RunID)

	if in.ClusterctlConfigPath != "" {
		env.ClusterctlConfigPath = in.ClusterctlConfigPath
	} else if err := phase("create the local clusterctl repository", func() error {
		env.ClusterctlConfigPath, err = repository.Create(ctx, repository.CreateInput{
			Config: cfg, E2EConfig: env.E2EConfig, RenderDir: renderDir, RepositoryDir: filepath.Join(env.ArtifactFolder, "repository"),
		})
		return err
	}); err != nil {
		return env, err
	}
	if in.ClusterctlConfigPath == "" && cfg.StartupProbes() {
		if err := phase("add startup probes to the providers' controllers", func() error {
			amended, err := repository.AddStartupProbes(env.ClusterctlConfigPath)
			log("setup: %s=true: a startup probe added to %d controllers: %s", config.VarStartupProbes, len(amended), strings.Join(amended, ", "))
			return err
		}); err != nil {
			return env, err
		}
	}

	kubeconfig := in.KubeconfigPath
	if kubeconfig == "" {
		// The admin kubeconfig holds a client key: not in the artifacts,
		// which a CI system publishes, but in a private folder (0700, the
		// file 0600), removed by Teardown unless cleanup is skipped.
		if env.privateDir, err = os.MkdirTemp("", "capd-e2e-"+env.RunID+"-"); err != nil {
			return env, err
		}
		if err := phase(fmt.Sprintf("create the kind management cluster %q from %s, loading the providers' images into its nodes meanwhile", env.ManagementClusterName, k8s.NodeImage), func() error {
			if err := env.tracker.Track(ctx, env.ManagementClusterName); err != nil {
				return err
			}
			refs, err := images.ToLoad(ctx, env.Runtime, cfg.ManagementImages(), prefixed(log, "setup: "))
			if err != nil {
				return err
			}
			env.kind, err = bootstrap.CreateKind(ctx, bootstrap.KindOptions{
				Name:              env.ManagementClusterName,
				NodeImage:         k8s.NodeImage,
				MountDockerSocket: true,
				KubeconfigPath:    filepath.Join(env.privateDir, "kubeconfig"),
				LogFolder:         filepath.Join(env.ArtifactFolder, "kind"),
				Runtime:           env.Runtime,
				EnableOwnerReferencesPermissionEnforcement: true,
				// The node becomes Ready while the CRDs apply; the
				// controllers' Deployments becoming Available, below,
				// imply it.
				NoWait: true,
				Images: refs,
			})
			return err
		}); err != nil {
			return env, err
		}
		kubeconfig = env.kind.KubeconfigPath
		log("setup: the management cluster's kubeconfig is %s", kubeconfig)
	}
	scheme := in.Scheme
	if scheme == nil {
		scheme = DefaultScheme()
	}
	env.BootstrapClusterProxy = framework.NewClusterProxy("bootstrap", kubeconfig, scheme,
		framework.WithMachineLogCollector(&capdlogs.Collector{Runtime: env.Runtime}))

	// cert-manager's substitute starts while clusterctl init applies the
	// providers: only its CRDs must be there first (init creates
	// Certificates and Issuers); the providers' pods wait for the
	// Secrets it issues, and init waits for the providers. On the kind
	// cluster the harness created it runs on the node's network, so that
	// it does not wait for the CNI (manifests.Options.HostNetwork).
	if err := phase("install cert-manager's CRDs and the substitute controller", func() error {
		return env.installCertManager(ctx, env.BootstrapClusterProxy, manifests.WaitCRDs, manifests.Options{HostNetwork: env.kind != nil})
	}); err != nil {
		return env, err
	}

	if err := phase("clusterctl init", func() error {
		// The controllers' logs are streamed until Teardown; the watches
		// must outlive setup's context.
		watchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		env.stopWatches = cancel
		return catch(func() {
			controllerlogs.InitAndWatch(watchCtx, clusterctl.InitManagementClusterAndWatchControllerLogsInput{
				ClusterProxy:            env.BootstrapClusterProxy,
				ClusterctlConfigPath:    env.ClusterctlConfigPath,
				InfrastructureProviders: env.E2EConfig.InfrastructureProviders(),
				LogFolder:               filepath.Join(env.ArtifactFolder, "clusters", env.BootstrapClusterProxy.GetName()),
			}, env.E2EConfig.GetIntervals(env.BootstrapClusterProxy.GetName(), "wait-controllers")...)
		})
	}); err != nil {
		return env, err
	}

	if err := phase("check the cert-manager substitute is Available", func() error {
		timeout, resync, err := env.Config.Intervals(env.BootstrapClusterProxy.GetName(), "wait-controllers")
		if err != nil {
			return err
		}
		c, err := watchClient(env.BootstrapClusterProxy)
		if err != nil {
			return err
		}
		return manifests.WaitAvailable(ctx, c, timeout, resync)
	}); err != nil {
		return env, err
	}

	if err := phase("check that every provider webhook serves a certificate its caBundle trusts, and the API server calls it", func() error {
		// The CA injector fills the caBundles after the Certificates are
		// issued, which may be after clusterctl init saw the Deployments
		// available: an empty or stale caBundle is retried until
		// wait-controllers' timeout, then reported as last seen. So is a
		// webhook the API server cannot call yet (webhookcheck.CheckCalls:
		// its Service's cluster IP lags its pod's readiness), which would
		// fail the first spec's first create.
		timeout, _, err := cfg.Intervals(env.BootstrapClusterProxy.GetName(), "wait-controllers")
		if err != nil {
			return err
		}
		var last error
		var probed []string
		attempts := 0
		err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
			attempts++
			last = webhookcheck.Check(ctx, webhookcheck.Input{
				Client: env.BootstrapClusterProxy.GetClient(),
				Dial:   webhookcheck.PortForward(env.BootstrapClusterProxy.GetRESTConfig()),
			})
			if last == nil {
				probed, last = webhookcheck.CheckCalls(ctx, webhookcheck.CallInput{Client: env.BootstrapClusterProxy.GetClient()})
			}
			return last == nil, nil
		})
		if err != nil && last != nil {
			return fmt.Errorf("after %d attempts in %s: %w", attempts, timeout, last)
		}
		if attempts > 1 {
			log("setup: the webhook check passed at attempt %d", attempts)
		}
		if err == nil {
			log("setup: the API server called a webhook of each of %d Services: %s", len(probed), strings.Join(probed, ", "))
		}
		return err
	}); err != nil {
		return env, err
	}
	log("setup: all of setup done in %s", time.Since(start).Round(time.Millisecond))
	return env, nil
}

// prefixed returns log with prefix before every format.
func prefixed(log func(string, ...any), prefix string) func(string, ...any) {
	return func(format string, args ...any) { log(prefix+format, args...) }
}

// catch runs f, which may fail the way upstream's helpers do (a Gomega
// assertion, i.e. a panic under Ginkgo), and returns that as an error.
func catch(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	f()
	return nil
}

// Teardown collects the management cluster's logs and container snapshot,
// deletes it (unless SkipCleanup), checks nothing of the run is left and
// closes the runtime it opened. It works on an Environment that Setup left
// half-built, and reports every problem it met.
func (e *Environment) Teardown(ctx context.Context) error {
	if e == nil {
		return nil
	}
	if e.stopWatches != nil {
		defer e.stopWatches()
	}
	var errs []error
	if e.kind != nil && e.Runtime != nil {
		dir := filepath.Join(e.ArtifactFolder, "clusters", "bootstrap")
		if err := e.kind.CollectLogs(ctx, filepath.Join(dir, "machines")); err != nil {
			errs = append(errs, fmt.Errorf("collect the kind nodes' logs: %w", err))
		}
		if s, err := snapshot.Take(ctx, e.Runtime, snapshot.Filter{Cluster: e.kind.Name}); err == nil {
			_ = s.Save(dir)
		}
	}
	if e.SkipCleanup {
		errs = append(errs, e.redactArtifacts())
		return errors.Join(errs...)
	}
	if e.BootstrapClusterProxy != nil {
		e.BootstrapClusterProxy.Dispose(ctx)
	}
	if e.kind != nil {
		if err := e.kind.Delete(ctx); err != nil {
			errs = append(errs, err)
		}
		if e.Runtime != nil {
			rep, err := leak.Check(ctx, e.Runtime, leak.Selector{Cluster: e.kind.Name})
			errs = append(errs, err, rep.Err())
		}
	}
	if e.Runtime != nil {
		// Everything of the run: its labelled objects and the containers of
		// every cluster it tracked. Clean, the run's markers go too.
		if e.tracker != nil {
			if err := leak.FinishRun(ctx, e.Runtime, e.RunID); err != nil {
				errs = append(errs, fmt.Errorf("the run left objects behind (`make clean-e2e` removes them): %w", err))
			}
		}
		if e.ownRuntime {
			errs = append(errs, e.Runtime.Close())
		}
	}
	errs = append(errs, e.redactArtifacts())
	if e.privateDir != "" && !e.SkipCleanup {
		errs = append(errs, os.RemoveAll(e.privateDir))
	}
	return errors.Join(errs...)
}

// redactArtifacts replaces every secret in the artifacts folder (bootstrap
// tokens in KubeadmConfig dumps, keys, kubeconfig credentials; see
// framework/secrets) and fails when a second scan still finds one.
func (e *Environment) redactArtifacts() error {
	if e.ArtifactFolder == "" {
		return nil
	}
	rep, err := secrets.RedactTree(e.ArtifactFolder)
	if err != nil {
		return fmt.Errorf("redact the artifacts: %w", err)
	}
	if len(rep.Redacted) > 0 && e.log != nil {
		e.log("teardown: redacted %d secrets in %d files of %s:", len(rep.Findings), len(rep.Redacted), e.ArtifactFolder)
		for _, f := range rep.Findings {
			e.log("teardown:   %s", f) // path:line kind fingerprint, never the secret
		}
	}
	after, err := secrets.ScanTree(e.ArtifactFolder)
	if err != nil {
		return fmt.Errorf("scan the artifacts for secrets: %w", err)
	}
	if len(after.Findings) > 0 {
		return fmt.Errorf("secrets remain in the artifacts after redaction: %v", after.Findings)
	}
	return nil
}

// shared is what Marshal hands the other Ginkgo processes.
type shared struct {
	ArtifactFolder        string
	ConfigPath            string
	ClusterctlConfigPath  string
	KubeconfigPath        string
	RunID                 string
	ManagementClusterName string
	SkipCleanup           bool
	Owner                 string
}

// Marshal encodes what another process needs to Connect to this
// environment (SynchronizedBeforeSuite's data).
func (e *Environment) Marshal() ([]byte, error) {
	return json.Marshal(shared{
		ArtifactFolder: e.ArtifactFolder, ConfigPath: e.Config.Path(), ClusterctlConfigPath: e.ClusterctlConfigPath,
		KubeconfigPath: e.BootstrapClusterProxy.GetKubeconfigPath(), RunID: e.RunID,
		ManagementClusterName: e.ManagementClusterName, SkipCleanup: e.SkipCleanup, Owner: e.tracker.Owner(),
	})
}

// Connect makes the Environment of another process from Marshal's data.
// Call Close, not Teardown, on it: the process that ran Setup tears down.
func Connect(data []byte, rt runtime.Runtime, scheme *apiruntime.Scheme) (*Environment, error) {
	var s shared
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("connect to the suite's environment: %w", err)
	}
	// Only the built-in providers' versions matter here, not their
	// rendered files, which node 1 has copied into the repository.
	cfg, e2e, err := LoadConfig(s.ConfigPath, os.TempDir())
	if err != nil {
		return nil, err
	}
	env := &Environment{Config: cfg, E2EConfig: e2e, ClusterctlConfigPath: s.ClusterctlConfigPath, ArtifactFolder: s.ArtifactFolder,
		RunID: s.RunID, ManagementClusterName: s.ManagementClusterName, SkipCleanup: s.SkipCleanup, Runtime: rt}
	if env.Runtime == nil {
		if env.Runtime, err = moby.New(moby.Config{}); err != nil {
			return nil, err
		}
		env.ownRuntime = true
	}
	if scheme == nil {
		scheme = DefaultScheme()
	}
	env.tracker = leak.NewTrackerFor(env.Runtime, s.RunID, s.Owner)
	env.BootstrapClusterProxy = framework.NewClusterProxy("bootstrap", s.KubeconfigPath, scheme,
		framework.WithMachineLogCollector(&capdlogs.Collector{Runtime: env.Runtime}))
	return env, nil
}

// Close releases what a connected Environment opened (the runtime, the
// proxy's clients), and nothing else.
func (e *Environment) Close(ctx context.Context) error {
	if e == nil {
		return nil
	}
	if e.BootstrapClusterProxy != nil {
		e.BootstrapClusterProxy.Dispose(ctx)
	}
	if e.ownRuntime && e.Runtime != nil {
		return e.Runtime.Close()
	}
	return nil
}

// InstallCertManager installs cert-manager's CRDs and the substitute
// controller into the cluster of proxy and waits for them (within the
// "<cluster>/wait-controllers" interval): what a cluster needs before
// `clusterctl init` with the harness's clusterctl config, e.g. a
// self-hosted cluster (SelfHostedSpecInput.PreClusterctlInit).
func (e *Environment) InstallCertManager(ctx context.Context, proxy framework.ClusterProxy) error {
	return e.installCertManager(ctx, proxy, manifests.WaitAll, manifests.Options{})
}

func (e *Environment) installCertManager(ctx context.Context, proxy framework.ClusterProxy, until manifests.Wait, o manifests.Options) error {
	timeout, resync, err := e.Config.Intervals(proxy.GetName(), "wait-controllers")
	if err != nil {
		return err
	}
	c, err := watchClient(proxy)
	if err != nil {
		return err
	}
	in := manifests.InstallInput{Client: c, Config: e.Config, Wait: until, Timeout: timeout, Resync: resync, Options: o}
	if err := manifests.Install(ctx, in); err != nil {
		return fmt.Errorf("install cert-manager CRDs and the substitute into cluster %q: %w", proxy.GetName(), err)
	}
	return nil
}

// watchClient returns a client of proxy's cluster that can watch.
func watchClient(proxy framework.ClusterProxy) (client.WithWatch, error) {
	c, err := client.NewWithWatch(proxy.GetRESTConfig(), client.Options{Scheme: proxy.GetScheme()})
	if err != nil {
		return nil, fmt.Errorf("a watching client of cluster %q: %w", proxy.GetName(), err)
	}
	return c, nil
}

// Preflight checks that cfg (with the environment's overrides) has what
// the specs of reqs need: every variable set, every Kubernetes version
// with a node image to build, every interval. With management, the
// management cluster's version too. It returns every problem, one line
// each, naming the field.
func Preflight(cfg *config.Config, reqs []specs.Requirement, management bool) error {
	var errs []error
	seen := map[string]bool{}
	add := func(err error) {
		if !seen[err.Error()] {
			seen[err.Error()] = true
			errs = append(errs, err)
		}
	}
	version := func(name, who string) {
		v, ok := cfg.LookupVariable(name)
		switch {
		case !ok || strings.TrimSpace(v) == "":
			add(fmt.Errorf("variables.%s: required by %s, set neither in %s nor in the environment", name, who, cfg.Path()))
		default:
			if _, err := cfg.Build.KubernetesVersion(v); err != nil {
				add(fmt.Errorf("variables.%s: %q has no node image (build.kubernetes has %s), needed by %s", name, v, strings.Join(cfg.Build.KubernetesVersions(), ", "), who))
			}
		}
	}
	if management {
		version(config.VarKubernetesVersionManagement, "the management cluster")
	}
	for _, r := range reqs {
		who := "spec " + r.Spec
		for _, v := range r.Variables {
			if slices.Contains(r.KubernetesVersions, v) {
				version(v, who)
				continue
			}
			if val, ok := cfg.LookupVariable(v); !ok || strings.TrimSpace(val) == "" {
				add(fmt.Errorf("variables.%s: required by %s, set neither in %s nor in the environment", v, who, cfg.Path()))
			}
		}
		for _, k := range r.Intervals {
			if _, _, err := cfg.Intervals(r.Spec, k); err != nil {
				add(fmt.Errorf("%w (needed by %s)", err, who))
			}
		}
	}
	return errors.Join(errs...)
}
