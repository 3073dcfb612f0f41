package specs

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	"k8s.io/utils/ptr"

	capie2e "sigs.k8s.io/cluster-api/test/e2e"
)

// specKCPRemediationBootstrap is upstream's KCPRemediationSpec, and its
// facts. Upstream names it kcp-remediation, the name of
// MachineHealthCheckSpec's control-plane case here: declared as
// kcp-remediation-bootstrap, its cluster and namespace keep upstream's
// prefix and it reads the intervals "kcp-remediation/<key>" (or
// "default/<key>").
var specKCPRemediationBootstrap = declare(specFacts{
	name: "kcp-remediation-bootstrap", label: LabelKCPRemediationBootstrap,
	variables: []string{varKubernetesVersion},
	// Upstream's: the cluster's infrastructure; for each of the three
	// remediations (while the first Machine bootstraps, after the first
	// and after the second joined) and the provisioning between them,
	// the Machines deleted and created, the list stable, the new Machine
	// provisioned.
	waits: slices.Concat([]string{"wait-cluster"},
		slices.Repeat([]string{"wait-machines", "check-machines-stable"}, 6),
		slices.Repeat([]string{"wait-machine-provisioned"}, 4)),
	files:    []string{"kcp_remediation_bootstrap.go", "upstream.go"},
	upstream: "e2e/kcp_remediations.go",
})

// KCPRemediationSpecInput is the input of KCPRemediationSpec.
type KCPRemediationSpecInput struct {
	CommonInput
	// Flavor is the cluster template's flavor, as upstream's: three
	// control-plane Machines whose bootstrap waits for the spec's signal
	// (a script polling the mhc-test ConfigMap of the management cluster
	// with the variables TOKEN, SERVER and NAMESPACE), and a
	// MachineHealthCheck on the control-plane Machines labelled
	// mhc-test=fail. If unset, "kcp-remediation-bootstrap" (data/).
	Flavor *string
}

// KCPRemediationSpec is upstream's KCPRemediationSpec
// (sigs.k8s.io/cluster-api/test/e2e), called as it is in capd-e2e's
// environment (upstream.go): the KubeadmControlPlane remediates its first
// Machine while it is still bootstrapping (held by the flavor's script
// until the spec signals it), the second after the first joined, and a
// provisioned one (a Node condition the MachineHealthCheck watches),
// each time with the Machines deleted, created and left stable as
// upstream checks. Labelled kcp-remediation-bootstrap and remediation.
//
// Its workload nodes reach the management cluster's API server by the
// address in its cluster-info ConfigMap: the kind network the engine
// shares between them. Upstream's spec takes no control plane waiters and
// names its cluster itself, so its management cluster's proxy is wrapped:
// the Cluster it applies is tracked before it is created and gets the
// cloud-controller-manager once it is. CommonInput's ClusterctlVariables
// and CleanupTimeout are not used, and Ginkgo cannot cancel its steps
// (see MachineDeploymentScaleSpec).
func KCPRemediationSpec(inputGetter func() KCPRemediationSpecInput) {
	Context("kcp-remediation-bootstrap", Label(LabelKCPRemediationBootstrap, LabelRemediation), func() {
		capie2e.KCPRemediationSpec(context.Background(), func() capie2e.KCPRemediationSpecInput {
			in := inputGetter()
			return capie2e.KCPRemediationSpecInput{
				E2EConfig:              in.E2EConfig,
				ClusterctlConfigPath:   in.ClusterctlConfigPath,
				BootstrapClusterProxy:  newTrackingProxy(in.CommonInput),
				ArtifactFolder:         in.ArtifactFolder,
				SkipCleanup:            in.SkipCleanup,
				InfrastructureProvider: in.InfrastructureProvider,
				Flavor:                 ptr.To(deref(in.Flavor, "kcp-remediation-bootstrap")),
				PostNamespaceCreated:   in.PostNamespaceCreated,
			}
		})
	})
}
