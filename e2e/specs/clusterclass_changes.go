package specs

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"

	capie2e "sigs.k8s.io/cluster-api/test/e2e"
)

// specClusterClassChanges is upstream's ClusterClassChangesSpec
// (clusterclass-changes), and its facts.
var specClusterClassChanges = declare(specFacts{
	name: "clusterclass-changes", label: LabelClusterClassChanges,
	variables: []string{varKubernetesVersion},
	// Upstream's, one per call site: the cluster, the control plane and
	// the workers at each change and rebase, the Machines after the
	// second rebase.
	waits: slices.Concat([]string{"wait-cluster", "wait-machine-upgrade"},
		slices.Repeat([]string{"wait-control-plane"}, 5),
		slices.Repeat([]string{"wait-worker-nodes"}, 6),
		slices.Repeat([]string{"wait-machine-pool-nodes"}, 2),
		// upstreamWaiters': the MachinePool, which upstream waits for
		// without an interval.
		[]string{"wait-machine-pool-nodes"}),
	files:    []string{"clusterclass_changes.go", "upstream.go"},
	upstream: "e2e/clusterclass_changes.go",
})

// ClusterClassChangesSpecInput is the input of ClusterClassChangesSpec.
type ClusterClassChangesSpecInput struct {
	CommonInput
	// Flavor is the cluster template's flavor; it must make a Cluster of
	// a ClusterClass. If unset, "topology".
	Flavor *string
	// The fields set, after the Cluster is created, on copies of the
	// ClusterClass's templates, each a map of a dotted path to a value (as
	// upstream's). If all are unset, DefaultClusterClassChanges.
	ModifyControlPlaneFields                                   map[string]any
	ModifyMachineDeploymentBootstrapConfigTemplateFields       map[string]any
	ModifyMachineDeploymentInfrastructureMachineTemplateFields map[string]any
	ModifyMachinePoolBootstrapConfigTemplateFields             map[string]any
	ModifyMachinePoolInfrastructureMachinePoolTemplateFields   map[string]any
}

// DefaultClusterClassChanges fills the Modify fields of in with changes
// the quick-start class (data/) takes on CAPD's docker backend: kubeadm's
// verbosity on the control plane and on both worker classes' bootstrap
// templates, and the MachineDeployment machines' bootstrap timeout.
// Upstream's suite changes the in-memory backend's machines instead, and
// no MachinePool (the in-memory backend has none); here the MachinePool's
// bootstrap template changes too. Its DevMachinePoolTemplate is left:
// each of its docker fields is set by a patch of the class, which would
// undo the change.
func DefaultClusterClassChanges(in *ClusterClassChangesSpecInput) {
	in.ModifyControlPlaneFields = map[string]any{"spec.kubeadmConfigSpec.verbosity": int64(4)}
	in.ModifyMachineDeploymentBootstrapConfigTemplateFields = map[string]any{"spec.template.spec.verbosity": int64(4)}
	in.ModifyMachineDeploymentInfrastructureMachineTemplateFields = map[string]any{"spec.template.spec.backend.docker.bootstrapTimeout": "4m0s"}
	in.ModifyMachinePoolBootstrapConfigTemplateFields = map[string]any{"spec.template.spec.verbosity": int64(4)}
}

// ClusterClassChangesSpec is upstream's ClusterClassChangesSpec
// (sigs.k8s.io/cluster-api/test/e2e), called as it is in capd-e2e's
// environment (upstream.go): a Cluster of a ClusterClass is rebased to a
// copy of its class, the class's templates are changed and the changes
// rolled out to the control plane, the MachineDeployments and the
// MachinePools, it is rebased to a copy in another namespace and changed
// again, and a MachineDeployment topology is removed. Labelled
// clusterclass-changes; a suite adds ClusterClass.
//
// CommonInput's ClusterctlVariables and CleanupTimeout are not used, and
// Ginkgo cannot cancel its steps (see MachineDeploymentScaleSpec).
func ClusterClassChangesSpec(inputGetter func() ClusterClassChangesSpecInput) {
	Context("clusterclass-changes", Label(LabelClusterClassChanges), func() {
		capie2e.ClusterClassChangesSpec(context.Background(), func() capie2e.ClusterClassChangesSpecInput {
			in := inputGetter()
			if in.ModifyControlPlaneFields == nil && in.ModifyMachineDeploymentBootstrapConfigTemplateFields == nil &&
				in.ModifyMachineDeploymentInfrastructureMachineTemplateFields == nil && in.ModifyMachinePoolBootstrapConfigTemplateFields == nil &&
				in.ModifyMachinePoolInfrastructureMachinePoolTemplateFields == nil {
				DefaultClusterClassChanges(&in)
			}
			return capie2e.ClusterClassChangesSpecInput{
				E2EConfig:              in.E2EConfig,
				ClusterctlConfigPath:   in.ClusterctlConfigPath,
				BootstrapClusterProxy:  in.BootstrapClusterProxy,
				ArtifactFolder:         in.ArtifactFolder,
				SkipCleanup:            in.SkipCleanup,
				ControlPlaneWaiters:    upstreamWaiters(in.CommonInput, specClusterClassChanges),
				InfrastructureProvider: in.InfrastructureProvider,
				Flavor:                 deref(in.Flavor, "topology"),
				PostNamespaceCreated:   in.PostNamespaceCreated,

				ModifyControlPlaneFields:                                   in.ModifyControlPlaneFields,
				ModifyMachineDeploymentBootstrapConfigTemplateFields:       in.ModifyMachineDeploymentBootstrapConfigTemplateFields,
				ModifyMachineDeploymentInfrastructureMachineTemplateFields: in.ModifyMachineDeploymentInfrastructureMachineTemplateFields,
				ModifyMachinePoolBootstrapConfigTemplateFields:             in.ModifyMachinePoolBootstrapConfigTemplateFields,
				ModifyMachinePoolInfrastructureMachinePoolTemplateFields:   in.ModifyMachinePoolInfrastructureMachinePoolTemplateFields,
			}
		})
	})
}
