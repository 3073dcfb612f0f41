package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"

	"github.com/capd-e2e/capd-e2e/framework/bootstrap"
	"github.com/capd-e2e/capd-e2e/framework/certmanager/manifests"
	"github.com/capd-e2e/capd-e2e/framework/certmanager/webhookcheck"
	"github.com/capd-e2e/capd-e2e/framework/cni"
	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/config/upstream"
	"github.com/capd-e2e/capd-e2e/framework/controllerlogs"
	"github.com/capd-e2e/capd-e2e/framework/images"
	"github.com/capd-e2e/capd-e2e/framework/leak"
	capdlogs "github.com/capd-e2e/capd-e2e/framework/logs"
	"github.com/capd-e2e/capd-e2e/framework/repository"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/runtime/moby"
	"github.com/capd-e2e/capd-e2e/framework/summary"
	"github.com/capd-e2e/capd-e2e/internal/catch"
	"github.com/capd-e2e/capd-e2e/internal/fault"
)

// setup is one run of Setup: the environment it builds and what its
// phases hand each other.
type setup struct {
	in        SetupInput
	env       *Environment
	log       func(string, ...any)
	renderDir string
	// mgmt is the management cluster's Kubernetes version and node image.
	mgmt *config.Kubernetes
	// summary records the phases.
	summary *summary.Recorder
}

// Setup's summary: SetupSummaryDir/summary.txt and summary.json in the
// artifacts folder.
const (
	SetupSummarySpec = "suite setup"
	SetupSummaryDir  = "setup"
)

// Setup sets up the management cluster, phase by phase, each logged with
// its duration to log. On failure it returns the error together with the
// Environment as far as it got, which Teardown cleans up: call Teardown
// whatever Setup returned.
func Setup(ctx context.Context, in SetupInput, log func(format string, args ...any)) (*Environment, error) {
	if log == nil {
		log = func(string, ...any) {}
	}
	s := &setup{in: in, log: log, env: &Environment{RunID: in.RunID, SkipCleanup: in.SkipCleanup, Runtime: in.Runtime, log: log}}
	if err := s.checkInput(); err != nil {
		return s.env, err
	}
	// Its phases as a spec's: the suite's report shows setup's timeline,
	// and its failing phase in the JUnit failure.
	s.summary = summary.New(SetupSummarySpec, filepath.Join(s.env.ArtifactFolder, SetupSummaryDir))
	// Where the management cluster's logs go (the proxy's name), for the
	// report's links.
	s.summary.Set("management cluster", "bootstrap")
	defer func() {
		if err := s.summary.Write(); err != nil {
			log("setup: %v", err)
		}
	}()
	var err error
	if s.renderDir, err = os.MkdirTemp("", "capd-e2e-render-"); err != nil {
		return s.env, err
	}
	defer os.RemoveAll(s.renderDir)

	start := time.Now()
	never := func() bool { return false }
	ownRepository := func() bool { return in.ClusterctlConfigPath != "" }
	phases := []struct {
		name func() string
		skip func() bool
		run  func(context.Context) error
	}{
		{fixed("load config"), never, s.loadConfig},
		{fixed("check the config against the specs to run"), never, s.preflight},
		// The network after the offline checks, before anything is created.
		{fixed("resolve release markers and check network sources"), never, s.resolveSources},
		{s.previousPhaseName, func() bool { return s.env.cfg.Build.ClusterAPI.Previous == nil }, s.previousClusterctl},
		// Not a phase of its own: upstream's view of the config as setup
		// left it.
		{nil, never, s.deriveUpstream},
		{fixed("check the engine"), never, s.checkEngine},
		{fixed("check images"), never, s.checkImages},
		// Before the repository: it sets a variable the templates read.
		{fixed("copy kubeadm out of the node images the specs mount it from"), func() bool { return len(s.kubeadmVersions()) == 0 }, s.extractKubeadm},
		// Before anything is created: what runs killed earlier left behind
		// (never a live run's).
		{fixed("remove what dead runs left"), never, s.reapDeadRuns},
		{fixed("create the local clusterctl repository"), ownRepository, s.createRepository},
		{fixed("add startup probes to the providers' controllers"), func() bool { return ownRepository() || !s.env.cfg.StartupProbes() }, s.addStartupProbes},
		{s.kindPhaseName, func() bool { return in.KubeconfigPath != "" }, s.createKind},
		// Not a phase of its own: nothing to wait for, nothing to log.
		{nil, never, s.connectProxy},
		{fixed("install cert-manager's CRDs and the substitute controller"), never, s.installCertManager},
		{fixed("clusterctl init"), never, s.clusterctlInit},
		{fixed("check the cert-manager substitute is Available"), never, s.checkCertManager},
		{fixed("check that every provider webhook serves a certificate its caBundle trusts, and the API server calls it"), never, s.checkWebhooks},
	}
	for _, p := range phases {
		if p.skip() {
			continue
		}
		if p.name == nil {
			if err := p.run(ctx); err != nil {
				return s.env, err
			}
			continue
		}
		if err := s.phase(ctx, p.name(), p.run); err != nil {
			return s.env, err
		}
	}
	log("setup: all of setup done in %s", time.Since(start).Round(time.Millisecond))
	return s.env, nil
}

func fixed(name string) func() string { return func() string { return name } }

// phase runs one phase of setup, logging its start, end and duration; a
// fault injected for it (make test-faults) fails it instead.
func (s *setup) phase(ctx context.Context, name string, run func(context.Context) error) error {
	t0 := time.Now()
	s.log("setup: %s", name)
	done := s.summary.Phase(name)
	err := fault.Injected(name)
	if err == nil {
		err = run(ctx)
	}
	done(err)
	if err != nil {
		s.log("setup: %s failed after %s: %v", name, time.Since(t0).Round(time.Millisecond), err)
		return fmt.Errorf("%s: %w", name, err)
	}
	s.log("setup: %s done in %s", name, time.Since(t0).Round(time.Millisecond))
	return nil
}

// checkInput checks what setup needs before its first phase: the run id,
// the config and artifacts paths.
func (s *setup) checkInput() error {
	env := s.env
	if env.RunID == "" {
		env.RunID = os.Getenv(EnvRunID)
	}
	if env.RunID == "" {
		env.RunID = runtime.NewRunID()
	}
	if !runIDRE.MatchString(env.RunID) {
		return fmt.Errorf("suite setup: run id %q: want 1 to 12 lower-case letters and digits", env.RunID)
	}
	if s.in.ArtifactFolder == "" || s.in.ConfigPath == "" {
		return errors.New("suite setup: SetupInput.ArtifactFolder and ConfigPath are required")
	}
	var err error
	if env.ArtifactFolder, err = filepath.Abs(s.in.ArtifactFolder); err != nil {
		return err
	}
	if err := os.MkdirAll(env.ArtifactFolder, 0o755); err != nil {
		return fmt.Errorf("suite setup: create the artifacts folder: %w", err)
	}
	return nil
}

func (s *setup) loadConfig(context.Context) error {
	cfg, err := config.Load(s.in.ConfigPath)
	if err != nil {
		return err
	}
	s.env.cfg = cfg
	s.env.ManagementClusterName = cfg.ManagementClusterName + "-" + s.env.RunID
	return nil
}

// deriveUpstream makes upstream's view of the config, once setup's
// changes to it are made (release markers resolved, the test extension
// dropped when unneeded), with the built-in providers' repository entries
// pointing into renderDir (see config.RepositoryProviders).
func (s *setup) deriveUpstream(context.Context) error {
	e2e, err := upstream.E2EConfig(s.env.cfg, s.renderDir)
	if err != nil {
		return err
	}
	s.env.E2EConfig = e2e
	return nil
}

func (s *setup) preflight(context.Context) error {
	if err := preflight(s.env.cfg, s.in.Requirements, s.in.KubeconfigPath == ""); err != nil {
		return err
	}
	// preflight made sure the management cluster's version has a node
	// image when kind is to be created.
	version, _ := s.env.cfg.LookupVariable(config.VarKubernetesVersionManagement)
	s.mgmt, _ = s.env.cfg.Build.KubernetesVersion(version)
	// The release to upgrade from costs a clusterctl build (minutes, once
	// per machine) and a rendering, the test extension costs clusterctl
	// init a fifth provider to wait for (18.2 s against 32.0 s in one PR
	// job): only when a spec needs them.
	if s.in.OnlyRequiredExtensions {
		for _, line := range dropUnneeded(s.env.cfg, s.in.Requirements) {
			s.log("setup: %s", line)
		}
	}
	return nil
}

func (s *setup) previousPhaseName() string {
	return "get clusterctl " + s.env.cfg.Build.ClusterAPI.Previous.Version + " of the release to upgrade from"
}

// previousClusterctl downloads or builds the clusterctl of
// build.clusterAPI.previous (repository.PreviousClusterctl), before
// anything is created.
func (s *setup) previousClusterctl(ctx context.Context) error {
	bin, err := repository.PreviousClusterctl(ctx, s.env.cfg)
	if err == nil {
		s.env.previousClusterctl = bin
		s.log("setup: clusterctl %s is %s", s.env.cfg.Build.ClusterAPI.Previous.Version, bin)
	}
	return err
}

func (s *setup) checkEngine(ctx context.Context) error {
	if s.env.Runtime == nil {
		rt, err := moby.New(moby.Config{})
		if err != nil {
			return fmt.Errorf("suite setup: %w", err)
		}
		s.env.Runtime, s.env.ownRuntime = rt, true
	}
	info, err := s.env.Runtime.Info(ctx)
	if err != nil {
		return err
	}
	s.env.Engine = info
	s.log("setup: engine %s at %s", info.Product(), info.Endpoint)
	setEngineVariables(s.env.E2EConfig, info)
	return nil
}

// setEngineVariables sets the template variables that depend on the
// engine, each unless the environment or the config sets it:
//   - CONTAINER_ENGINE_SOCKET, the host path of the engine's socket that
//     the templates mount into machines running CAPD (self-hosted): the
//     socket of the engine this run uses. Only for an engine reached
//     through a unix socket; another cannot be mounted, which the
//     templates' default (/var/run/docker.sock) then shows.
//   - NODE_IMAGE_REPOSITORY on Podman: docker.io/kindest/node, the name
//     Podman reports a machine container's image by (Docker reports the
//     name it was given). CAPD's MachinePool compares the two as strings
//     and, when they differ, counts no machine as its own and creates one
//     on every reconcile (seen here: 15 workers in 4 minutes).
func setEngineVariables(e2e *clusterctl.E2EConfig, info runtime.EngineInfo) {
	set := func(name, value string) {
		if _, ok := os.LookupEnv(name); ok {
			return
		}
		if _, ok := e2e.Variables[name]; ok {
			return
		}
		if e2e.Variables == nil {
			e2e.Variables = map[string]string{}
		}
		e2e.Variables[name] = value
	}
	if path, err := info.SocketPath(); err == nil {
		set(config.VarContainerEngineSocket, path)
	}
	if info.Podman {
		set(config.VarNodeImageRepository, "docker.io/kindest/node")
	}
}

// checkImages makes sure the engine has what CAPD runs on the host
// (machines, load balancers), or it would try to pull; and the management
// cluster's images, unless an existing cluster gets its own.
func (s *setup) checkImages(ctx context.Context) error {
	cfg := s.env.cfg
	refs := imageRefs(imagesNeeded(cfg, s.in.Requirements, s.in.KubeconfigPath == ""))
	return images.Ensure(ctx, s.env.Runtime, cfg.Build.Registry, refs, prefixed(s.log, "setup: "))
}

func (s *setup) reapDeadRuns(ctx context.Context) error {
	reaped, err := leak.Reap(ctx, s.env.Runtime)
	for _, r := range reaped {
		s.log("setup: run %s (owner %s) was gone: removed %s", r.Run.ID, r.Run.Owner, r.Report)
		err = errors.Join(err, r.Err)
	}
	if err == nil {
		s.env.tracker = leak.NewTracker(s.env.Runtime, s.env.RunID)
	}
	return err
}

func (s *setup) createRepository(ctx context.Context) error {
	path, err := repository.Create(ctx, repository.CreateInput{
		Config: s.env.cfg, E2EConfig: s.env.E2EConfig, RenderDir: s.renderDir,
		RepositoryDir: filepath.Join(s.env.ArtifactFolder, "repository"),
	})
	s.env.ClusterctlConfigPath = path
	return err
}

// addStartupProbes adds startup probes to the providers' controllers in
// the repository setup created, with PROVIDER_STARTUP_PROBES "true"
// (repository.AddStartupProbes says why).
func (s *setup) addStartupProbes(context.Context) error {
	amended, err := repository.AddStartupProbes(s.env.ClusterctlConfigPath)
	s.log("setup: %s=true: a startup probe added to %d controllers: %s", config.VarStartupProbes, len(amended), strings.Join(amended, ", "))
	return err
}

func (s *setup) kindPhaseName() string {
	return fmt.Sprintf("create the kind management cluster %q from %s, loading the providers' images into its nodes meanwhile", s.env.ManagementClusterName, s.mgmt.NodeImage)
}

// createKind creates the kind management cluster. Its admin kubeconfig
// holds a client key: not in the artifacts, which a CI system publishes,
// but in a private folder (0700, the file 0600), removed by Teardown unless
// cleanup is skipped.
func (s *setup) createKind(ctx context.Context) error {
	env := s.env
	var err error
	if env.privateDir, err = os.MkdirTemp("", "capd-e2e-"+env.RunID+"-"); err != nil {
		return err
	}
	if err := env.tracker.Track(ctx, env.ManagementClusterName); err != nil {
		return err
	}
	refs, err := images.ToLoad(ctx, env.Runtime, env.cfg.ManagementImages(), prefixed(s.log, "setup: "))
	if err != nil {
		return err
	}
	var cniManifest []byte
	dualStack, err := managementDualStack(env.cfg, s.in.Requirements)
	if err != nil {
		return err
	}
	if dualStack {
		v4, v6 := bootstrap.DualStackServiceSubnets[0], bootstrap.DualStackServiceSubnets[1]
		if cniManifest, err = cni.DualStackManifest(ctx, env.cfg.Build.KubeRouter, v4, v6); err != nil {
			return err
		}
		why := fmt.Sprintf("variables.%s is dual", VarIPFamily)
		if i := slices.IndexFunc(s.in.Requirements, func(r Requirement) bool { return r.DualStackManagement }); i >= 0 {
			why = fmt.Sprintf("spec %s's workload clusters are IPv6-only", s.in.Requirements[i].Spec)
		}
		s.log("setup: the management cluster is dual-stack (Pods %s, Services %s, kube-router dual-stack): %s",
			strings.Join(bootstrap.DualStackPodSubnets, ","), strings.Join(bootstrap.DualStackServiceSubnets, ","), why)
	}
	env.kind, err = bootstrap.CreateKind(ctx, bootstrap.KindOptions{
		DualStack:         dualStack,
		CNIManifest:       cniManifest,
		Name:              env.ManagementClusterName,
		NodeImage:         s.mgmt.NodeImage,
		MountDockerSocket: true,
		KubeconfigPath:    filepath.Join(env.privateDir, "kubeconfig"),
		LogFolder:         filepath.Join(env.ArtifactFolder, "kind"),
		Runtime:           env.Runtime,
		EnableOwnerReferencesPermissionEnforcement: true,
		// The node becomes Ready while the CRDs apply; the controllers'
		// Deployments becoming Available, below, imply it.
		NoWait: true,
		Images: refs,
	})
	if err == nil {
		s.log("setup: the management cluster's kubeconfig is %s", env.kind.KubeconfigPath)
	}
	return err
}

// connectProxy makes the management cluster's proxy.
func (s *setup) connectProxy(context.Context) error {
	kubeconfig := s.in.KubeconfigPath
	if s.env.kind != nil {
		kubeconfig = s.env.kind.KubeconfigPath
	}
	scheme := s.in.Scheme
	if scheme == nil {
		scheme = DefaultScheme()
	}
	s.env.BootstrapClusterProxy = newProxy(kubeconfig, scheme, s.env.Runtime)
	return nil
}

// newProxy is the management cluster's ClusterProxy, collecting machine
// logs through rt.
func newProxy(kubeconfig string, scheme *apiruntime.Scheme, rt runtime.Runtime) framework.ClusterProxy {
	return newNamedProxy("bootstrap", kubeconfig, scheme, rt)
}

// newNamedProxy is newProxy for a cluster of another name.
func newNamedProxy(name, kubeconfig string, scheme *apiruntime.Scheme, rt runtime.Runtime) framework.ClusterProxy {
	return framework.NewClusterProxy(name, kubeconfig, scheme, framework.WithMachineLogCollector(&capdlogs.Collector{Runtime: rt}))
}

// installCertManager installs cert-manager's CRDs and its substitute. The
// substitute starts while clusterctl init applies the providers: only its
// CRDs must be there first (init creates Certificates and Issuers); the
// providers' pods wait for the Secrets it issues, and init waits for the
// providers. On the kind cluster the harness created it runs on the node's
// network, so that it does not wait for the CNI (manifests.Options).
func (s *setup) installCertManager(ctx context.Context) error {
	return s.env.installCertManager(ctx, s.env.BootstrapClusterProxy, manifests.WaitCRDs, manifests.Options{HostNetwork: s.env.kind != nil})
}

// clusterctlInit runs clusterctl init with every provider of the config,
// of every type (infrastructure, IPAM, runtime extension, addon; core,
// bootstrap and control plane are the kubeadm ones); the controllers'
// logs are streamed until Teardown, so the watches outlive setup's
// context.
func (s *setup) clusterctlInit(ctx context.Context) error {
	env := s.env
	watchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	env.stopWatches = cancel
	return catch.Run(func() {
		controllerlogs.InitAndWatch(watchCtx, clusterctl.InitManagementClusterAndWatchControllerLogsInput{
			ClusterProxy:              env.BootstrapClusterProxy,
			ClusterctlConfigPath:      env.ClusterctlConfigPath,
			InfrastructureProviders:   env.E2EConfig.InfrastructureProviders(),
			IPAMProviders:             env.E2EConfig.IPAMProviders(),
			RuntimeExtensionProviders: env.E2EConfig.RuntimeExtensionProviders(),
			AddonProviders:            env.E2EConfig.AddonProviders(),
			LogFolder:                 filepath.Join(env.ArtifactFolder, "clusters", env.BootstrapClusterProxy.GetName()),
		}, env.E2EConfig.GetIntervals(env.BootstrapClusterProxy.GetName(), "wait-controllers")...)
	})
}

func (s *setup) checkCertManager(ctx context.Context) error {
	proxy := s.env.BootstrapClusterProxy
	timeout, resync, err := s.env.cfg.Intervals(proxy.GetName(), "wait-controllers")
	if err != nil {
		return err
	}
	c, err := watchClient(proxy)
	if err != nil {
		return err
	}
	return manifests.WaitAvailable(ctx, c, timeout, resync)
}

// checkWebhooks checks every provider webhook. The CA injector fills the
// caBundles after the Certificates are issued, which may be after
// clusterctl init saw the Deployments available: an empty or stale
// caBundle is retried until wait-controllers' timeout, then reported as
// last seen. So is a webhook the API server cannot call yet
// (webhookcheck.CheckCalls: its Service's cluster IP lags its pod's
// readiness), which would fail the first spec's first create.
func (s *setup) checkWebhooks(ctx context.Context) error {
	proxy := s.env.BootstrapClusterProxy
	timeout, _, err := s.env.cfg.Intervals(proxy.GetName(), "wait-controllers")
	if err != nil {
		return err
	}
	var last error
	var probed []string
	attempts := 0
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		attempts++
		last = webhookcheck.Check(ctx, webhookcheck.Input{
			Client: proxy.GetClient(),
			Dial:   webhookcheck.PortForward(proxy.GetRESTConfig()),
		})
		if last == nil {
			probed, last = webhookcheck.CheckCalls(ctx, webhookcheck.CallInput{Client: proxy.GetClient()})
		}
		return last == nil, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("after %d attempts in %s: %w", attempts, timeout, last)
	}
	if attempts > 1 {
		s.log("setup: the webhook check passed at attempt %d", attempts)
	}
	if err == nil {
		s.log("setup: the API server called a webhook of each of %d Services: %s", len(probed), strings.Join(probed, ", "))
	}
	return err
}

// prefixed returns log with prefix before every format.
func prefixed(log func(string, ...any), prefix string) func(string, ...any) {
	return func(format string, args ...any) { log(prefix+format, args...) }
}
