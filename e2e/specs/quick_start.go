package specs

import (
	. "github.com/onsi/ginkgo/v2"

	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
)

// QuickStartSpecInput is the input of QuickStartSpec.
type QuickStartSpecInput struct {
	CommonInput

	// Flavor is the cluster template flavor. If unset, the default template
	// (cluster-template.yaml).
	Flavor *string

	// ControlPlaneMachineCount is the number of control-plane machines. If
	// unset, 1.
	ControlPlaneMachineCount *int64

	// WorkerMachineCount is the number of worker machines. If unset, 1.
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
// signal meant to block pull requests (label PR-Blocking).
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
		Label(LabelPRBlocking, LabelQuickStart), SpecTimeout(QuickStartTimeout),
		func(ctx SpecContext) {
			in := inputGetter()
			r := begin(ctx, "quick-start", in.CommonInput)
			r.createCluster(ctx, createOptions{
				flavor:                  deref(in.Flavor, clusterctl.DefaultFlavor),
				kubernetesVersion:       r.variable(varKubernetesVersion),
				controlPlaneCount:       deref(in.ControlPlaneMachineCount, 1),
				workerCount:             deref(in.WorkerMachineCount, 1),
				waiters:                 in.ControlPlaneWaiters,
				postMachinesProvisioned: in.PostMachinesProvisioned,
			})
			if in.CloudControllerManager != nil {
				wl := r.mgmt.GetWorkloadCluster(ctx, r.namespace, r.clusterName)
				defer wl.Dispose(ctx)
				r.checkNodesInitialised(ctx, wl)
				r.checkLoadBalancer(ctx, wl)
			}
		})
}
