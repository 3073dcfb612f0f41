package specs

import (
	"context"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/cluster-api/exp/topology/desiredstate"
)

// varKubernetesVersionChainedUpgradeFrom is the version a chained upgrade
// starts from (upstream's name).
const varKubernetesVersionChainedUpgradeFrom = "KUBERNETES_VERSION_CHAINED_UPGRADE_FROM"

// varKubernetesVersionChainedUpgradeVia is the version of the minor
// between KUBERNETES_VERSION_CHAINED_UPGRADE_FROM and
// KUBERNETES_VERSION_UPGRADE_FROM in the default chain (capd-e2e's:
// upstream takes the chain from the versions kind publishes node images
// of; here every version needs a node image of this config's build, and a
// variable is what the image plan builds one for).
const varKubernetesVersionChainedUpgradeVia = "KUBERNETES_VERSION_CHAINED_UPGRADE_VIA"

// specChainedUpgrade is the chained runtime SDK spec's name and its
// facts. Its waits are those of the default chain: the control plane
// through three versions, the workers through one.
var specChainedUpgrade = declare(specFacts{
	name: "k8s-chained-upgrade-with-runtimesdk", label: LabelChainedUpgrade,
	variables:     []string{varKubernetesVersionChainedUpgradeFrom, varKubernetesVersionChainedUpgradeVia, varKubernetesVersionUpgradeFrom, varKubernetesVersionUpgradeTo},
	testExtension: true,
	waits:         runtimeSDKWaits(3, 1),
	cleanupWaits:  slices.Concat([]string{"wait-delete-cluster"}, hookWaits),
	files:         []string{"runtime_sdk_chained.go", "runtime_sdk.go", "hooks.go"},
	cleanupFiles:  []string{"hooks.go"},
})

// RuntimeSDKChainedUpgradeSpecInput is the input of
// RuntimeSDKChainedUpgradeSpec.
type RuntimeSDKChainedUpgradeSpecInput struct {
	RuntimeSDKSpecInput

	// KubernetesVersions is the chain, oldest first: at least one version
	// of every minor from KUBERNETES_VERSION_CHAINED_UPGRADE_FROM to
	// KUBERNETES_VERSION_UPGRADE_TO, both included; each needs a node
	// image. If unset, those two, KUBERNETES_VERSION_CHAINED_UPGRADE_VIA
	// and KUBERNETES_VERSION_UPGRADE_FROM.
	KubernetesVersions []string
}

// RuntimeSDKChainedUpgradeSpec is RuntimeSDKSpec across several minors in
// one upgrade, as upstream's "chained upgrades" variant of
// ClusterUpgradeWithRuntimeSDKSpec: the Cluster is created at
// KUBERNETES_VERSION_CHAINED_UPGRADE_FROM, KubernetesVersions are written
// to its ClusterClass's spec.kubernetesVersions, and its topology is set
// to KUBERNETES_VERSION_UPGRADE_TO at once. Cluster API then upgrades the
// control plane one minor at a time and the workers only as often as the
// version skew policy needs (Cluster API's own plan, computed here with
// its desiredstate package to know what to expect). Each step goes
// through its hooks, which block and are let pass one by one, and the
// Machines at each step are checked as in RuntimeSDKSpec.
//
// Spec name: "k8s-chained-upgrade-with-runtimesdk"; its intervals are
// RuntimeSDKSpec's. Its default timeout covers the default chain of four
// versions; set Timeout for a longer one.
func RuntimeSDKChainedUpgradeSpec(inputGetter func() RuntimeSDKChainedUpgradeSpecInput) {
	It("calls a runtime extension's lifecycle hooks at every step of an upgrade across several minors",
		Label(LabelRuntimeSDK, LabelK8sUpgrade, LabelChainedUpgrade),
		func(specCtx SpecContext) {
			in := inputGetter()
			r, ctx := begin(specCtx, specChainedUpgrade, in.CommonInput, in.Timeout)
			from := r.variable(varKubernetesVersionChainedUpgradeFrom)
			to := r.variable(varKubernetesVersionUpgradeTo)
			versions := in.KubernetesVersions
			if len(versions) == 0 {
				versions = slices.Compact([]string{from, r.variable(varKubernetesVersionChainedUpgradeVia), r.variable(varKubernetesVersionUpgradeFrom), to})
			}
			plan, err := chainedPlan(ctx, from, to, versions)
			Expect(err).ToNot(HaveOccurred())
			r.runtimeSDK(ctx, in.RuntimeSDKSpecInput, plan)
		})
}

// chainedPlan returns the plan by which Cluster API upgrades a cluster
// from from to to when its ClusterClass lists versions: Cluster API's own
// functions compute it, so the spec expects what the topology controller
// does. A chain that skips a minor, or does not reach from or to, is an
// error naming what is wrong.
func chainedPlan(ctx context.Context, from, to string, versions []string) (upgradePlan, error) {
	for _, v := range []string{from, to} {
		if !slices.Contains(versions, v) {
			return upgradePlan{}, fmt.Errorf("chained upgrade: the versions %v do not include %s", versions, v)
		}
	}
	cp, workers, err := desiredstate.GetUpgradePlanFromClusterClassVersions(versions)(ctx, to, from, from)
	if err != nil {
		return upgradePlan{}, fmt.Errorf("chained upgrade %s -> %s by %v: %w", from, to, versions, err)
	}
	workers, err = desiredstate.DefaultAndValidateUpgradePlans(to, from, from, cp, workers)
	if err != nil {
		return upgradePlan{}, fmt.Errorf("chained upgrade %s -> %s by %v: %w", from, to, versions, err)
	}
	if len(cp) < 2 {
		return upgradePlan{}, fmt.Errorf("chained upgrade %s -> %s by %v: the control plane's plan %v has one step; RuntimeSDKSpec covers one minor", from, to, versions, cp)
	}
	return upgradePlan{from: from, to: to, controlPlane: cp, workers: workers, classVersions: versions}, nil
}
