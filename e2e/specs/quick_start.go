package specs

import (
	"slices"

	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
)

// specQuickStart is the quick-start's name, and its facts.
var specQuickStart = declare(specFacts{
	name: "quick-start", label: LabelQuickStart,
	variables: []string{varKubernetesVersion},
	waits:     quickStartWaits,
	files:     []string{"quick_start.go", "cloud_provider.go"},
})

// quickStartWaits are the waits of createQuickStartCluster: the creation
// and, with a cloud-controller-manager, every Node initialised and the
// LoadBalancer check (beside the machine waits): CoreDNS, an address, a
// backend Node, the answer, the load balancer gone, the Service gone, the
// backend pod gone.
var quickStartWaits = slices.Concat(creationWaits,
	[]string{"wait-nodes-ready",
		"wait-load-balancer", "wait-load-balancer", "wait-worker-nodes",
		"wait-load-balancer", "wait-load-balancer", "wait-load-balancer", "wait-load-balancer"})

// QuickStartSpecInput is the input of QuickStartSpec.
type QuickStartSpecInput struct {
	CommonInput

	// Timeout bounds the spec's It. If unset, the sum of the spec's waits
	// at the config's intervals (see Intervals below): each wait is bounded
	// by its interval already, so this is a backstop.
	Timeout time.Duration

	// Flavor is the cluster template flavor. If unset, the default template
	// (cluster-template.yaml); "topology" is a Cluster of the ClusterClass
	// quick-start.
	Flavor *string

	// ControlPlaneMachineCount is the number of control-plane machines. If
	// unset, 1.
	ControlPlaneMachineCount *int64

	// WorkerMachineCount is the number of worker machines. If unset, 1.
	// With 0 (a flavor with a control plane only, such as
	// "topology-kcp-only"), the load balancer check is left out: no Node
	// can back a load balancer, as kubeadm excludes control-plane Nodes
	// from them.
	WorkerMachineCount *int64

	// ControlPlaneWaiters replace the waits for the control plane to be
	// initialised and to be ready, as upstream's. If unset, the
	// KubeadmControlPlane waits.
	ControlPlaneWaiters clusterctl.ControlPlaneWaiters

	// PostMachinesProvisioned is called once every Machine is provisioned,
	// before the Cluster's and Machines' conditions are checked. If unset,
	// nothing is called.
	PostMachinesProvisioned func(managementClusterProxy framework.ClusterProxy, workloadClusterNamespace, workloadClusterName string)
}

// QuickStartSpec creates a workload cluster the way Cluster API's quick
// start does, from a clusterctl template, and checks that it becomes
// Available with every Machine Ready and a Node behind it; then it deletes
// the cluster and checks that no container is left. It is the fast, broad
// signal meant to block pull requests: a suite puts PR-Blocking on the
// Describe that calls it, with Flavor "topology" (a Cluster of the
// ClusterClass quick-start, with a MachineDeployment and a MachinePool) as
// upstream's PR gate does. After the cluster is created, and again before
// it is deleted, it checks the owner references and finalizers of every
// object of the cluster with upstream's assertions.
//
// With a CloudControllerManager, it also checks that the manager
// initialised every Node (provider ID, addresses, the instance type,
// region and zone labels CAPD never sets, no uninitialized taint), and
// that a Service of type LoadBalancer gets an address that answers HTTP
// from the host, whose load balancer goes with the Service.
//
// Spec name (intervals, namespace, cluster): "quick-start". Intervals:
// wait-cluster, wait-control-plane, wait-worker-nodes, wait-delete-cluster,
// and with a CloudControllerManager wait-nodes-ready and
// wait-load-balancer.
// Variables: KUBERNETES_VERSION.
func QuickStartSpec(inputGetter func() QuickStartSpecInput) {
	It("creates a workload cluster whose Machines all become Ready, and deletes it without leftovers",
		Label(LabelQuickStart),
		func(specCtx SpecContext) {
			in := inputGetter()
			r, ctx := begin(specCtx, specQuickStart, in.CommonInput, in.Timeout)
			r.createQuickStartCluster(ctx, createOptions{
				flavor:                  deref(in.Flavor, clusterctl.DefaultFlavor),
				kubernetesVersion:       r.variable(varKubernetesVersion),
				controlPlaneCount:       deref(in.ControlPlaneMachineCount, 1),
				workerCount:             deref(in.WorkerMachineCount, 1),
				waiters:                 in.ControlPlaneWaiters,
				postMachinesProvisioned: in.PostMachinesProvisioned,
			})
		})
}

// createQuickStartCluster creates the cluster of o as the quick-start
// does (createCluster). With a CloudControllerManager it also checks that
// the manager initialised every Node and, once the control plane is
// initialised and while the spec waits for the machines, that a Service
// of type LoadBalancer gets an address that answers (unless o has no
// worker: kubeadm excludes control-plane Nodes from load balancers).
// o.controlPlaneInitialized is its own.
func (r *run) createQuickStartCluster(ctx context.Context, o createOptions) *clusterctl.ApplyClusterTemplateAndWaitResult {
	var wl framework.ClusterProxy
	joinLB := func() {}
	o.controlPlaneInitialized = func() {
		if r.in.CloudControllerManager == nil {
			return
		}
		// The workload cluster's API server answers from here on: the
		// load balancer check needs nothing more (a worker for a
		// backend, which it waits for), so it runs while the spec waits
		// for the machines.
		wl = r.mgmt.GetWorkloadCluster(ctx, r.namespace, r.clusterName)
		DeferCleanup(wl.Dispose)
		if o.workerCount == 0 {
			r.summary.Set("load balancer", "not checked: no worker Node can back one (kubeadm excludes control-plane Nodes)")
			return
		}
		joinLB = r.background(ctx, "a Service of type LoadBalancer", func(ctx context.Context, g Gomega, step func(string, func())) {
			r.checkLoadBalancer(ctx, wl, g, step)
		})
	}
	res := r.createCluster(ctx, o)
	if r.in.CloudControllerManager != nil {
		r.checkNodesInitialised(ctx, wl)
		joinLB()
	}
	return res
}
