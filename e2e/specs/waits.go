package specs

import (
	"context"
	"fmt"
	"slices"
	"strings"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"

	"github.com/capd-e2e/capd-e2e/framework/waitfor"
)

// The specs' waits on the management cluster. Each checks what upstream's
// helper of the same purpose checks (named on each), but learns of a
// change from a watch (package waitfor) instead of at the next poll, and
// ends with the spec's context: nothing polls behind a timed-out or
// interrupted spec while its cleanup runs.

// watchClient returns a client of proxy's cluster that can watch.
func watchClient(proxy framework.ClusterProxy) client.WithWatch {
	c, err := client.NewWithWatch(proxy.GetRESTConfig(), client.Options{Scheme: proxy.GetScheme()})
	Expect(err).ToNot(HaveOccurred(), "a watching client of cluster %q", proxy.GetName())
	return c
}

// wait returns a Wait on list's kind in the spec's namespace, bounded by
// the interval key (its poll is the resync).
func (r *run) wait(c client.WithWatch, key, what string, list client.ObjectList, opts ...client.ListOption) waitfor.Wait {
	timeout, poll := r.durations(key)
	return waitfor.Wait{
		Client: c, Watched: list, ListOptions: append([]client.ListOption{client.InNamespace(r.namespace)}, opts...),
		Timeout: timeout, Resync: poll, What: what,
	}
}

func (r *run) clusterLabels() client.MatchingLabels {
	return client.MatchingLabels{clusterv1.ClusterNameLabel: r.clusterName}
}

// waitForClusterProvisioned waits for the Cluster to be in phase
// Provisioned (upstream: DiscoveryAndWaitForCluster).
func (r *run) waitForClusterProvisioned(ctx context.Context, c client.WithWatch) *clusterv1.Cluster {
	cluster := &clusterv1.Cluster{}
	err := r.wait(c, "wait-cluster", "Cluster "+r.clusterName+" provisioned", &clusterv1.ClusterList{}).Until(ctx, func(ctx context.Context) (bool, string) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.clusterName}, cluster); err != nil {
			return false, err.Error()
		}
		return cluster.Status.Phase == string(clusterv1.ClusterPhaseProvisioned), "phase " + cluster.Status.Phase + topologyProblem(cluster)
	})
	Expect(err).ToNot(HaveOccurred())
	return cluster
}

// controlPlane returns the cluster's KubeadmControlPlane.
func (r *run) controlPlane(ctx context.Context, c client.Reader) (*controlplanev1.KubeadmControlPlane, error) {
	kcps := &controlplanev1.KubeadmControlPlaneList{}
	if err := c.List(ctx, kcps, client.InNamespace(r.namespace), r.clusterLabels()); err != nil {
		return nil, err
	}
	if len(kcps.Items) != 1 {
		return nil, fmt.Errorf("%d KubeadmControlPlanes of cluster %s", len(kcps.Items), r.clusterName)
	}
	return &kcps.Items[0], nil
}

// machinesWithNode counts the Machines with the labels that have a Node.
func (r *run) machinesWithNode(ctx context.Context, c client.Reader, labels client.MatchingLabels) (withNode, all int, err error) {
	machines := &clusterv1.MachineList{}
	if err := c.List(ctx, machines, client.InNamespace(r.namespace), labels); err != nil {
		return 0, 0, err
	}
	for _, m := range machines.Items {
		if m.Status.NodeRef.IsDefined() {
			withNode++
		}
	}
	return withNode, len(machines.Items), nil
}

// waitForControlPlaneInitialized waits for one control-plane Machine with
// a Node (upstream: DiscoveryAndWaitForControlPlaneInitialized).
func (r *run) waitForControlPlaneInitialized(ctx context.Context, c client.WithWatch) *controlplanev1.KubeadmControlPlane {
	cpLabels := client.MatchingLabels{clusterv1.ClusterNameLabel: r.clusterName, clusterv1.MachineControlPlaneLabel: ""}
	var kcp *controlplanev1.KubeadmControlPlane
	err := r.wait(c, "wait-control-plane", "the first control-plane Machine of "+r.clusterName, &clusterv1.MachineList{}, cpLabels).Until(ctx, func(ctx context.Context) (bool, string) {
		var err error
		if kcp, err = r.controlPlane(ctx, c); err != nil {
			return false, err.Error()
		}
		n, all, err := r.machinesWithNode(ctx, c, cpLabels)
		if err != nil {
			return false, err.Error()
		}
		return n > 0, fmt.Sprintf("%d of %d control-plane Machines have a Node", n, all)
	})
	Expect(err).ToNot(HaveOccurred())
	return kcp
}

// waitForControlPlaneReady waits for every control-plane Machine to have a
// Node and the KubeadmControlPlane's replicas to be all up to date, ready
// and available (upstream: WaitForControlPlaneAndMachinesReady).
func (r *run) waitForControlPlaneReady(ctx context.Context, c client.WithWatch) {
	cpLabels := client.MatchingLabels{clusterv1.ClusterNameLabel: r.clusterName, clusterv1.MachineControlPlaneLabel: ""}
	err := r.wait(c, "wait-control-plane", "the control plane of "+r.clusterName+" ready", &controlplanev1.KubeadmControlPlaneList{}, r.clusterLabels()).Until(ctx, func(ctx context.Context) (bool, string) {
		kcp, err := r.controlPlane(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		want := ptr.Deref(kcp.Spec.Replicas, 0)
		n, _, err := r.machinesWithNode(ctx, c, cpLabels)
		if err != nil {
			return false, err.Error()
		}
		s := kcp.Status
		status := fmt.Sprintf("%d/%d Machines with a Node; replicas %d, up to date %d, ready %d, available %d of %d",
			n, want, ptr.Deref(s.Replicas, 0), ptr.Deref(s.UpToDateReplicas, 0), ptr.Deref(s.ReadyReplicas, 0), ptr.Deref(s.AvailableReplicas, 0), want)
		done := int32(n) == want && ptr.Deref(s.Replicas, 0) == want && ptr.Deref(s.UpToDateReplicas, 0) == want &&
			ptr.Deref(s.ReadyReplicas, 0) == want && ptr.Deref(s.AvailableReplicas, 0) == want
		return done, status
	})
	Expect(err).ToNot(HaveOccurred())
}

// waitForWorkers waits for every MachineDeployment of the cluster to have
// its replicas as Machines with a Node (upstream:
// DiscoveryAndWaitForMachineDeployments). For a Cluster of a ClusterClass
// it first waits for the topology's MachineDeployments to exist: the
// topology controller makes them only once the control plane allows.
func (r *run) waitForWorkers(ctx context.Context, c client.WithWatch, cluster *clusterv1.Cluster) []*clusterv1.MachineDeployment {
	want := -1
	if cluster != nil && cluster.Spec.Topology.IsDefined() {
		want = len(cluster.Spec.Topology.Workers.MachineDeployments)
	}
	var mds []*clusterv1.MachineDeployment
	err := r.wait(c, "wait-worker-nodes", "the worker Machines of "+r.clusterName, &clusterv1.MachineList{}, r.clusterLabels()).Until(ctx, func(ctx context.Context) (bool, string) {
		list := &clusterv1.MachineDeploymentList{}
		if err := c.List(ctx, list, client.InNamespace(r.namespace), r.clusterLabels()); err != nil {
			return false, err.Error()
		}
		mds = mds[:0]
		var missing []string
		if want >= 0 && len(list.Items) != want {
			missing = append(missing, fmt.Sprintf("%d of the topology's %d MachineDeployments made", len(list.Items), want))
		}
		for i := range list.Items {
			md := &list.Items[i]
			mds = append(mds, md)
			n, _, err := r.machinesWithNode(ctx, c, client.MatchingLabels{clusterv1.ClusterNameLabel: r.clusterName, clusterv1.MachineDeploymentNameLabel: md.Name})
			if err != nil {
				return false, err.Error()
			}
			if want := ptr.Deref(md.Spec.Replicas, 0); int32(n) != want {
				missing = append(missing, fmt.Sprintf("%s: %d of %d Machines with a Node", md.Name, n, want))
			}
		}
		slices.Sort(missing)
		return len(missing) == 0, strings.Join(missing, "; ")
	})
	Expect(err).ToNot(HaveOccurred())
	return mds
}

// waitForMachinePools waits for every MachinePool of the cluster to have
// its replicas as ready Nodes (upstream: DiscoveryAndWaitForMachinePools,
// which counts status.nodeRefs the same way); want is how many
// MachinePools the cluster has (the topology's, or those listed already).
func (r *run) waitForMachinePools(ctx context.Context, c client.WithWatch, want int) []*clusterv1.MachinePool {
	var mps []*clusterv1.MachinePool
	err := r.wait(c, "wait-machine-pool-nodes", "the MachinePools of "+r.clusterName, &clusterv1.MachinePoolList{}, r.clusterLabels()).Until(ctx, func(ctx context.Context) (bool, string) {
		list := &clusterv1.MachinePoolList{}
		if err := c.List(ctx, list, client.InNamespace(r.namespace), r.clusterLabels()); err != nil {
			return false, err.Error()
		}
		mps = mps[:0]
		var missing []string
		if len(list.Items) != want {
			missing = append(missing, fmt.Sprintf("%d of %d MachinePools made", len(list.Items), want))
		}
		for i := range list.Items {
			mp := &list.Items[i]
			mps = append(mps, mp)
			if want := ptr.Deref(mp.Spec.Replicas, 0); int32(len(mp.Status.NodeRefs)) != want || ptr.Deref(mp.Status.ReadyReplicas, 0) != want {
				missing = append(missing, fmt.Sprintf("%s: %d Nodes, %d ready replicas, of %d", mp.Name, len(mp.Status.NodeRefs), ptr.Deref(mp.Status.ReadyReplicas, 0), want))
			}
		}
		slices.Sort(missing)
		return len(missing) == 0, strings.Join(missing, "; ")
	})
	Expect(err).ToNot(HaveOccurred())
	return mps
}

// conditionTrue returns "" when conds has condType True with an empty
// message, else what differs (upstream's Verify helpers ask the same).
func conditionTrue(what string, conds []metav1.Condition, condType string) string {
	for _, c := range conds {
		if c.Type != condType {
			continue
		}
		if c.Status != metav1.ConditionTrue || c.Message != "" {
			return fmt.Sprintf("%s: %s %s (%s)", what, condType, c.Status, c.Message)
		}
		return ""
	}
	return fmt.Sprintf("%s: no %s condition", what, condType)
}

// waitForClusterHealthy waits for the Cluster's Available condition and
// every Machine's Ready condition to be True with an empty message
// (upstream: VerifyClusterAvailable and VerifyMachinesReady, which poll
// every 10 s; the bound here is the wait-cluster interval).
func (r *run) waitForClusterHealthy(ctx context.Context, c client.WithWatch) {
	err := r.wait(c, "wait-cluster", "Cluster "+r.clusterName+" Available", &clusterv1.ClusterList{}).Until(ctx, func(ctx context.Context) (bool, string) {
		cluster := &clusterv1.Cluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.clusterName}, cluster); err != nil {
			return false, err.Error()
		}
		m := conditionTrue("Cluster "+r.clusterName, cluster.Status.Conditions, clusterv1.AvailableCondition)
		return m == "", m
	})
	Expect(err).ToNot(HaveOccurred())
	err = r.wait(c, "wait-cluster", "every Machine of "+r.clusterName+" Ready", &clusterv1.MachineList{}, r.clusterLabels()).Until(ctx, func(ctx context.Context) (bool, string) {
		machines := &clusterv1.MachineList{}
		if err := c.List(ctx, machines, client.InNamespace(r.namespace), r.clusterLabels()); err != nil {
			return false, err.Error()
		}
		if len(machines.Items) == 0 {
			return false, "no Machines"
		}
		var missing []string
		for i := range machines.Items {
			m := &machines.Items[i]
			if s := conditionTrue("Machine "+m.Name, m.Status.Conditions, clusterv1.ReadyCondition); s != "" {
				missing = append(missing, s)
			}
		}
		return len(missing) == 0, strings.Join(missing, "; ")
	})
	Expect(err).ToNot(HaveOccurred())
}
