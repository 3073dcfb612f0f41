package specs

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	capie2e "sigs.k8s.io/cluster-api/test/e2e"
)

// specClusterDeletion is upstream's ClusterDeletionSpec
// (cluster-deletion), and its facts.
var specClusterDeletion = declare(specFacts{
	name: "cluster-deletion", label: LabelClusterDeletion,
	variables: []string{varKubernetesVersion},
	// Upstream's: the cluster, its control plane, its workers; the
	// cluster gone, twice (the Cluster's deletion, then its absence).
	waits: []string{"wait-cluster", "wait-control-plane", "wait-worker-nodes", "wait-delete-cluster", "wait-delete-cluster",
		// upstreamWaiters': the MachinePools.
		"wait-machine-pool-nodes"},
	files:    []string{"cluster_deletion.go", "upstream.go"},
	upstream: "e2e/cluster_deletion.go",
})

// ClusterDeletionSpecInput is the input of ClusterDeletionSpec.
type ClusterDeletionSpecInput struct {
	CommonInput
	// Flavor is the cluster template's flavor. If unset, "topology", as
	// upstream's suite gives it.
	Flavor *string
	// ControlPlaneMachineCount and WorkerMachineCount size the cluster.
	// If unset, 3 (upstream's suite) and 1.
	ControlPlaneMachineCount, WorkerMachineCount *int64
	// Phases are the groups of objects deleted one after the other. If
	// unset, DefaultClusterDeletionPhases.
	Phases []capie2e.ClusterDeletionPhase
}

// DefaultClusterDeletionPhases are the phases in which a Cluster of
// Cluster API's kubeadm providers and CAPD's Dev* kinds is deleted, as
// upstream's suite checks them: first the MachineDeployments, their
// MachineSets and Machines; then the KubeadmControlPlane and its
// Machines; then the DevCluster. In each, the objects that block
// (Machines, the DevCluster) get a finalizer of the test, so that the
// next phase is seen not to begin before they are gone.
func DefaultClusterDeletionPhases() []capie2e.ClusterDeletionPhase {
	kind := func(kinds ...string) func(corev1.ObjectReference, []metav1.OwnerReference) bool {
		return func(o corev1.ObjectReference, _ []metav1.OwnerReference) bool { return slices.Contains(kinds, o.Kind) }
	}
	machineOf := func(owners ...string) func(corev1.ObjectReference, []metav1.OwnerReference) bool {
		return func(o corev1.ObjectReference, refs []metav1.OwnerReference) bool {
			return o.Kind == "Machine" && slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return slices.Contains(owners, r.Kind) })
		}
	}
	or := func(a, b func(corev1.ObjectReference, []metav1.OwnerReference) bool) func(corev1.ObjectReference, []metav1.OwnerReference) bool {
		return func(o corev1.ObjectReference, refs []metav1.OwnerReference) bool { return a(o, refs) || b(o, refs) }
	}
	return []capie2e.ClusterDeletionPhase{
		{ObjectFilter: or(kind("MachineDeployment", "MachineSet"), machineOf("MachineDeployment", "MachineSet")), BlockingObjectFilter: kind("Machine")},
		{ObjectFilter: or(kind("KubeadmControlPlane"), machineOf("KubeadmControlPlane")), BlockingObjectFilter: kind("Machine")},
		{ObjectFilter: kind("DevCluster"), BlockingObjectFilter: kind("DevCluster")},
	}
}

// ClusterDeletionSpec is upstream's ClusterDeletionSpec
// (sigs.k8s.io/cluster-api/test/e2e), called as it is in capd-e2e's
// environment (upstream.go): a cluster whose deletion is held, phase by
// phase, by finalizers the spec adds, checking at each that the objects
// of the phase are being deleted, those of the earlier phases gone and
// those of the later ones untouched. Labelled cluster-deletion; a suite
// adds ClusterClass for the topology flavor.
//
// CommonInput's ClusterctlVariables and CleanupTimeout are not used, and
// Ginkgo cannot cancel its steps (see MachineDeploymentScaleSpec).
func ClusterDeletionSpec(inputGetter func() ClusterDeletionSpecInput) {
	Context("cluster-deletion", Label(LabelClusterDeletion), func() {
		capie2e.ClusterDeletionSpec(context.Background(), func() capie2e.ClusterDeletionSpecInput {
			in := inputGetter()
			phases := in.Phases
			if phases == nil {
				phases = DefaultClusterDeletionPhases()
			}
			return capie2e.ClusterDeletionSpecInput{
				E2EConfig:                in.E2EConfig,
				ClusterctlConfigPath:     in.ClusterctlConfigPath,
				BootstrapClusterProxy:    in.BootstrapClusterProxy,
				ArtifactFolder:           in.ArtifactFolder,
				SkipCleanup:              in.SkipCleanup,
				InfrastructureProvider:   in.InfrastructureProvider,
				Flavor:                   ptr.To(deref(in.Flavor, "topology")),
				ControlPlaneMachineCount: ptr.To(deref(in.ControlPlaneMachineCount, 3)),
				WorkerMachineCount:       ptr.To(deref(in.WorkerMachineCount, 1)),
				ControlPlaneWaiters:      upstreamWaiters(in.CommonInput, specClusterDeletion),
				PostNamespaceCreated:     in.PostNamespaceCreated,
				ClusterDeletionPhases:    phases,
			}
		})
	})
}
