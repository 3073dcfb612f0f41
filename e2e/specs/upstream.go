package specs

import (
	"context"
	"errors"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
	utilyaml "sigs.k8s.io/cluster-api/util/yaml"
)

// Some of the specs here are Cluster API's own (sigs.k8s.io/cluster-api/
// test/e2e), called as they are where capd-e2e adds nothing to what they
// check: docs/providers.md says which. They run in capd-e2e's
// environment: upstream's view of our config, our management cluster and
// its proxy (whose log collector is ours), our templates in our clusterctl
// repository, our artifacts layout (upstream's), and, through the control
// plane waiters every upstream spec accepts (upstreamWaiters), our
// cloud-controller-manager, our cluster tracking and our leak check.

// upstreamWaiters returns control plane waiters for an upstream spec that
// do upstream's default waits and, first, what capd-e2e does for each
// workload cluster it creates: record the cluster (Tracker), install its
// cloud-controller-manager (the templates run kubelet with
// --cloud-provider=external when the config says so, and no Node is
// initialised without it), and register a cleanup, run after upstream's
// (which deletes the cluster), that uninstalls the manager and fails the
// spec when anything of the cluster is left in the engine, removing it.
//
// The second waiter, once the control plane is ready, also waits for the
// cluster's MachinePools at the spec's wait-machine-pool-nodes interval.
// Upstream's ClusterClassChangesSpec creates its cluster without an
// interval for them (v1.14.2, clusterclass_changes.go: no
// WaitForMachinePools), so it waits for a MachinePool's Nodes for
// Gomega's default second and fails on any cluster that has one (its
// own suite's flavor has none). After this wait, upstream's finds them
// there. For a cluster without MachinePools, or a spec that gives the
// interval, it changes nothing.
func upstreamWaiters(in CommonInput, spec string) clusterctl.ControlPlaneWaiters {
	return clusterctl.ControlPlaneWaiters{
		WaitForControlPlaneInitialized: func(ctx context.Context, ain clusterctl.ApplyCustomClusterTemplateAndWaitInput, res *clusterctl.ApplyCustomClusterTemplateAndWaitResult) {
			cluster, namespace := ain.ClusterName, ain.Namespace
			trackUpstreamCluster(ctx, in, cluster)
			if in.CloudControllerManager != nil {
				By("install the cloud controller manager of " + cluster)
				Expect(in.CloudControllerManager.Install(ctx, ain.ClusterProxy.GetClient(), namespace, cluster)).To(Succeed(), "install the cloud controller manager of %s", cluster)
			}
			defaultControlPlaneWaiters().WaitForControlPlaneInitialized(ctx, ain, res)
		},
		WaitForControlPlaneMachinesReady: func(ctx context.Context, ain clusterctl.ApplyCustomClusterTemplateAndWaitInput, res *clusterctl.ApplyCustomClusterTemplateAndWaitResult) {
			defaultControlPlaneWaiters().WaitForControlPlaneMachinesReady(ctx, ain, res)
			framework.DiscoveryAndWaitForMachinePools(ctx, framework.DiscoveryAndWaitForMachinePoolsInput{
				Getter: ain.ClusterProxy.GetClient(), Lister: ain.ClusterProxy.GetClient(), Cluster: res.Cluster,
			}, in.E2EConfig.GetIntervals(spec, "wait-machine-pool-nodes")...)
		},
	}
}

// defaultControlPlaneWaiters are upstream's own, which
// ApplyCustomClusterTemplateAndWait uses when it is given none: the
// KubeadmControlPlane initialised, then it and its Machines ready.
func defaultControlPlaneWaiters() clusterctl.ControlPlaneWaiters {
	return clusterctl.ControlPlaneWaiters{
		WaitForControlPlaneInitialized: func(ctx context.Context, in clusterctl.ApplyCustomClusterTemplateAndWaitInput, res *clusterctl.ApplyCustomClusterTemplateAndWaitResult) {
			res.ControlPlane = framework.DiscoveryAndWaitForControlPlaneInitialized(ctx, framework.DiscoveryAndWaitForControlPlaneInitializedInput{
				Lister: in.ClusterProxy.GetClient(), Cluster: res.Cluster,
			}, in.WaitForControlPlaneIntervals...)
		},
		WaitForControlPlaneMachinesReady: func(ctx context.Context, in clusterctl.ApplyCustomClusterTemplateAndWaitInput, res *clusterctl.ApplyCustomClusterTemplateAndWaitResult) {
			framework.WaitForControlPlaneAndMachinesReady(ctx, framework.WaitForControlPlaneAndMachinesReadyInput{
				GetLister: in.ClusterProxy.GetClient(), Cluster: res.Cluster, ControlPlane: res.ControlPlane,
			}, in.WaitForControlPlaneIntervals...)
		},
	}
}

// trackUpstreamCluster records cluster of an upstream spec (Tracker) and
// registers upstreamCleanup, to run after upstream's own cleanup.
func trackUpstreamCluster(ctx context.Context, in CommonInput, cluster string) {
	if in.Tracker != nil {
		Expect(in.Tracker.Track(ctx, cluster)).To(Succeed(), "track cluster %s", cluster)
	}
	DeferCleanup(func(ctx SpecContext) { upstreamCleanup(ctx, in, cluster) }, NodeTimeout(cleanupAllowance))
}

// upstreamCleanup runs after an upstream spec's own cleanup deleted its
// cluster (unless SkipCleanup): the cloud-controller-manager's load
// balancers removed, then the leak check of the cluster.
func upstreamCleanup(ctx context.Context, in CommonInput, cluster string) {
	if in.SkipCleanup {
		return
	}
	By("cleanup: the load balancers and the leak check of " + cluster)
	var errs []error
	if in.CloudControllerManager != nil {
		if removed, err := in.CloudControllerManager.Uninstall(ctx, cluster); err != nil {
			errs = append(errs, fmt.Errorf("uninstall the cloud controller manager of %s: %w", cluster, err))
		} else if len(removed) > 0 {
			fmt.Fprintf(GinkgoWriter, "removed the load balancers of %s: %v\n", cluster, removed)
		}
	}
	errs = append(errs, checkLeaks(ctx, in.Runtime, cluster))
	Expect(errors.Join(errs...)).ToNot(HaveOccurred())
}

// trackingProxy is the management cluster's proxy for an upstream spec
// that creates its cluster itself, with a name of its own and no control
// plane waiters (KCPRemediationSpec): each Cluster in the YAML it applies
// through CreateOrUpdate is tracked, with the cleanup upstreamWaiters
// registers, before it is created, and gets the cloud-controller-manager
// once it is.
type trackingProxy struct {
	framework.ClusterProxy
	in        CommonInput
	installed map[string]bool
}

func newTrackingProxy(in CommonInput) *trackingProxy {
	return &trackingProxy{ClusterProxy: in.BootstrapClusterProxy, in: in, installed: map[string]bool{}}
}

// CreateOrUpdate tracks the Clusters in resources, applies resources, and
// installs the manager for each Cluster it has not been installed for.
// Upstream calls it from the spec's goroutine (inside an Eventually), so
// the cleanups are the spec's.
func (p *trackingProxy) CreateOrUpdate(ctx context.Context, resources []byte, options ...framework.CreateOrUpdateOption) error {
	clusters, err := clustersIn(resources)
	if err != nil {
		return err
	}
	for _, c := range clusters {
		if _, seen := p.installed[c.Name]; !seen {
			trackUpstreamCluster(ctx, p.in, c.Name)
			p.installed[c.Name] = false
		}
	}
	if err := p.ClusterProxy.CreateOrUpdate(ctx, resources, options...); err != nil {
		return err
	}
	for _, c := range clusters {
		if p.in.CloudControllerManager == nil || p.installed[c.Name] {
			continue
		}
		By("install the cloud controller manager of " + c.Name)
		if err := p.in.CloudControllerManager.Install(ctx, p.GetClient(), c.Namespace, c.Name); err != nil {
			return fmt.Errorf("install the cloud controller manager of %s: %w", c.Name, err)
		}
		p.installed[c.Name] = true
	}
	return nil
}

// clustersIn returns the namespace and name of each Cluster API Cluster
// among the YAML documents of resources.
func clustersIn(resources []byte) ([]types.NamespacedName, error) {
	objs, err := utilyaml.ToUnstructured(resources)
	if err != nil {
		return nil, fmt.Errorf("read the objects to create: %w", err)
	}
	var out []types.NamespacedName
	for _, o := range objs {
		if gvk := o.GroupVersionKind(); gvk.Group == clusterv1.GroupVersion.Group && gvk.Kind == "Cluster" {
			out = append(out, types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
		}
	}
	return out, nil
}
