package docker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/capd-e2e/capd-e2e/cloudprovider/names"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// ProviderName is the cloud provider's name: the value of
// --cloud-provider, and the scheme of the provider IDs it hands out.
const ProviderName = names.ProviderName

// Defaults for Config.
const (
	// DefaultNetwork is the engine network CAPD attaches every machine to
	// (CAPD v1.14.2 internal/docker DefaultNetwork).
	DefaultNetwork = "kind"
	// DefaultLoadBalancerImage is the haproxy image the harness builds for
	// CAPD (factory/nodeimage HAProxyBuilder).
	DefaultLoadBalancerImage = "kindest/haproxy:v20230606-42a2262b"
	// DefaultCallTimeout bounds one call of the cloud provider.
	DefaultCallTimeout = time.Minute
)

// DefaultLoadBalancerUlimits are the load balancer containers' limits when
// Config.LoadBalancerUlimits is nil. They are set explicitly because
// Podman's own defaults exceed what hosts without CAP_SYS_RESOURCE grant
// (see runtime.ContainerSpec.Ulimits), and because the image's haproxy
// wrapper sizes maxconn from the open-file limit: 8192 files give
// (8192-100)/2 = 4046 connections, ample for tests, and stay below the hard
// limits of the engines seen (20,000 here).
var DefaultLoadBalancerUlimits = []runtime.Ulimit{
	{Name: "nofile", Soft: 8192, Hard: 8192},
	{Name: "nproc", Soft: 4096, Hard: 4096},
}

// Runtime is the part of runtime.Containers the cloud provider uses. Node
// lookups need only InspectContainer; load balancers need the rest.
type Runtime interface {
	ContainerInspector
	RunContainer(ctx context.Context, spec runtime.ContainerSpec) (string, error)
	Exec(ctx context.Context, nameOrID string, opts runtime.ExecOptions) (runtime.ExecResult, error)
	Kill(ctx context.Context, nameOrID, signal string) error
	RemoveContainer(ctx context.Context, nameOrID string) error
}

// ContainerInspector finds one container; it is all that InstancesV2 needs.
type ContainerInspector interface {
	InspectContainer(ctx context.Context, nameOrID string) (runtime.ContainerDetails, error)
}

var _ Runtime = runtime.Containers(nil)

// Config configures a Cloud.
type Config struct {
	// Runtime reaches the engine that runs the cluster's machines. Required.
	Runtime Runtime
	// ClusterName is the name of the Cluster API cluster (the manager's
	// --cluster-name): only containers labelled
	// io.x-k8s.kind.cluster=ClusterName are this cluster's machines, and
	// load balancer containers are named and labelled after it. Required.
	ClusterName string
	// Network is the engine network whose addresses are the nodes'
	// InternalIPs and the load balancers' ingress IPs. If empty,
	// DefaultNetwork.
	Network string
	// LoadBalancerImage is the haproxy image load balancers run. It must
	// start haproxy in master-worker mode on HAProxyConfigPath, reload on
	// SIGHUP and have cp and cat. If empty, DefaultLoadBalancerImage.
	LoadBalancerImage string
	// LoadBalancerUlimits are the load balancer containers' resource
	// limits. If nil, DefaultLoadBalancerUlimits.
	LoadBalancerUlimits []runtime.Ulimit
	// RunID, if set, labels load balancer containers with
	// runtime.LabelRunID=RunID, so the harness run that started this
	// manager finds them in its leak check. If empty, no run id label.
	RunID string
	// CallTimeout bounds each call the controllers make (one lookup, one
	// load balancer reconciliation). If zero, DefaultCallTimeout.
	CallTimeout time.Duration
	// NodeIPFamilies are the families of a node's InternalIPs, in order:
	// the cluster's, as a real provider's (AWS's cloud provider has the
	// same setting). An IPv6-only cluster's nodes get only their IPv6
	// address, although their machines have both on the network. If
	// empty, DefaultNodeIPFamilies. Each must be IPv4 or IPv6, once.
	NodeIPFamilies []v1.IPFamily
}

// DefaultNodeIPFamilies are Config.NodeIPFamilies when it is empty: an
// IPv4 and an IPv6 address, IPv4 first (what CAPD itself gives a
// dual-stack cluster's nodes).
var DefaultNodeIPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}

// Cloud is the cloud provider. It is safe for concurrent use.
type Cloud struct {
	instances *instances
	lb        *loadBalancer
}

var _ cloudprovider.Interface = (*Cloud)(nil)

// New checks cfg, fills in its defaults and returns the cloud provider.
func New(cfg Config) (*Cloud, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("docker cloud provider: Config.Runtime is nil")
	}
	if cfg.ClusterName == "" {
		return nil, errors.New("docker cloud provider: Config.ClusterName is empty")
	}
	if cfg.Network == "" {
		cfg.Network = DefaultNetwork
	}
	if cfg.LoadBalancerImage == "" {
		cfg.LoadBalancerImage = DefaultLoadBalancerImage
	}
	if cfg.LoadBalancerUlimits == nil {
		cfg.LoadBalancerUlimits = DefaultLoadBalancerUlimits
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	for _, u := range cfg.LoadBalancerUlimits {
		if u.Name == "" || u.Soft < 0 || u.Hard < u.Soft {
			return nil, fmt.Errorf("docker cloud provider: invalid load balancer ulimit %+v", u)
		}
	}
	if len(cfg.NodeIPFamilies) == 0 {
		cfg.NodeIPFamilies = DefaultNodeIPFamilies
	}
	for i, f := range cfg.NodeIPFamilies {
		if f != v1.IPv4Protocol && f != v1.IPv6Protocol {
			return nil, fmt.Errorf("docker cloud provider: node IP family %q is neither %s nor %s", f, v1.IPv4Protocol, v1.IPv6Protocol)
		}
		if slices.Contains(cfg.NodeIPFamilies[:i], f) {
			return nil, fmt.Errorf("docker cloud provider: node IP family %s given twice", f)
		}
	}
	machines := &instances{rt: cfg.Runtime, cluster: cfg.ClusterName, network: cfg.Network, timeout: cfg.CallTimeout, families: slices.Clone(cfg.NodeIPFamilies)}
	return &Cloud{
		instances: machines,
		lb: &loadBalancer{
			rt: cfg.Runtime, cluster: cfg.ClusterName, network: cfg.Network, image: cfg.LoadBalancerImage,
			ulimits: cfg.LoadBalancerUlimits, runID: cfg.RunID, timeout: cfg.CallTimeout, machines: machines,
		},
	}, nil
}

// Initialize implements cloudprovider.Interface. The provider needs no
// client of the workload cluster: it learns all it needs from the engine
// and from the objects the controllers pass in.
func (c *Cloud) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}

// LoadBalancer implements cloudprovider.Interface.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c.lb, true }

// Instances implements cloudprovider.Interface: only InstancesV2 is
// offered.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

// InstancesV2 implements cloudprovider.Interface.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c.instances, true }

// Zones implements cloudprovider.Interface: zones come with
// InstancesV2.InstanceMetadata, so the deprecated Zones is not offered.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

// Clusters implements cloudprovider.Interface: not supported.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// Routes implements cloudprovider.Interface: not supported. The machines
// share one engine network and the cluster's CNI routes pod traffic itself.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return nil, false }

// ProviderName implements cloudprovider.Interface.
func (c *Cloud) ProviderName() string { return ProviderName }

// HasClusterID implements cloudprovider.Interface: every container the
// provider acts on carries the cluster's name.
func (c *Cloud) HasClusterID() bool { return true }
