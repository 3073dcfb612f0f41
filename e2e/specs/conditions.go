package specs

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/capd-e2e/capd-e2e/framework/summary"
)

// conditions reads the conditions of the Cluster, its control planes,
// MachineDeployments and Machines, for the summary. Errors are skipped: this
// is for a person reading a failure, not an assertion.
func (r *run) conditions(ctx context.Context) []summary.Object {
	c := r.mgmt.GetClient()
	var out []summary.Object
	cluster := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.clusterName}, cluster); err == nil {
		out = append(out, object("Cluster", cluster.ObjectMeta, cluster.Status.Conditions))
	}
	inCluster := []client.ListOption{client.InNamespace(r.namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: r.clusterName}}
	kcps := &controlplanev1.KubeadmControlPlaneList{}
	if err := c.List(ctx, kcps, inCluster...); err == nil {
		for _, k := range kcps.Items {
			out = append(out, object("KubeadmControlPlane", k.ObjectMeta, k.Status.Conditions))
		}
	}
	mds := &clusterv1.MachineDeploymentList{}
	if err := c.List(ctx, mds, inCluster...); err == nil {
		for _, m := range mds.Items {
			out = append(out, object("MachineDeployment", m.ObjectMeta, m.Status.Conditions))
		}
	}
	machines := &clusterv1.MachineList{}
	if err := c.List(ctx, machines, inCluster...); err == nil {
		for _, m := range machines.Items {
			out = append(out, object("Machine", m.ObjectMeta, m.Status.Conditions))
		}
	}
	return out
}

func object(kind string, meta metav1.ObjectMeta, conds []metav1.Condition) summary.Object {
	o := summary.Object{Kind: kind, Namespace: meta.Namespace, Name: meta.Name}
	for _, c := range conds {
		o.Conditions = append(o.Conditions, summary.Condition{
			Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime.Time,
		})
	}
	return o
}
