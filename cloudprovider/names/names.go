// Package names holds what the docker cloud-controller-manager writes that
// others read: the provider ID, the Node labels it sets (which CAPD never
// sets, so that a test can tell its work from CAPD's) and the labels of
// its load balancer containers. cloudprovider/docker writes them; the
// specs and the leak checks read them. It imports nothing, so that both
// sides can depend on it cheaply.
package names

const (
	// ProviderName is the cloud provider's name (--cloud-provider).
	ProviderName = "docker"
	// ProviderIDPrefix prefixes a container's name in a Node's
	// spec.providerID, exactly as CAPD spells it: docker:////<container>.
	ProviderIDPrefix = ProviderName + ":////"

	// InstanceTypeControlPlane and InstanceTypeWorker are the
	// node.kubernetes.io/instance-type of control-plane and worker
	// machines.
	InstanceTypeControlPlane = "docker-control-plane"
	InstanceTypeWorker       = "docker-worker"
	// Region is every Node's topology.kubernetes.io/region.
	Region = "docker"
	// DefaultZone is the topology.kubernetes.io/zone of a machine without
	// a failure domain; one with CAPD's failure domain label has that.
	DefaultZone = "docker-default"
	// LabelFailureDomain is the container label CAPD records a machine's
	// failure domain in.
	LabelFailureDomain = "io.x-k8s.cluster.failureDomain"

	// LabelCluster names the workload cluster a load balancer container
	// serves (the harness's leak checks select by it).
	LabelCluster = "e2e.capd.x-k8s.io/cluster"
	// LabelService is "<namespace>/<name>" of the Service it serves.
	LabelService = "e2e.capd.x-k8s.io/service"
	// LabelServiceUID is the Service's UID.
	LabelServiceUID = "e2e.capd.x-k8s.io/service-uid"
	// Component is runtime.LabelCreatedBy of its load balancers.
	Component = "capd-cloud-controller-manager"
)
