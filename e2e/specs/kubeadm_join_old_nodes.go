package specs

import (
	"cmp"
	"context"

	. "github.com/onsi/ginkgo/v2"

	capie2e "sigs.k8s.io/cluster-api/test/e2e"
)

// specKubeadmJoinOldNodes is upstream's KubeadmJoinOldNodesSpec
// (kubeadm-join-old-nodes), and its facts. Its workers mount the kubeadm
// of UPGRADE_TO, which setup copies out of that version's node image.
var specKubeadmJoinOldNodes = declare(specFacts{
	name: "kubeadm-join-old-nodes", label: LabelKubeadmJoinOldNodes,
	variables:       []string{varKubernetesVersionUpgradeFrom, varKubernetesVersionUpgradeTo},
	kubeadmBinaries: []string{varKubernetesVersionUpgradeTo},
	testExtension:   true,
	// Upstream's: the cluster (and, through upstreamWaiters, its
	// MachinePools: none), the control plane upgraded, the
	// MachineDeployment scaled out with an old worker, both workers
	// upgraded.
	waits: []string{"wait-cluster", "wait-control-plane", "wait-worker-nodes", "wait-machine-pool-nodes",
		"wait-control-plane-upgrade", "wait-worker-nodes", "wait-worker-nodes"},
	files:    []string{"kubeadm_join_old_nodes.go", "upstream.go"},
	upstream: "e2e/kubeadm_join_old_nodes.go",
})

// KubeadmJoinOldNodesSpecInput is the input of KubeadmJoinOldNodesSpec.
type KubeadmJoinOldNodesSpecInput struct {
	CommonInput
	// Flavor is the cluster template's flavor: a Cluster of a ClusterClass
	// whose patches come from the test runtime extension (which publishes
	// the variables the spec sets: files, preKubeadmCommands,
	// kubeadmConfigTemplateAnnotations), with one MachineDeployment whose
	// workers run /run/cluster-api/fetch-kubeadm.sh before kubeadm. If
	// unset, "topology-kubeadm-version" (data/): its script installs the
	// kubeadm of the control plane's version from KUBEADM_BINARIES_DIR,
	// which its workers mount, instead of downloading it.
	Flavor *string
	// ExtensionServiceNamespace and ExtensionServiceName are the runtime
	// extension's webhook Service. If unset, the test extension's.
	ExtensionServiceNamespace, ExtensionServiceName string
}

// KubeadmJoinOldNodesSpec is upstream's KubeadmJoinOldNodesSpec
// (sigs.k8s.io/cluster-api/test/e2e), called as it is in capd-e2e's
// environment (upstream.go): a Cluster of a ClusterClass at UPGRADE_FROM,
// one control-plane Machine and one worker; the control plane is upgraded
// to UPGRADE_TO while the MachineDeployment's upgrade is deferred, then
// the MachineDeployment is scaled out. Its new worker, still at
// UPGRADE_FROM, must join with the kubeadm of the control plane's
// version: the bootstrap provider renders the worker's files as templates
// with the control plane's version, and the worker's fetch-kubeadm.sh,
// rendered so, installs that kubeadm before kubeadm join. The spec reads
// the rendered script and its log in the new machine, then lets the
// deferred upgrade run and waits for both workers at UPGRADE_TO.
//
// Upstream's flavor downloads that kubeadm from dl.k8s.io at boot. Ours
// takes it from the harness's own node image of UPGRADE_TO (setup copies
// it out, checking that it reports UPGRADE_TO, and mounts it into the
// workers), so the spec runs offline and tests the kubeadm this build
// made; and the script fails the join when that kubeadm is missing or of
// another version, where upstream's spec only logs the version it finds.
//
// capd-e2e adds, through its control plane waiters: the cluster tracked
// and checked to leave nothing in the engine, and its
// cloud-controller-manager. Labelled kubeadm-join-old-nodes; a suite adds
// ClusterClass. The spec execs into the new machine with upstream's own
// Docker client (DOCKER_HOST), not capd-e2e's runtime. CleanupTimeout is
// not used and Ginkgo cannot cancel its steps (see
// MachineDeploymentScaleSpec).
func KubeadmJoinOldNodesSpec(inputGetter func() KubeadmJoinOldNodesSpecInput) {
	Context("kubeadm-join-old-nodes", Label(LabelKubeadmJoinOldNodes), func() {
		capie2e.KubeadmJoinOldNodesSpec(context.Background(), func() capie2e.KubeadmJoinOldNodesSpecInput {
			in := inputGetter()
			return capie2e.KubeadmJoinOldNodesSpecInput{
				E2EConfig:                 in.E2EConfig,
				ClusterctlConfigPath:      in.ClusterctlConfigPath,
				BootstrapClusterProxy:     in.BootstrapClusterProxy,
				ArtifactFolder:            in.ArtifactFolder,
				SkipCleanup:               in.SkipCleanup,
				ControlPlaneWaiters:       upstreamWaiters(in.CommonInput, specKubeadmJoinOldNodes),
				Flavor:                    deref(in.Flavor, "topology-kubeadm-version"),
				InfrastructureProvider:    in.InfrastructureProvider,
				PostNamespaceCreated:      in.PostNamespaceCreated,
				ExtensionServiceNamespace: cmp.Or(in.ExtensionServiceNamespace, testExtensionNamespace),
				ExtensionServiceName:      cmp.Or(in.ExtensionServiceName, testExtensionService),
			}
		})
	})
}
