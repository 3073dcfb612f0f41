package specs

import (
	"context"

	. "github.com/onsi/ginkgo/v2"

	capie2e "sigs.k8s.io/cluster-api/test/e2e"
)

// specMDScale is upstream's MachineDeploymentScaleSpec (md-scale), and
// its facts.
var specMDScale = declare(specFacts{
	name: "md-scale", label: LabelMDScale,
	variables: []string{varKubernetesVersion},
	// Upstream's: the cluster, its control plane, its workers; scaled to
	// 3, to 1; the MachineDeployment deleted.
	waits: []string{"wait-cluster", "wait-control-plane", "wait-worker-nodes", "wait-worker-nodes", "wait-worker-nodes", "wait-worker-nodes",
		// upstreamWaiters': the MachinePools, if any.
		"wait-machine-pool-nodes"},
	files:    []string{"md_scale.go", "upstream.go"},
	upstream: "e2e/md_scale.go",
})

// MachineDeploymentScaleSpecInput is the input of
// MachineDeploymentScaleSpec.
type MachineDeploymentScaleSpecInput struct {
	CommonInput
	// Flavor is the cluster template's flavor. If unset, the default
	// template (upstream's choice for this spec).
	Flavor string
}

// MachineDeploymentScaleSpec is upstream's MachineDeploymentScaleSpec
// (sigs.k8s.io/cluster-api/test/e2e), called as it is in capd-e2e's
// environment (upstream.go): a cluster with one control plane Machine and
// one worker, its MachineDeployment scaled to 3 and back to 1, then
// deleted in the foreground. Labelled md-scale.
//
// CommonInput's ClusterctlVariables and CleanupTimeout are not used:
// upstream's spec has no place for them; nor can its steps be cancelled
// by Ginkgo (upstream's spec takes no SpecContext): each wait is bounded
// by its interval.
func MachineDeploymentScaleSpec(inputGetter func() MachineDeploymentScaleSpecInput) {
	Context("md-scale", Label(LabelMDScale), func() {
		capie2e.MachineDeploymentScaleSpec(context.Background(), func() capie2e.MachineDeploymentScaleSpecInput {
			in := inputGetter()
			return capie2e.MachineDeploymentScaleSpecInput{
				E2EConfig:              in.E2EConfig,
				ClusterctlConfigPath:   in.ClusterctlConfigPath,
				BootstrapClusterProxy:  in.BootstrapClusterProxy,
				ArtifactFolder:         in.ArtifactFolder,
				SkipCleanup:            in.SkipCleanup,
				ControlPlaneWaiters:    upstreamWaiters(in.CommonInput, specMDScale),
				Flavor:                 in.Flavor,
				InfrastructureProvider: in.InfrastructureProvider,
				PostNamespaceCreated:   in.PostNamespaceCreated,
			}
		})
	})
}
