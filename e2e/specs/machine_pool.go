package specs

import (
	"slices"

	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// specMachinePool is the MachinePool spec's name, and its facts.
var specMachinePool = declare(specFacts{
	name: "machine-pool", label: LabelMachinePool,
	variables: []string{varKubernetesVersion},
	waits: slices.Concat(creationWaits,
		// Each scaling step (3, 1, 0 by default: set Timeout for more).
		[]string{"wait-machine-pool-nodes", "wait-machine-pool-nodes", "wait-machine-pool-nodes"},
		healthWaits),
	files: []string{"machine_pool.go"},
})

// labelDevMachinePool is the label CAPD's docker backend puts on each
// container of a DevMachinePool, with the DevMachinePool's name.
const labelDevMachinePool = "dev.cluster.x-k8s.io/machine-pool"

// MachinePoolSpecInput is the input of MachinePoolSpec.
type MachinePoolSpecInput struct {
	CommonInput

	// Timeout bounds the spec's It. If unset, the sum of the spec's waits
	// at the config's intervals.
	Timeout time.Duration

	// Flavor is the cluster template flavor: one MachinePool on the
	// infrastructure provider's machine pool kind. If unset, "machine-pool"
	// (cluster-template-machine-pool.yaml).
	Flavor *string

	// ControlPlaneMachineCount is the number of control-plane machines. If
	// unset, 1.
	ControlPlaneMachineCount *int64

	// Replicas is the MachinePool's size at creation. If unset, 2.
	Replicas *int64

	// ScaleTo are the sizes the MachinePool is scaled to, one after the
	// other. If unset, 3, 1, 0: up, down, to nothing.
	ScaleTo []int32

	// ControlPlaneWaiters replace the waits for the control plane at
	// creation, as upstream's. If unset, the KubeadmControlPlane waits.
	ControlPlaneWaiters clusterctl.ControlPlaneWaiters
}

// MachinePoolSpec creates a cluster whose workers are a MachinePool, then
// scales the pool to each size of ScaleTo and checks every step: the
// MachinePool's replicas, ready replicas and Nodes at the new size, its
// containers in the engine (CAPD's docker backend labels them, see
// labelDevMachinePool) at the new size, so that a scale-down leaves none
// behind, and with a CloudControllerManager every Node initialised by it.
// Each step's time goes to the summary.
//
// Spec name: "machine-pool". Intervals: those of the quick-start, plus
// wait-machine-pool-nodes (creation, and each scaling step).
// Variables: KUBERNETES_VERSION.
func MachinePoolSpec(inputGetter func() MachinePoolSpecInput) {
	It("scales a MachinePool up, down and to zero, its Nodes and containers following",
		Label(LabelMachinePool),
		func(specCtx SpecContext) {
			in := inputGetter()
			r, ctx := begin(specCtx, specMachinePool, in.CommonInput, in.Timeout)
			scales := in.ScaleTo
			if scales == nil {
				scales = []int32{3, 1, 0}
			}
			res := r.createCluster(ctx, createOptions{
				flavor:            deref(in.Flavor, "machine-pool"),
				kubernetesVersion: r.variable(varKubernetesVersion),
				controlPlaneCount: deref(in.ControlPlaneMachineCount, 1),
				workerCount:       deref(in.Replicas, 2),
				waiters:           in.ControlPlaneWaiters,
			})
			Expect(res.MachinePools).To(HaveLen(1), "the flavor must have one MachinePool")
			mp := res.MachinePools[0]
			wl := r.mgmt.GetWorkloadCluster(ctx, r.namespace, r.clusterName)
			DeferCleanup(wl.Dispose)
			var times []string
			for _, n := range scales {
				from := ptr.Deref(mp.Spec.Replicas, 0)
				r.step(fmt.Sprintf("scale MachinePool %s from %d to %d", mp.Name, from, n), func() {
					start := time.Now()
					mp = r.scaleMachinePool(ctx, mp, n)
					if r.in.CloudControllerManager != nil {
						r.checkNodesInitialised(ctx, wl)
					}
					times = append(times, fmt.Sprintf("%d->%d %s", from, n, time.Since(start).Round(100*time.Millisecond)))
				})
			}
			r.summary.Set("machine pool scaling", strings.Join(times, ", "))
			r.verifyClusterHealthy(ctx, r.mgmt)
		})
}

// scaleMachinePool sets mp's replicas to n and waits until the MachinePool
// reports n ready replicas with n Nodes and the engine holds n containers
// of its DevMachinePool, the others gone.
func (r *run) scaleMachinePool(ctx context.Context, mp *clusterv1.MachinePool, n int32) *clusterv1.MachinePool {
	c := r.mgmt.GetClient()
	latest := &clusterv1.MachinePool{}
	Expect(c.Get(ctx, client.ObjectKeyFromObject(mp), latest)).To(Succeed())
	patched := latest.DeepCopy()
	patched.Spec.Replicas = ptr.To(n)
	Expect(c.Patch(ctx, patched, client.MergeFrom(latest))).To(Succeed(), "scale MachinePool %s to %d", mp.Name, n)

	pool := map[string]string{runtime.LabelCluster: r.clusterName, labelDevMachinePool: mp.Spec.Template.Spec.InfrastructureRef.Name}
	wc := watchClient(r.mgmt)
	err := r.wait(wc, "wait-machine-pool-nodes", fmt.Sprintf("MachinePool %s at %d", mp.Name, n), &clusterv1.MachinePoolList{}, r.clusterLabels()).Until(ctx, func(ctx context.Context) (bool, string) {
		if err := wc.Get(ctx, client.ObjectKeyFromObject(mp), latest); err != nil {
			return false, err.Error()
		}
		s := latest.Status
		containers, err := r.in.Runtime.ListContainers(ctx, runtime.Filter{Labels: pool})
		if err != nil {
			return false, err.Error()
		}
		status := fmt.Sprintf("replicas %d, ready %d, %d Nodes, %d containers; want %d",
			ptr.Deref(s.Replicas, 0), ptr.Deref(s.ReadyReplicas, 0), len(s.NodeRefs), len(containers), n)
		done := ptr.Deref(s.Replicas, 0) == n && ptr.Deref(s.ReadyReplicas, 0) == n && int32(len(s.NodeRefs)) == n && int32(len(containers)) == n
		return done, status
	})
	Expect(err).ToNot(HaveOccurred())
	return latest
}
