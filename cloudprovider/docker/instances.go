package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/capd-e2e/capd-e2e/cloudprovider/names"
	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// Node metadata this provider sets and CAPD never does, so that a test can
// tell the cloud-controller-manager's work from CAPD's: CAPD sets only
// spec.providerID and InternalIP addresses, never an instance type, zone or
// region label.
const (
	// InstanceTypeControlPlane is the instance type
	// (node.kubernetes.io/instance-type) of a control plane machine.
	InstanceTypeControlPlane = names.InstanceTypeControlPlane
	// InstanceTypeWorker is the instance type of a worker machine.
	InstanceTypeWorker = names.InstanceTypeWorker
	// Region is every node's region (topology.kubernetes.io/region): one
	// engine is one region.
	Region = names.Region
	// DefaultZone is the zone (topology.kubernetes.io/zone) of a machine
	// whose container has no failure domain label.
	DefaultZone = names.DefaultZone
	// LabelFailureDomain is the container label in which CAPD records the
	// Machine's spec.failureDomain, when it has one (CAPD v1.14.2
	// internal/docker FailureDomainLabel); its value is the node's zone.
	LabelFailureDomain = names.LabelFailureDomain
)

// Roles CAPD gives machine containers in runtime.LabelRole.
const (
	roleControlPlane = "control-plane"
	roleWorker       = "worker"
)

// instances implements cloudprovider.InstancesV2 over containers.
type instances struct {
	rt      ContainerInspector
	cluster string
	network string
	timeout time.Duration
	// families are the node InternalIPs' families, in order
	// (Config.NodeIPFamilies).
	families []v1.IPFamily
}

var _ cloudprovider.InstancesV2 = (*instances)(nil)

// InstanceExists implements cloudprovider.InstancesV2. It reports false only
// when the engine says the container is gone; any other failure (engine
// unreachable, timeout, a container of another cluster) is an error, since
// the node lifecycle controller deletes the Nodes of instances that do not
// exist.
func (i *instances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, i.timeout)
	defer cancel()
	if _, err := i.container(ctx, node); err != nil {
		if errors.Is(err, runtime.ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// InstanceShutdown implements cloudprovider.InstancesV2: a machine is shut
// down unless its container is running or restarting. Paused counts as shut
// down: the engine says "running" with a paused state, but nothing in the
// container runs.
func (i *instances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, i.timeout)
	defer cancel()
	d, err := i.container(ctx, node)
	if err != nil {
		return false, err
	}
	return shutdown(d.State), nil
}

func shutdown(s runtime.ContainerState) bool {
	switch s.Status {
	case "running", "restarting":
		return false
	case "":
		return !s.Running
	default: // created, paused, exited, stopped (Podman), dead, removing
		return true
	}
}

// InstanceMetadata implements cloudprovider.InstancesV2. The addresses are
// the container's on the provider's network (InternalIP, IPv4 first) and
// the node's name (Hostname). A container with no address on that network
// (not started yet, or stopped) is an error rather than an empty list: an
// empty list would let the node controller initialize the node without
// addresses, while an error makes it try again.
func (i *instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	ctx, cancel := context.WithTimeout(ctx, i.timeout)
	defer cancel()
	d, err := i.container(ctx, node)
	if err != nil {
		if errors.Is(err, runtime.ErrNotFound) {
			return nil, fmt.Errorf("%w: %w", cloudprovider.InstanceNotFound, err)
		}
		return nil, err
	}
	var instanceType string
	switch role := d.Labels[runtime.LabelRole]; role {
	case roleControlPlane:
		instanceType = InstanceTypeControlPlane
	case roleWorker:
		instanceType = InstanceTypeWorker
	default:
		return nil, fmt.Errorf("container %q of node %q has role %q (label %s), not a machine's", d.Name, node.Name, role, runtime.LabelRole)
	}
	zone := DefaultZone
	if fd := d.Labels[LabelFailureDomain]; fd != "" {
		if errs := validation.IsValidLabelValue(fd); len(errs) > 0 {
			return nil, fmt.Errorf("container %q of node %q: failure domain %q (label %s) cannot be a zone label: %s",
				d.Name, node.Name, fd, LabelFailureDomain, strings.Join(errs, "; "))
		}
		zone = fd
	}
	addrs, err := i.addresses(d, node.Name)
	if err != nil {
		return nil, err
	}
	return &cloudprovider.InstanceMetadata{
		ProviderID:    ProviderID(d.Name),
		InstanceType:  instanceType,
		NodeAddresses: addrs,
		Zone:          zone,
		Region:        Region,
	}, nil
}

func (i *instances) addresses(d runtime.ContainerDetails, nodeName string) ([]v1.NodeAddress, error) {
	ep, ok := d.Networks[i.network]
	if !ok {
		return nil, fmt.Errorf("container %q of node %q is not attached to network %q", d.Name, nodeName, i.network)
	}
	families := i.families
	if len(families) == 0 {
		families = DefaultNodeIPFamilies
	}
	var out []v1.NodeAddress
	for _, f := range families {
		ip := ep.IPv4
		if f == v1.IPv6Protocol {
			ip = ep.IPv6
		}
		if ip != "" {
			out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("container %q of node %q (%s) has no address on network %q yet (node IP families: %s)", d.Name, nodeName, d.State.Status, i.network, familyNames(families))
	}
	return append(out, v1.NodeAddress{Type: v1.NodeHostName, Address: nodeName}), nil
}

// container finds the container of node: the one named in its provider ID
// when set, else the one named after the node (CAPD names a machine's
// container, and so its hostname and node, after the Machine). It returns an
// error wrapping runtime.ErrNotFound when there is none, and an error when
// the container is not one of this cluster's.
func (i *instances) container(ctx context.Context, node *v1.Node) (runtime.ContainerDetails, error) {
	name := node.Name
	if node.Spec.ProviderID != "" {
		var err error
		if name, err = ParseProviderID(node.Spec.ProviderID); err != nil {
			return runtime.ContainerDetails{}, fmt.Errorf("find the machine of node %q: %w", node.Name, err)
		}
	}
	if name == "" {
		return runtime.ContainerDetails{}, errors.New("find the machine of a node without a name or provider ID")
	}
	d, err := i.rt.InspectContainer(ctx, name)
	if err != nil {
		return runtime.ContainerDetails{}, fmt.Errorf("find the machine of node %q: %w", node.Name, err)
	}
	// The engine also resolves IDs and ID prefixes; only the name counts.
	if d.Name != name {
		return runtime.ContainerDetails{}, fmt.Errorf("find the machine of node %q: container %q: %w", node.Name, name, runtime.ErrNotFound)
	}
	if got := d.Labels[runtime.LabelCluster]; got != i.cluster {
		return runtime.ContainerDetails{}, fmt.Errorf("find the machine of node %q: container %q belongs to cluster %q (label %s), not to %q",
			node.Name, name, got, runtime.LabelCluster, i.cluster)
	}
	return d, nil
}

// familyNames is families as text: "IPv4, IPv6".
func familyNames(families []v1.IPFamily) string {
	names := make([]string, len(families))
	for i, f := range families {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}
