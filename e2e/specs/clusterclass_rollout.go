package specs

import (
	"context"
	"maps"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capie2e "sigs.k8s.io/cluster-api/test/e2e"
	infrav1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"
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
	// KubeadmControlPlane and kubeadm bootstrap templates, whose control
	// plane and first MachineDeployment carry the two taints the spec
	// expects on their Machines (pre-existing-always-taint and
	// pre-existing-on-initialization-taint, PreferNoSchedule). If unset,
	// "topology-taints" (upstream's suite runs it on the in-memory
	// backend's in-memory-topology, which has them too).
	Flavor *string
	// FilterMetadataBeforeValidation, as upstream's, drops the labels and
	// annotations a provider adds to Machines, infrastructure machines,
	// bootstrap configs and Nodes before the spec compares them with the
	// topology's. If unset, DockerBackendMetadata.
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
			filter := in.FilterMetadataBeforeValidation
			if filter == nil {
				filter = DockerBackendMetadata
			}
			return capie2e.ClusterClassRolloutSpecInput{
				E2EConfig:                      in.E2EConfig,
				ClusterctlConfigPath:           in.ClusterctlConfigPath,
				BootstrapClusterProxy:          in.BootstrapClusterProxy,
				ArtifactFolder:                 in.ArtifactFolder,
				SkipCleanup:                    in.SkipCleanup,
				ControlPlaneWaiters:            upstreamWaiters(in.CommonInput, specClusterClassRollout),
				InfrastructureProvider:         in.InfrastructureProvider,
				Flavor:                         deref(in.Flavor, "topology-taints"),
				PostNamespaceCreated:           in.PostNamespaceCreated,
				FilterMetadataBeforeValidation: filter,
			}
		})
	})
}

// DockerBackendMetadata is an object's labels and annotations without
// those CAPD's docker backend adds of its own: the load balancer weight
// it puts on each control-plane DevMachine
// (devmachine.infrastructure.cluster.x-k8s.io/weight, "100" while the
// Machine is in the load balancer). Upstream's suite runs
// ClusterClassRolloutSpec on the in-memory backend, which adds none, and
// so passes no filter; on the docker backend its check of the
// DevMachines' annotations fails without this one.
func DockerBackendMetadata(obj client.Object) clusterv1.ObjectMeta {
	annotations := maps.Clone(obj.GetAnnotations())
	delete(annotations, infrav1.LoadbalancerWeightAnnotation)
	return clusterv1.ObjectMeta{Labels: obj.GetLabels(), Annotations: annotations}
}
