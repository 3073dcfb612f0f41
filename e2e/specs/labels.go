package specs

// Labels are the one vocabulary for filtering capd-e2e's specs, with
// Ginkgo's --label-filter (GINKGO_LABEL_FILTER in `make test-e2e`); spec
// descriptions carry no bracketed tags. Where upstream
// (sigs.k8s.io/cluster-api/test/e2e) has a label of the same meaning, it is
// upstream's, spelt as upstream spells it, so that a job filter written for
// upstream's suite selects the same kind of spec here.
//
// Each spec puts the label of what it is on its It; what depends on how a
// suite calls it (which flavor: a ClusterClass or not; whether a pull
// request must pass it) goes on the suite's Describe, as upstream's suites
// do, and only from this list:
//
//	spec                     on its It                       a suite adds
//	QuickStartSpec           quick-start                     PR-Blocking, ClusterClass,
//	                                                         ignition, IPv6
//	ClusterUpgradeSpec       K8s-Upgrade, slow               ClusterClass
//	MachineHealthCheckSpec   remediation
//	MachinePoolSpec          machine-pool
//	MachineDeploymentRolloutSpec md-rollout
//	SelfHostedSpec           self-hosted, clusterctl, slow   ClusterClass
//	RuntimeSDKSpec           runtime-sdk, K8s-Upgrade        ClusterClass
//	RuntimeSDKChainedUpgradeSpec runtime-sdk, K8s-Upgrade,   ClusterClass
//	                         chained-upgrade
//	ClusterctlUpgradeSpec    clusterctl-upgrade, clusterctl  ClusterClass
//	K8SConformanceSpec       Conformance, K8s-Install, slow
//	ClusterUpgradeConformanceSpec K8s-Upgrade, Conformance,  ClusterClass
//	                         k8s-upgrade-and-conformance, slow
//	MachineDeploymentScaleSpec md-scale
//	ClusterDeletionSpec      cluster-deletion                ClusterClass
//	ClusterClassChangesSpec  clusterclass-changes            ClusterClass
//	KCPAdoptionSpec          kcp-adoption
//	KCPInfraAdoptionSpec     kcp-infra-adoption              ClusterClass
//	NodeDrainTimeoutSpec     node-drain                      ClusterClass
//	ClusterClassRolloutSpec  clusterclass-rollout            ClusterClass
//	KCPAndMachineDeploymentRolloutSpec kcp-md-rollout
//	KCPRemediationSpec       kcp-remediation-bootstrap, remediation
//	ClusterInPlaceUpdateSpec in-place-update                 ClusterClass, in-memory
//	ScaleSpec                in-memory-scale                 ClusterClass, in-memory
//	KubeadmJoinOldNodesSpec  kubeadm-join-old-nodes          ClusterClass
//	DualStackSpec            quick-start, IPv6, dual-stack   ClusterClass
//	IPv6Spec                 quick-start, IPv6, ipv6-only
//
// capd-e2e's own suite (e2e/) puts PR-Blocking and ClusterClass on the
// quick-start with the topology flavor, as upstream's PR gate does.
//
// Examples: "PR-Blocking" runs what a pull request must pass; "!slow" leaves
// out the specs that take more than about 20 minutes here; "ClusterClass"
// runs every spec on a topology cluster; "remediation || self-hosted" runs
// those two.
const (
	// LabelPRBlocking marks the specs a pull request must pass: the fast,
	// broad signal that a change did not break cluster creation
	// (upstream's).
	LabelPRBlocking = "PR-Blocking"
	// LabelClusterClass marks specs whose cluster is of a ClusterClass
	// (spec.topology) (upstream's).
	LabelClusterClass = "ClusterClass"
	// LabelK8sUpgrade marks specs that upgrade a cluster's Kubernetes
	// version (upstream's).
	LabelK8sUpgrade = "K8s-Upgrade"
	// LabelQuickStart marks the quick-start spec.
	LabelQuickStart = "quick-start"
	// LabelRemediation marks specs in which a MachineHealthCheck replaces an
	// unhealthy Machine.
	LabelRemediation = "remediation"
	// LabelMachinePool marks specs that scale a MachinePool.
	LabelMachinePool = "machine-pool"
	// LabelMDRollout marks specs that roll out a cluster's
	// MachineDeployments.
	LabelMDRollout = "md-rollout"
	// LabelSelfHosted marks specs that move a cluster's management into
	// itself.
	LabelSelfHosted = "self-hosted"
	// LabelClusterctl marks specs that drive clusterctl beyond generating a
	// template (init, move).
	LabelClusterctl = "clusterctl"
	// LabelClusterctlUpgrade marks specs that upgrade a management
	// cluster's providers with clusterctl upgrade.
	LabelClusterctlUpgrade = "clusterctl-upgrade"
	// LabelRuntimeSDK marks specs that drive a runtime extension's hooks
	// (Cluster API's runtime SDK).
	LabelRuntimeSDK = "runtime-sdk"
	// LabelChainedUpgrade marks the spec that upgrades a cluster across
	// several minors at once, by its ClusterClass's list of versions
	// (upstream's chained upgrade, which upstream does not label).
	LabelChainedUpgrade = "chained-upgrade"
	// LabelExplore marks the spec `make up` runs: the quick-start's cluster,
	// kept running with the management cluster (capd-e2e's suite registers
	// it only when CAPD_E2E_KEEP names the environment).
	LabelExplore = "explore"
	// LabelConformance marks specs that run Kubernetes' conformance suite
	// (upstream's).
	LabelConformance = "Conformance"
	// LabelK8sInstall marks the conformance spec on a new cluster
	// (upstream's).
	LabelK8sInstall = "K8s-Install"
	// LabelUpgradeConformance marks the upgrade followed by conformance.
	LabelUpgradeConformance = "k8s-upgrade-and-conformance"
	// LabelMDScale marks the spec that scales a MachineDeployment up and
	// down (upstream's md-scale, which upstream does not label).
	LabelMDScale = "md-scale"
	// LabelClusterDeletion marks the spec that checks the order in which
	// a Cluster's objects are deleted (upstream's cluster-deletion).
	LabelClusterDeletion = "cluster-deletion"
	// LabelClusterClassChanges marks the spec that rebases a Cluster to
	// other ClusterClasses and rolls out changes of its class's templates
	// (upstream's clusterclass-changes).
	LabelClusterClassChanges = "clusterclass-changes"
	// LabelKCPAdoption marks the spec in which a KubeadmControlPlane adopts
	// a standalone control-plane Machine.
	LabelKCPAdoption = "kcp-adoption"
	// LabelKCPInfraAdoption marks the spec in which a new
	// KubeadmControlPlane adopts the machines of a Cluster whose Cluster
	// API objects were deleted (upstream's KCPInfraAdoptionSpec).
	LabelKCPInfraAdoption = "kcp-infra-adoption"
	// LabelNodeDrain marks the spec that checks the order and the blocking
	// of a Node's drain (upstream's node-drain, which upstream does not
	// label).
	LabelNodeDrain = "node-drain"
	// LabelClusterClassRollout marks the spec that propagates a
	// ClusterClass's and a Cluster topology's changes to a Cluster's
	// objects, in place and by rollouts (upstream's clusterclass-rollout).
	LabelClusterClassRollout = "clusterclass-rollout"
	// LabelKCPMDRollout marks the spec that changes a KubeadmControlPlane's
	// and a MachineDeployment's Machines in place (metadata, timeouts,
	// taints down to the Nodes) and rolls the MachineDeployment out
	// (upstream's KCPAndMachineDeploymentRolloutSpec, which upstream names
	// md-rollout and leaves unlabelled).
	LabelKCPMDRollout = "kcp-md-rollout"
	// LabelKCPRemediationBootstrap marks the spec in which a
	// KubeadmControlPlane remediates Machines while they bootstrap and
	// after (upstream's KCPRemediationSpec, which upstream names
	// kcp-remediation and leaves unlabelled).
	LabelKCPRemediationBootstrap = "kcp-remediation-bootstrap"
	// LabelInPlaceUpdate marks the spec in which a cluster's Machines are
	// updated in place, through a runtime extension, instead of replaced
	// (upstream's in-place-update).
	LabelInPlaceUpdate = "in-place-update"
	// LabelInMemoryScale marks upstream's ScaleSpec: many clusters created,
	// upgraded and deleted at once, on CAPD's in-memory backend (upstream
	// names it scale and leaves it unlabelled; here "scale" labels the
	// measurement specs of bench/e2e).
	LabelInMemoryScale = "in-memory-scale"
	// LabelInMemory marks specs whose clusters run on CAPD's in-memory
	// backend: fake machines, nothing in the container engine.
	LabelInMemory = "in-memory"
	// LabelKubeadmJoinOldNodes marks the spec in which a worker of the
	// old version joins an upgraded control plane with the new kubeadm
	// (upstream's kubeadm-join-old-nodes, which upstream leaves
	// unlabelled).
	LabelKubeadmJoinOldNodes = "kubeadm-join-old-nodes"
	// LabelIPv6 marks specs whose clusters use IPv6: the dual-stack and
	// IPv6-only quick-starts (upstream's).
	LabelIPv6 = "IPv6"
	// LabelDualStack marks the dual-stack quick-starts, which upstream
	// labels IPv6 alone: what they need (the e2e tests' conformance image)
	// is selected by it, not by IPv6, which the IPv6-only one carries too.
	LabelDualStack = "dual-stack"
	// LabelIPv6Only marks the IPv6-only quick-start (upstream's ipv6
	// flavor, which upstream labels IPv6 alone): the one spec that needs
	// a dual-stack management cluster.
	LabelIPv6Only = "ipv6-only"
	// LabelIgnition marks the quick-start whose machines are bootstrapped
	// from Ignition instead of cloud-init (upstream's ignition flavor,
	// which upstream leaves unlabelled).
	LabelIgnition = "ignition"
	// LabelSlow marks specs that take more than about 20 minutes on a CI
	// machine.
	LabelSlow = "slow"
)
