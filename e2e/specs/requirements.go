package specs

import (
	"slices"

	"github.com/capd-e2e/capd-e2e/framework/suite"
)

// specNeeds is, per spec, its label and the variables it reads; the
// intervals come from its waits (timeouts.go), so the two cannot disagree.
var specNeeds = []struct {
	spec, label string
	// variables must be set; all of them but KUBETEST_CONFIGURATION are
	// Kubernetes versions, which must have a node image.
	variables []string
	// testExtension: the spec drives Cluster API's test runtime extension.
	testExtension bool
	// previousRelease: the spec upgrades from build.clusterAPI.previous.
	previousRelease bool
	// conformance: the variable at whose Kubernetes version the spec
	// runs the conformance suite.
	conformance string
}{
	{"quick-start", LabelQuickStart, []string{varKubernetesVersion}, false, false, ""},
	{"k8s-upgrade", LabelK8sUpgrade, []string{varKubernetesVersionUpgradeFrom, varKubernetesVersionUpgradeTo}, false, false, ""},
	{"md-remediation", LabelRemediation, []string{varKubernetesVersion}, false, false, ""},
	{"kcp-remediation", LabelRemediation, []string{varKubernetesVersion}, false, false, ""},
	{"machine-pool", LabelMachinePool, []string{varKubernetesVersion}, false, false, ""},
	{specMDRollout, LabelMDRollout, []string{varKubernetesVersion}, false, false, ""},
	{"self-hosted", LabelSelfHosted, []string{varKubernetesVersion}, false, false, ""},
	{"k8s-upgrade-with-runtimesdk", LabelRuntimeSDK, []string{varKubernetesVersionUpgradeFrom, varKubernetesVersionUpgradeTo}, true, false, ""},
	{specClusterctlUpgrade, LabelClusterctlUpgrade, []string{varKubernetesVersion}, false, true, ""},
	{specK8sConformance, LabelK8sInstall, []string{varKubernetesVersion, varKubetestConfiguration}, false, false, varKubernetesVersion},
	{specUpgradeConformance, LabelUpgradeConformance, []string{varKubernetesVersionUpgradeFrom, varKubernetesVersionUpgradeTo, varKubetestConfiguration}, false, false, varKubernetesVersionUpgradeTo},
}

// Requirements returns what this package's specs that carry any of labels
// (the labels of the specs a suite will run) need of the e2e config; with
// no labels, every spec's. Give it to suite.Options.Requirements so that
// setup checks the config before it creates anything.
func Requirements(labels ...string) []suite.Requirement {
	var out []suite.Requirement
	for _, n := range specNeeds {
		if len(labels) > 0 && !slices.Contains(labels, n.label) {
			continue
		}
		cleanup, ok := cleanupWaits[n.spec]
		if !ok {
			cleanup = cleanupWaits[""]
		}
		intervals := slices.Concat(specWaits[n.spec], cleanup)
		slices.Sort(intervals)
		versions := slices.DeleteFunc(slices.Clone(n.variables), func(v string) bool { return v == varKubetestConfiguration })
		var conformance []string
		if n.conformance != "" {
			conformance = []string{n.conformance}
		}
		out = append(out, suite.Requirement{
			Spec:               n.spec,
			Label:              n.label,
			Variables:          slices.Clone(n.variables),
			KubernetesVersions: versions,
			Conformance:        conformance,
			Intervals:          slices.Compact(intervals),
			TestExtension:      n.testExtension,
			PreviousRelease:    n.previousRelease,
		})
	}
	return out
}
