package specs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlcluster "sigs.k8s.io/cluster-api/cmd/clusterctl/client/cluster"
	"sigs.k8s.io/cluster-api/test/framework"
	infrav1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"
)

// checkOwnership checks the owner references and finalizers of every
// object of the cluster's graph (clusterctl's, as clusterctl move sees
// it), with upstream's assertions for the kinds our templates use: Cluster
// API's core, experimental (MachinePool, ClusterResourceSet), kubeadm
// bootstrap and control plane, Kubernetes' Secrets and ConfigMaps, and
// CAPD's Dev* kinds. topology says whether the Cluster is of a
// ClusterClass, which changes who owns what. A kind with no assertion
// fails the check: an object nobody expected is a finding too.
func (r *run) checkOwnership(ctx context.Context, proxy framework.ClusterProxy, topology bool) {
	filter := clusterctlcluster.FilterClusterObjectsWithNameFilter(r.clusterName)
	ownerless := r.unusedMachineTemplates(ctx, proxy.GetClient())
	maps.Copy(ownerless, r.ownerless)
	assertions := ownerAssertions(topology, ownerless)
	// Kubeadm bootstrap's init lock, "<cluster>-lock", owned by the
	// Cluster: Cluster API v1.14.2 deletes it only when a KubeadmConfig
	// of a join is reconciled after the control plane is initialised
	// (bootstrap/kubeadm/reconcilers/kubeadmconfig, Unlock), so in a
	// cluster of one control-plane Machine and no workers it stays
	// (seen in the quick-start with a control plane only and in
	// kcp-adoption). Upstream's assertions know no such ConfigMap.
	owners := map[string][]metav1.OwnerReference{
		"ConfigMap/" + r.clusterName + "-lock": {{Kind: "Cluster", APIVersion: clusterv1.GroupVersion.String()}},
	}
	maps.Copy(owners, r.owners)
	for key, want := range owners {
		kind, name, _ := strings.Cut(key, "/")
		upstream := assertions[kind]
		assertions[kind] = func(n types.NamespacedName, owners []metav1.OwnerReference) error {
			if n.Name == name {
				return framework.HasExactOwners(owners, want...)
			}
			if upstream == nil {
				return fmt.Errorf("no owner assertion for %s %s", kind, n)
			}
			return upstream(n, owners)
		}
	}
	framework.AssertOwnerReferences(r.namespace, proxy.GetKubeconfigPath(), filter, assertions)
	core := framework.CoreFinalizersAssertionWithLegacyClusters
	if topology {
		core = framework.CoreFinalizersAssertionWithClassyClusters
	}
	Expect(checkFinalizers(ctx, proxy, r.namespace, filter,
		core,
		framework.ExpFinalizersAssertion,
		framework.KubeadmControlPlaneFinalizersAssertion,
		framework.DevInfraFinalizersAssertion,
	)).To(Succeed())
}

// ownerAssertion checks the owner references of one object.
type ownerAssertion = func(types.NamespacedName, []metav1.OwnerReference) error

// ownerAssertions returns upstream's owner-reference assertions for our
// kinds, and ours where upstream's do not fit: upstream's for a
// DevMachinePool and its KubeadmConfig expect the Cluster among the owners,
// which the topology controller adds to a Cluster of a ClusterClass; a
// MachinePool of a classic template has its MachinePool alone (Cluster API
// v1.14.2, seen in the machine-pool spec). And a machine template nothing
// uses yet (the upgrades flavor's "-upgrade-to" ones, before the upgrade)
// has no owner: Cluster API adds the Cluster when a KubeadmControlPlane or
// MachineDeployment first references it, and it stays after the upgrade
// moved off it (both seen in the upgrade spec). ownerless names objects as
// "<Kind>/<name>": with true, the object must have no owner (the test
// extension's ConfigMap of hook answers); with false, none or the owners
// upstream's assertion wants (a template nothing references now).
func ownerAssertions(topology bool, ownerless map[string]bool) map[string]ownerAssertion {
	all := map[string]ownerAssertion{}
	for _, m := range []map[string]ownerAssertion{
		framework.CoreOwnerReferenceAssertion,
		framework.ExpOwnerReferenceAssertions,
		framework.DevInfraOwnerReferenceAssertions(topology),
		framework.KubeadmBootstrapOwnerReferenceAssertions,
		framework.KubeadmControlPlaneOwnerReferenceAssertions(topology),
		framework.KubernetesReferenceAssertions,
	} {
		for kind, f := range m {
			if g, ok := all[kind]; ok {
				all[kind] = func(n types.NamespacedName, o []metav1.OwnerReference) error { return errors.Join(g(n, o), f(n, o)) }
				continue
			}
			all[kind] = f
		}
	}
	for key := range ownerless {
		kind, _, _ := strings.Cut(key, "/")
		upstream := all[kind]
		all[kind] = func(n types.NamespacedName, owners []metav1.OwnerReference) error {
			strict, listed := ownerless[kind+"/"+n.Name]
			if listed {
				err := framework.HasExactOwners(owners)
				if err == nil || strict || upstream == nil {
					return err
				}
			}
			if upstream == nil {
				return fmt.Errorf("no owner assertion for %s %s", kind, n)
			}
			return upstream(n, owners)
		}
	}
	if !topology {
		machinePool := metav1.OwnerReference{Kind: "MachinePool", APIVersion: clusterv1.GroupVersion.String(), Controller: ptr.To(true)}
		machine := metav1.OwnerReference{Kind: "Machine", APIVersion: clusterv1.GroupVersion.String(), Controller: ptr.To(true)}
		all["DevMachinePool"] = func(_ types.NamespacedName, owners []metav1.OwnerReference) error {
			return framework.HasExactOwners(owners, machinePool)
		}
		all["KubeadmConfig"] = func(_ types.NamespacedName, owners []metav1.OwnerReference) error {
			return framework.HasOneOfExactOwners(owners, []metav1.OwnerReference{machine}, []metav1.OwnerReference{machinePool})
		}
	}
	return all
}

// unusedMachineTemplates returns the DevMachineTemplates of the spec's
// namespace that no KubeadmControlPlane, MachineDeployment, MachineSet or
// ClusterClass references, as "DevMachineTemplate/<name>".
func (r *run) unusedMachineTemplates(ctx context.Context, c client.Client) map[string]bool {
	unused := map[string]bool{}
	key := func(name string) string { return "DevMachineTemplate/" + name }
	templates := &metav1.PartialObjectMetadataList{}
	templates.SetGroupVersionKind(infrav1.GroupVersion.WithKind("DevMachineTemplateList"))
	Expect(c.List(ctx, templates, client.InNamespace(r.namespace))).To(Succeed())
	for _, t := range templates.Items {
		unused[key(t.Name)] = false
	}
	kcps := &controlplanev1.KubeadmControlPlaneList{}
	Expect(c.List(ctx, kcps, client.InNamespace(r.namespace))).To(Succeed())
	for _, k := range kcps.Items {
		delete(unused, key(k.Spec.MachineTemplate.Spec.InfrastructureRef.Name))
	}
	mds := &clusterv1.MachineDeploymentList{}
	Expect(c.List(ctx, mds, client.InNamespace(r.namespace))).To(Succeed())
	for _, md := range mds.Items {
		delete(unused, key(md.Spec.Template.Spec.InfrastructureRef.Name))
	}
	ccs := &clusterv1.ClusterClassList{}
	Expect(c.List(ctx, ccs, client.InNamespace(r.namespace))).To(Succeed())
	for _, cc := range ccs.Items {
		delete(unused, key(cc.Spec.ControlPlane.MachineInfrastructure.TemplateRef.Name))
		for _, md := range cc.Spec.Workers.MachineDeployments {
			delete(unused, key(md.Infrastructure.TemplateRef.Name))
		}
	}
	mss := &clusterv1.MachineSetList{}
	Expect(c.List(ctx, mss, client.InNamespace(r.namespace))).To(Succeed())
	for _, ms := range mss.Items {
		delete(unused, key(ms.Spec.Template.Spec.InfrastructureRef.Name))
	}
	return unused
}

// checkFinalizers compares the finalizers of every object of the graph
// with those the assertions expect for its kind (none, for a kind without
// one), and returns every difference. Upstream checks the same inside
// ValidateFinalizersResilience, which also removes them all; this is the
// check alone.
func checkFinalizers(ctx context.Context, proxy framework.ClusterProxy, namespace string, filter clusterctlcluster.GetOwnerGraphFilterFunction, assertions ...map[string]func(types.NamespacedName) []string) error {
	expect := map[string]func(types.NamespacedName) []string{}
	for _, a := range assertions {
		for kind, f := range a {
			if _, dup := expect[kind]; dup {
				return fmt.Errorf("two finalizer assertions for kind %s", kind)
			}
			expect[kind] = f
		}
	}
	graph, err := clusterctlcluster.GetOwnerGraph(ctx, namespace, proxy.GetKubeconfigPath(), filter)
	if err != nil {
		return fmt.Errorf("the owner graph of namespace %s: %w", namespace, err)
	}
	var errs []error
	for _, node := range graph {
		key := types.NamespacedName{Namespace: node.Object.Namespace, Name: node.Object.Name}
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion(node.Object.APIVersion)
		obj.SetKind(node.Object.Kind)
		if err := proxy.GetClient().Get(ctx, client.ObjectKey(key), obj); err != nil {
			errs = append(errs, fmt.Errorf("get %s %s: %w", node.Object.Kind, key, err))
			continue
		}
		var want []string
		if f, ok := expect[node.Object.Kind]; ok {
			want = f(key)
		}
		got := obj.GetFinalizers()
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
			errs = append(errs, fmt.Errorf("%s %s: finalizers %v, want %v", node.Object.Kind, key, got, want))
		}
	}
	return errors.Join(errs...)
}
