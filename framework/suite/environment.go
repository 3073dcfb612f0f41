package suite

import (
	"context"
	"fmt"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
	infrav1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"

	"github.com/capd-e2e/capd-e2e/framework/bootstrap"
	"github.com/capd-e2e/capd-e2e/framework/ccm"
	"github.com/capd-e2e/capd-e2e/framework/certmanager/manifests"
	"github.com/capd-e2e/capd-e2e/framework/config"
	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Environment is a set-up management cluster and everything the specs
// need to use it.
type Environment struct {
	// E2EConfig is upstream's view of the merged config, with the built-in
	// providers added.
	E2EConfig *clusterctl.E2EConfig
	// ClusterctlConfigPath is the clusterctl config of the local
	// repository.
	ClusterctlConfigPath string
	// BootstrapClusterProxy is the management cluster.
	BootstrapClusterProxy framework.ClusterProxy
	// Runtime is the container engine.
	Runtime runtime.Runtime
	// Engine describes it, as setup found it (Docker or Podman, its
	// version and socket).
	Engine runtime.EngineInfo
	// ArtifactFolder is where artifacts go.
	ArtifactFolder string
	// SkipCleanup is SetupInput.SkipCleanup.
	SkipCleanup bool
	// RunID is the run's id.
	RunID string
	// ManagementClusterName is the kind cluster's name: the config's
	// managementClusterName with the run id appended.
	ManagementClusterName string

	cfg        *config.Config
	kind       *bootstrap.KindCluster
	tracker    *leak.Tracker
	privateDir string
	// kubeadmDir is setup's KUBEADM_BINARIES_DIR, "" when it made none.
	kubeadmDir  string
	log         func(string, ...any)
	ownRuntime  bool
	stopWatches context.CancelFunc
	// previousClusterctl is the clusterctl of build.clusterAPI.previous
	// (setup's previousClusterctl), "" when not prepared.
	previousClusterctl string
}

// DefaultScheme returns a scheme with client-go's types (the webhook check
// reads EndpointSlices), Cluster API's and CAPD's.
func DefaultScheme() *apiruntime.Scheme {
	sc := apiruntime.NewScheme()
	framework.TryAddDefaultSchemes(sc)
	// A type registered twice, or under two kinds, is a bug of this
	// module's dependencies: fail where it shows, not on a later lookup.
	utilruntime.Must(clientgoscheme.AddToScheme(sc))
	utilruntime.Must(infrav1.AddToScheme(sc))
	return sc
}

// CloudControllerManager returns the installer of the docker
// cloud-controller-manager for the workload clusters when the config's
// DOCKER_CLOUD_PROVIDER is "external" (the templates then run the kubelet
// with --cloud-provider=external), and nil otherwise.
func (e *Environment) CloudControllerManager() *ccm.Installer {
	if e == nil || e.cfg == nil || !e.cfg.CloudProviderExternal() {
		return nil
	}
	return &ccm.Installer{
		Image:             e.cfg.Build.CloudControllerManager.Image,
		LoadBalancerImage: e.cfg.Build.LoadBalancer.Image,
		RunID:             e.RunID,
		Engine:            e.Runtime,
	}
}

// Tracker records the workload clusters the run creates, so that what
// they leave is found and removed even if the run is killed (nil before
// setup got that far).
func (e *Environment) Tracker() *leak.Tracker {
	if e == nil {
		return nil
	}
	return e.tracker
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
	timeout, resync, err := e.cfg.Intervals(proxy.GetName(), "wait-controllers")
	if err != nil {
		return err
	}
	c, err := watchClient(proxy)
	if err != nil {
		return err
	}
	in := manifests.InstallInput{Client: c, Config: e.cfg, Wait: until, Timeout: timeout, Resync: resync, Options: o}
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
