package specs

import (
	"cmp"
	"context"
	"maps"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	"k8s.io/utils/ptr"

	capie2e "sigs.k8s.io/cluster-api/test/e2e"
)

// specInPlaceUpdate is upstream's ClusterInPlaceUpdateSpec
// (in-place-update), and its facts. Its cluster is in-memory: no node
// image, no load balancer.
var specInPlaceUpdate = declare(specFacts{
	name: "in-place-update", label: LabelInPlaceUpdate,
	variables: []string{varKubernetesVersion},
	inMemory:  true, testExtension: true,
	// Upstream's: the cluster, its control plane, its workers; then, five
	// times, the Machines updated in place (at wait-control-plane).
	waits: slices.Concat([]string{"wait-cluster", "wait-control-plane", "wait-worker-nodes"},
		slices.Repeat([]string{"wait-control-plane"}, 5)),
	files:    []string{"in_place_update.go", "in_memory.go"},
	upstream: "e2e/cluster_in_place_update.go",
})

// ClusterInPlaceUpdateSpecInput is the input of ClusterInPlaceUpdateSpec.
type ClusterInPlaceUpdateSpecInput struct {
	CommonInput
	// Flavor is the cluster template's flavor: a Cluster of a ClusterClass
	// whose patches come from the test runtime extension (which publishes
	// the "files" variable the spec changes and answers the in-place
	// update hooks). If unset, "in-memory-topology" (data/).
	Flavor *string
	// WorkerMachineCount is the number of workers. If unset, 1. (The
	// control plane has three Machines: upstream's spec fixes it.)
	WorkerMachineCount *int64
	// ExtensionServiceNamespace and ExtensionServiceName are the runtime
	// extension's webhook Service. If unset, the test extension's.
	ExtensionServiceNamespace, ExtensionServiceName string
}

// ClusterInPlaceUpdateSpec is upstream's ClusterInPlaceUpdateSpec
// (sigs.k8s.io/cluster-api/test/e2e), called as it is in capd-e2e's
// environment (upstream.go): a Cluster of three control-plane Machines and
// a worker on CAPD's in-memory backend, whose topology variable "files"
// is changed five times; each time every Machine must be updated in place
// (the test runtime extension's can-update and update-machine hooks; the
// InPlaceUpdates feature gate, EXP_IN_PLACE_UPDATES), none replaced, and
// each KubeadmConfig must carry the new file. As upstream's suite runs
// it: the control plane without surge, the MachineDeployment with a
// surge of one and one unavailable (ClusterctlVariables may override
// KUBEADM_CONTROL_PLANE_MAX_SURGE, MD_MAX_SURGE, MD_MAX_UNAVAILABLE).
//
// capd-e2e adds: the Cluster tracked before it is created, and the check,
// after upstream's cleanup, that it has nothing in the container engine.
// Labelled in-place-update; a suite adds ClusterClass and in-memory.
// CleanupTimeout is not used and Ginkgo cannot cancel its steps (see
// MachineDeploymentScaleSpec).
func ClusterInPlaceUpdateSpec(inputGetter func() ClusterInPlaceUpdateSpecInput) {
	Context("in-place-update", Label(LabelInPlaceUpdate), func() {
		var proxy *inMemoryProxy
		BeforeEach(func() {
			proxy = newInMemoryProxy(inputGetter().CommonInput)
			proxy.checkNothingInEngine()
		})
		capie2e.ClusterInPlaceUpdateSpec(context.Background(), func() capie2e.ClusterInPlaceUpdateSpecInput {
			in := inputGetter()
			vars := map[string]string{"KUBEADM_CONTROL_PLANE_MAX_SURGE": "0", "MD_MAX_SURGE": "1", "MD_MAX_UNAVAILABLE": "1"}
			maps.Copy(vars, in.ClusterctlVariables)
			return capie2e.ClusterInPlaceUpdateSpecInput{
				E2EConfig:                 in.E2EConfig,
				ClusterctlConfigPath:      in.ClusterctlConfigPath,
				BootstrapClusterProxy:     proxy,
				ArtifactFolder:            in.ArtifactFolder,
				SkipCleanup:               in.SkipCleanup,
				InfrastructureProvider:    in.InfrastructureProvider,
				Flavor:                    ptr.To(deref(in.Flavor, "in-memory-topology")),
				WorkerMachineCount:        in.WorkerMachineCount,
				ExtensionServiceNamespace: cmp.Or(in.ExtensionServiceNamespace, testExtensionNamespace),
				ExtensionServiceName:      cmp.Or(in.ExtensionServiceName, testExtensionService),
				PostNamespaceCreated:      in.PostNamespaceCreated,
				ClusterctlVariables:       vars,
			}
		})
	})
}
