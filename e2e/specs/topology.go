package specs

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// topologyProblem says why the topology controller has not reconciled a
// Cluster of a ClusterClass: its TopologyReconciled condition (which names
// the patch or variable that failed) and the ClusterClass; "" when the
// Cluster has no topology or it is reconciled.
func topologyProblem(cluster *clusterv1.Cluster) string {
	if !cluster.Spec.Topology.IsDefined() {
		return ""
	}
	class := cluster.Spec.Topology.ClassRef.Name
	if ns := cluster.Spec.Topology.ClassRef.Namespace; ns != "" {
		class = ns + "/" + class
	}
	for _, c := range cluster.Status.Conditions {
		if c.Type != clusterv1.ClusterTopologyReconciledCondition {
			continue
		}
		if c.Status == metav1.ConditionTrue {
			return ""
		}
		return fmt.Sprintf("; %s %s (%s): %s; ClusterClass %s", c.Type, c.Status, c.Reason, c.Message, class)
	}
	return fmt.Sprintf("; no %s condition yet; ClusterClass %s", clusterv1.ClusterTopologyReconciledCondition, class)
}

// nodeImages returns, for the summary, the node image each machine
// template of the cluster names: the control plane's, each
// MachineDeployment's and each MachinePool's (their infrastructure
// objects' customImage, on CAPD's Dev* or Docker* kinds), as
// "control plane kindest/node:v1.36.3 (DevMachineTemplate x), ...". What it
// cannot read it says so; it never fails: it is for a person reading the
// summary.
func (r *run) nodeImages(ctx context.Context, c client.Client) string {
	var out []string
	image := func(what string, ref clusterv1.ContractVersionedObjectReference, path ...string) {
		mapping, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", what, err))
			return
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(mapping.GroupVersionKind)
		if err := c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: ref.Name}, obj); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", what, err))
			return
		}
		img, _, _ := unstructured.NestedString(obj.Object, path...)
		out = append(out, fmt.Sprintf("%s %s (%s %s)", what, img, ref.Kind, ref.Name))
	}
	// A Dev* kind keeps the image under backend.docker; a Docker* kind
	// under its spec.
	machinePath := func(kind string) []string {
		if strings.HasPrefix(kind, "Dev") {
			return []string{"spec", "template", "spec", "backend", "docker", "customImage"}
		}
		return []string{"spec", "template", "spec", "customImage"}
	}
	if kcp, err := r.controlPlane(ctx, c); err == nil {
		ref := kcp.Spec.MachineTemplate.Spec.InfrastructureRef
		image("control plane", ref, machinePath(ref.Kind)...)
	}
	mds := &clusterv1.MachineDeploymentList{}
	if err := c.List(ctx, mds, client.InNamespace(r.namespace), r.clusterLabels()); err == nil {
		for _, md := range mds.Items {
			ref := md.Spec.Template.Spec.InfrastructureRef
			image("MachineDeployment "+md.Name, ref, machinePath(ref.Kind)...)
		}
	}
	mps := &clusterv1.MachinePoolList{}
	if err := c.List(ctx, mps, client.InNamespace(r.namespace), r.clusterLabels()); err == nil {
		for _, mp := range mps.Items {
			ref := mp.Spec.Template.Spec.InfrastructureRef
			path := []string{"spec", "customImage"}
			if strings.HasPrefix(ref.Kind, "Dev") {
				path = []string{"spec", "backend", "docker", "customImage"}
			}
			image("MachinePool "+mp.Name, ref, path...)
		}
	}
	return strings.Join(out, "; ")
}
