package specs

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"

	"github.com/capd-e2e/capd-e2e/framework/leak"
	"github.com/capd-e2e/capd-e2e/framework/logs"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
	"github.com/capd-e2e/capd-e2e/framework/snapshot"
	"github.com/capd-e2e/capd-e2e/framework/suite"
)

// CommonInput is what every spec needs; each spec's input embeds it. A suite
// usually fills one CommonInput and reuses it for all its specs: with the
// harness's suite, CommonInputFrom(suite's Environment).
type CommonInput struct {
	// E2EConfig is upstream's view of config/e2e.yaml (framework/config/upstream
	// builds it). Required. Its intervals set every wait of a spec, looked up
	// as "<spec>/<key>" then "default/<key>" (upstream.Intervals); a wait
	// whose key is in neither fails the spec instead of falling back to a
	// hidden default.
	E2EConfig *clusterctl.E2EConfig

	// ClusterctlConfigPath is the clusterctl config pointing at the local
	// repository that holds the cluster templates. Required; must exist.
	ClusterctlConfigPath string

	// BootstrapClusterProxy is the management cluster the workload clusters
	// are created in. Required.
	BootstrapClusterProxy framework.ClusterProxy

	// ArtifactFolder receives everything a spec leaves behind, in upstream's
	// layout (clusters/<name>/..., clusters/bootstrap/resources/...).
	// Required; created if missing.
	ArtifactFolder string

	// Runtime is the container engine CAPD's machines run in: logs and the
	// container snapshot are read through it, the machine-health-check spec
	// breaks machines through it, and the leak check lists and removes what
	// is left in it. Required (the suite owns it and closes it; specs never
	// do).
	Runtime Engine

	// LogCollector collects the machines' logs at the end of a spec. If
	// unset, a logs.Collector with its defaults on Runtime.
	LogCollector LogCollector

	// SkipCleanup keeps the workload cluster and its namespace after the
	// spec (logs, resources and the snapshot are still collected, and the
	// leak check is skipped, since everything is left on purpose). If unset,
	// false.
	SkipCleanup bool

	// CleanupTimeout bounds each of a spec's cleanup nodes (and, for the
	// self-hosted spec, the move back). If unset, the log collection twice
	// (logs.DefaultTimeout), the cleanup's waits at the config's intervals
	// (wait-delete-cluster; for the self-hosted spec's move back
	// wait-worker-nodes and wait-cluster) and five minutes for the steps
	// without an interval (describe, dumps, the namespace, the leak check).
	CleanupTimeout time.Duration

	// InfrastructureProvider names the provider whose templates clusterctl
	// uses, e.g. "docker" or "docker:v1.14.2". If unset, the only
	// infrastructure provider installed in the management cluster.
	InfrastructureProvider *string

	// ClusterctlVariables are passed to clusterctl when it renders the
	// cluster template, on top of the config's variables. If unset, none.
	ClusterctlVariables map[string]string

	// PostNamespaceCreated is called after the spec's namespace is created
	// in the management cluster (and, for the self-hosted spec, in the
	// self-hosted cluster too). If unset, nothing is called.
	PostNamespaceCreated func(managementClusterProxy framework.ClusterProxy, workloadClusterNamespace string)

	// CloudControllerManager, if set, is installed for each workload
	// cluster right after its objects are created (framework/ccm for the
	// docker cloud provider; CommonInputFrom sets it when the config's
	// DOCKER_CLOUD_PROVIDER is "external", to match the templates'
	// --cloud-provider=external), and the specs check its work. If unset,
	// none is (CAPD initialises the Nodes, as upstream).
	CloudControllerManager CloudControllerManager

	// Tracker records each workload cluster the spec creates, before it is
	// created, so that what it leaves is found and removed even if the run
	// is killed (leak.Tracker; CommonInputFrom sets it). If unset, nothing
	// is recorded.
	Tracker ClusterTracker
}

// CommonInputFrom returns the CommonInput for the management cluster env
// that framework/suite set up: its config, clusterctl config, proxy,
// artifacts folder, engine, cleanup setting, cluster tracker and, when the
// config asks for an external cloud provider, the cloud-controller-manager.
// Call it in a spec's input function, which runs after setup.
func CommonInputFrom(env *suite.Environment) CommonInput {
	in := CommonInput{
		E2EConfig:             env.E2EConfig,
		ClusterctlConfigPath:  env.ClusterctlConfigPath,
		BootstrapClusterProxy: env.BootstrapClusterProxy,
		ArtifactFolder:        env.ArtifactFolder,
		Runtime:               env.Runtime,
		SkipCleanup:           env.SkipCleanup,
	}
	if t := env.Tracker(); t != nil {
		in.Tracker = t
	}
	if m := env.CloudControllerManager(); m != nil {
		in.CloudControllerManager = m
	}
	return in
}

// Engine is what the specs need of the container engine: reading machines
// (logs, snapshot), breaking them (the machine-health-check spec) and
// finding and removing what a cluster left.
type Engine interface {
	logs.Engine
	snapshot.Engine
	leak.Lister
	leak.Remover
	// Stop stops a container, killing it after timeout.
	Stop(ctx context.Context, nameOrID string, timeout time.Duration) error
	// DisconnectNetwork detaches a container from a network.
	DisconnectNetwork(ctx context.Context, network, container string) error
}

var _ Engine = runtime.Runtime(nil)

// LogCollector collects a workload cluster's machine logs (logs.Collector):
// at the end of a spec, and for the self-hosted cluster's proxy.
type LogCollector interface {
	framework.ClusterLogCollector
	// CollectClusterExcept collects into dir the logs of every container
	// of cluster whose name is not in seen, and adds their names to seen.
	CollectClusterExcept(ctx context.Context, cluster, dir string, seen map[string]bool) error
}

var _ LogCollector = (*logs.Collector)(nil)

// CloudControllerManager installs a workload cluster's
// cloud-controller-manager in the management cluster (framework/ccm does,
// for the docker cloud provider). The specs install it right after the
// cluster's objects are created, before any Node registers, and uninstall
// it once the Cluster is deleted.
type CloudControllerManager interface {
	// Install installs the manager of cluster in namespace; the Cluster
	// exists.
	Install(ctx context.Context, c client.Client, namespace, cluster string) error
	// Uninstall removes what the manager of cluster made outside the
	// management cluster (its load balancers) and returns their names; the
	// Cluster is gone.
	Uninstall(ctx context.Context, cluster string) ([]string, error)
}

// ClusterTracker records that the run owns a cluster (leak.Tracker).
type ClusterTracker interface {
	Track(ctx context.Context, cluster string) error
}

var _ ClusterTracker = (*leak.Tracker)(nil)
