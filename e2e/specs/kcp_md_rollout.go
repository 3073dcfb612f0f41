package specs

import (
	"context"

	. "github.com/onsi/ginkgo/v2"

	capie2e "sigs.k8s.io/cluster-api/test/e2e"
)

// specKCPMDRollout is upstream's KCPAndMachineDeploymentRolloutSpec, and
// its facts. Upstream names it md-rollout, the name of
// MachineDeploymentRolloutSpec here: declared as kcp-md-rollout, its
// cluster and namespace keep upstream's prefix and it reads the intervals
// "md-rollout/<key>" (or "default/<key>"), shared with
// MachineDeploymentRolloutSpec.
var specKCPMDRollout = declare(specFacts{
	name: "kcp-md-rollout", label: LabelKCPMDRollout,
	variables: []string{varKubernetesVersion},
	// Upstream's: the cluster, its control plane and workers, the
	// in-place changes, the rollout of the MachineDeployment (its taint
	// checks wait a fixed minute each, which no interval sets);
	// upstreamWaiters': the MachinePools (none).
	waits:    []string{"wait-cluster", "wait-control-plane", "wait-worker-nodes", "wait-machine-upgrade", "wait-machine-upgrade", "wait-machine-pool-nodes"},
	files:    []string{"kcp_md_rollout.go", "upstream.go"},
	upstream: "e2e/kcp_md_rollout.go",
})

// KCPAndMachineDeploymentRolloutSpecInput is the input of
// KCPAndMachineDeploymentRolloutSpec.
type KCPAndMachineDeploymentRolloutSpecInput struct {
	CommonInput
	// Flavor is the cluster template's flavor: a KubeadmControlPlane and a
	// MachineDeployment whose Machines carry upstream's two
	// pre-existing taints. If unset, "kcp-md-taints" (upstream's).
	Flavor *string
}

// KCPAndMachineDeploymentRolloutSpec is upstream's
// KCPAndMachineDeploymentRolloutSpec (sigs.k8s.io/cluster-api/test/e2e),
// called as it is in capd-e2e's environment (upstream.go): the
// MachineDeployment's in-place mutable fields (labels, annotations,
// drain, deletion and volume timeouts) change without replacing a
// Machine; taints added to and removed from the KubeadmControlPlane's and
// the MachineDeployment's Machines reach their Nodes in place (a taint
// removed from a Node comes back only if it propagates Always: the
// MachineTaintPropagation feature gate, EXP_MACHINE_TAINT_PROPAGATION),
// and no Machine is replaced for 30 seconds; then a new infrastructure
// template rolls the MachineDeployment out. Labelled kcp-md-rollout.
//
// CommonInput's ClusterctlVariables and CleanupTimeout are not used, and
// Ginkgo cannot cancel its steps (see MachineDeploymentScaleSpec).
func KCPAndMachineDeploymentRolloutSpec(inputGetter func() KCPAndMachineDeploymentRolloutSpecInput) {
	Context("kcp-md-rollout", Label(LabelKCPMDRollout), func() {
		capie2e.KCPAndMachineDeploymentRolloutSpec(context.Background(), func() capie2e.KCPAndMachineDeploymentRolloutSpecInput {
			in := inputGetter()
			return capie2e.KCPAndMachineDeploymentRolloutSpecInput{
				E2EConfig:              in.E2EConfig,
				ClusterctlConfigPath:   in.ClusterctlConfigPath,
				BootstrapClusterProxy:  in.BootstrapClusterProxy,
				ArtifactFolder:         in.ArtifactFolder,
				SkipCleanup:            in.SkipCleanup,
				ControlPlaneWaiters:    upstreamWaiters(in.CommonInput, specKCPMDRollout),
				InfrastructureProvider: in.InfrastructureProvider,
				Flavor:                 deref(in.Flavor, "kcp-md-taints"),
				PostNamespaceCreated:   in.PostNamespaceCreated,
			}
		})
	})
}
