package specs

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capie2e "sigs.k8s.io/cluster-api/test/e2e"
)

// specClusterClassRollout is upstream's ClusterClassRolloutSpec
// (clusterclass-rollout), and its facts.
var specClusterClassRollout = declare(specFacts{
	name: "clusterclass-rollout", label: LabelClusterClassRollout,
	variables: []string{varKubernetesVersion},
	// Upstream's, one per call site: the cluster, its control plane,
	// workers and MachinePools at creation and after the in-place changes,
	// the rollout of the class's changes, the rollout.after rollout;
	// upstreamWaiters': the MachinePools.
	waits: slices.Concat([]string{"wait-cluster", "wait-machine-upgrade"},
		slices.Repeat([]string{"wait-control-plane"}, 4),
		slices.Repeat([]string{"wait-worker-nodes"}, 3),
		slices.Repeat([]string{"wait-machine-pool-nodes"}, 4)),
	files:    []string{"clusterclass_rollout.go", "upstream.go"},
	upstream: "e2e/clusterclass_rollout.go",
})

// ClusterClassRolloutSpecInput is the input of ClusterClassRolloutSpec.
type ClusterClassRolloutSpecInput struct {
	CommonInput
	// Flavor is the cluster template's flavor, of a ClusterClass with a
	// KubeadmControlPlane and kubeadm bootstrap templates. If unset,
	// "topology" (upstream's suite runs it on the in-memory backend).
	Flavor *string
	// FilterMetadataBeforeValidation, as upstream's, drops the labels and
	// annotations a provider adds to Machines, infrastructure machines,
	// bootstrap configs and Nodes before the spec compares them with the
	// topology's. If unset, upstream's default (nothing dropped).
	FilterMetadataBeforeValidation func(object client.Object) clusterv1.ObjectMeta
}

// ClusterClassRolloutSpec is upstream's ClusterClassRolloutSpec
// (sigs.k8s.io/cluster-api/test/e2e), called as it is in capd-e2e's
// environment (upstream.go): a Cluster of a ClusterClass whose labels,
// annotations and selectors are checked on every object down to the
// Nodes; in-place changes of the topology's metadata, drain, deletion and
// rollout settings and taints (the MachineTaintPropagation feature gate:
// EXP_MACHINE_TAINT_PROPAGATION) propagate without replacing a Machine;
// changes of the class's templates, then rollout.after, replace every
// Machine. Labelled clusterclass-rollout; a suite adds ClusterClass.
//
// CommonInput's ClusterctlVariables and CleanupTimeout are not used, and
// Ginkgo cannot cancel its steps (see MachineDeploymentScaleSpec).
func ClusterClassRolloutSpec(inputGetter func() ClusterClassRolloutSpecInput) {
	Context("clusterclass-rollout", Label(LabelClusterClassRollout), func() {
		capie2e.ClusterClassRolloutSpec(context.Background(), func() capie2e.ClusterClassRolloutSpecInput {
			in := inputGetter()
			return capie2e.ClusterClassRolloutSpecInput{
				E2EConfig:                      in.E2EConfig,
				ClusterctlConfigPath:           in.ClusterctlConfigPath,
				BootstrapClusterProxy:          in.BootstrapClusterProxy,
				ArtifactFolder:                 in.ArtifactFolder,
				SkipCleanup:                    in.SkipCleanup,
				ControlPlaneWaiters:            upstreamWaiters(in.CommonInput, specClusterClassRollout),
				InfrastructureProvider:         in.InfrastructureProvider,
				Flavor:                         deref(in.Flavor, "topology"),
				PostNamespaceCreated:           in.PostNamespaceCreated,
				FilterMetadataBeforeValidation: in.FilterMetadataBeforeValidation,
			}
		})
	})
}
